"""Notice when the model directory a server loaded from disappears or is replaced.

The weights are copied into memory at load (safetensors' `load_file`; nothing stays
memory-mapped), so a running server keeps working when its directory is deleted,
truncated or overwritten (tests/test_faults.py does all three). What it must do is say
so: the model it serves is no longer the one on disk, and a restart or a reload would
load something else, or nothing. `ModelDirWatch.check()` is cheap (a few `stat` calls,
at most every `interval_s`) and returns a one-line message once per change.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional


@dataclass(frozen=True)
class DirState:
    """What identifies a directory's files: name, size, modification time, inode."""

    files: tuple[tuple[str, int, int, int], ...]


def dir_state(model_dir: Path) -> Optional[DirState]:
    """The state of `model_dir`'s files (not recursive); None when it is gone."""
    try:
        entries = sorted(os.scandir(model_dir), key=lambda entry: entry.name)
        files = []
        for entry in entries:
            if entry.is_file():
                stat = entry.stat()
                files.append((entry.name, stat.st_size, stat.st_mtime_ns, stat.st_ino))
        return DirState(tuple(files))
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return None


def describe_change(model_dir: Path, before: DirState, now: Optional[DirState]) -> Optional[str]:
    """One line saying what happened to `model_dir` since `before` (None: nothing)."""
    if now is None:
        return f"the model directory {model_dir} disappeared while in use; the model loaded from it keeps serving"
    if now == before:
        return None
    old = {name: rest for name, *rest in before.files}
    new = {name: rest for name, *rest in now.files}
    changed = sorted(name for name in old.keys() | new.keys() if old.get(name) != new.get(name))
    shown = ", ".join(changed[:4]) + (" …" if len(changed) > 4 else "")
    return (f"the model directory {model_dir} changed while in use ({shown}); the model loaded before keeps "
            "serving until it is loaded again")


class ModelDirWatch:
    def __init__(self, model_dir: Optional[Path], interval_s: float = 5.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.model_dir = Path(model_dir) if model_dir is not None else None
        self.interval_s = interval_s
        self.clock = clock
        self._state = dir_state(self.model_dir) if self.model_dir is not None else None
        self._checked = clock()

    def check(self) -> Optional[str]:
        """A message when the directory changed since the last report (at most every
        `interval_s`), else None."""
        if self.model_dir is None or self._state is None:
            return None
        now = self.clock()
        if now - self._checked < self.interval_s:
            return None
        self._checked = now
        state = dir_state(self.model_dir)
        current = state if state is not None else DirState(())  # gone: reported once, not on every check
        if current == self._state:
            return None
        message = describe_change(self.model_dir, self._state, state)
        self._state = current
        return message
