"""How Node loads a workspace's JavaScript: the "type" of each file's nearest package.json.

Node loads a `.js` file as an ES module when the nearest package.json above it says
`"type": "module"`, and as CommonJS when it says `"commonjs"`; the syntax constraint
judges a top-level `return` or `await` by that (grammars/early_errors.py). The workspace
index answers it because it already reads the user's folder: only package.json files inside
the index's root are read (a file named outside it, or a package.json that is a link
leading out of it, answers None), each at most once per change (its size and modification
time are compared at every ask, a stat per folder up to the root).
"""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Optional

MAX_PACKAGE_BYTES = 1 << 20  # a package.json larger than this is not read (None)
MAX_REMEMBERED = 4096  # package.json answers kept (all forgotten when full)


class PackageTypes:
    """The nearest package.json's "type" for files under one root, remembered per folder."""

    def __init__(self, root: Path) -> None:
        self.root = Path(os.path.realpath(root))
        self._lock = threading.Lock()
        self._seen: dict[str, tuple[int, int, Optional[str]]] = {}  # package.json path -> (mtime_ns, size, type)

    def type_of(self, path: Path | str) -> Optional[str]:
        """The "type" string of the package.json nearest above `path` (a file under the
        root, absolute or relative to it), None where that package.json has none, where
        there is none up to the root, or where `path` is outside the root."""
        path = Path(path)
        full = os.path.realpath(path if path.is_absolute() else self.root / path)
        if not _inside(full, self.root):
            return None
        folder = Path(full).parent
        while True:
            found, kind = self._package_type(folder / "package.json")
            if found or folder == self.root:
                return kind
            folder = folder.parent

    def _package_type(self, candidate: Path) -> tuple[bool, Optional[str]]:
        """(whether `candidate` is a package.json inside the root, its "type" if a string)."""
        try:
            st = candidate.stat()
        except OSError:
            return False, None
        if not _inside(os.path.realpath(candidate), self.root):
            return True, None  # a link out of the workspace: not read, and it still decides
        key = str(candidate)
        with self._lock:
            known = self._seen.get(key)
        if known is not None and known[:2] == (st.st_mtime_ns, st.st_size):
            return True, known[2]
        kind = _read_type(candidate, st.st_size)
        with self._lock:
            if len(self._seen) >= MAX_REMEMBERED:
                self._seen.clear()
            self._seen[key] = (st.st_mtime_ns, st.st_size, kind)
        return True, kind


def _inside(real: str, root: Path) -> bool:
    """Whether a resolved path lies strictly below `root`."""
    relative = os.path.relpath(real, root)
    return relative != os.curdir and relative != os.pardir and not relative.startswith(os.pardir + os.sep)


def _read_type(path: Path, size: int) -> Optional[str]:
    """A package.json's "type", or None (absent, not a string, a file too big or unreadable,
    not JSON: Node refuses such a package, and the text decides here instead)."""
    if size > MAX_PACKAGE_BYTES:
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    kind = data.get("type") if isinstance(data, dict) else None
    return kind if isinstance(kind, str) else None
