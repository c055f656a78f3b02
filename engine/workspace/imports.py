"""Import lines and the names they bind: how a request finds the import its file lacks.

A file that calls `parse(...)` or `toArray(...)` without binding the name needs the line
that binds it, and that line usually stands, as is, in another file of the same project
(`const toArray = require('lodash/toArray');`, `from collections.abc import Mapping,
Sequence`). Neighbour lookups cannot find it (the lines around an import are other
imports, in another order in every file), so the index keeps each top-level import line
under every name it binds (`WorkspaceIndex.binders`), and when the cursor stands among a
file's imports, retrieval asks for the import lines binding the names the file uses but
binds nowhere (engine/workspace/retrieve.py `_binders`).

Python (`import a.b as c`, `from m import a, b as c`) and the JavaScript family
(`const x = require('m')`, `const { a, b: c } = require('m')`, `import x, { a as b } from
'm'`, `import * as x from 'm'`) are read; other languages bind nothing here.
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Optional

import grammars

# The import syntax of each grammar's language (grammars/ names it by the file's extension).
FAMILIES = {"python": "python", "javascript": "js", "typescript": "js", "tsx": "js"}
_IDENT = r"[A-Za-z_$][\w$]*"
_PY_IMPORT = re.compile(r"^import\s+(.+)$")
_PY_FROM = re.compile(r"^from\s+\.*[\w.]*\s+import\s+\(?(.+?)\)?\s*$")
_JS_REQUIRE = re.compile(r"^(?:const|let|var)\s+(.+?)\s*=\s*require\(\s*['\"][^'\"]+['\"]\s*\)")
_JS_IMPORT = re.compile(r"^import\s+(?:type\s+)?(.+?)\s+from\s+['\"][^'\"]+['\"]")
_AS = re.compile(rf"^({_IDENT}(?:\.{_IDENT})*)(?:\s+as\s+({_IDENT}))?$")
_NAME = re.compile(_IDENT)
_USE = re.compile(rf"(?<![\w$.]){_IDENT}")  # a name not after a dot (an attribute is no use of an import)
# Top-level lines that bind a name in the file itself (its own definitions are not imports
# it lacks): `def f`, `class C`, `x = ...`, `const f = ...`, `function f`, `export class C`.
_PY_DEFINES = re.compile(rf"^(?:async\s+def|def|class)\s+({_IDENT})|^({_IDENT})\s*(?::[^=]*)?=[^=]")
_JS_DEFINES = re.compile(rf"^(?:export\s+(?:default\s+)?)?(?:async\s+)?(?:function\*?|class|const|let|var)\s+({_IDENT})")
# The top-level lines that may bind a name, found in a whole file at C speed.
_PY_TOP = re.compile(r"^(?:import|from|def|class|async|[A-Za-z_]\w*\s*(?::[^=\n]*)?=)[^\n]*", re.M)
_JS_TOP = re.compile(r"^(?:import|const|let|var|function|class|export|async)\b[^\n]*", re.M)
_IMPORT_LINE = re.compile(r"^(?:import|from)\b[^\n]*|^(?:const|let|var)\b[^\n]*=\s*require\([^\n]*", re.M)  # not uses
# Imports spread over lines: `from m import (\n    a,\n    b,\n)`, `const {\n  a,\n} = require('m')`.
_PY_BLOCK = re.compile(r"^from\s+[.\w]+\s+import\s*\(([^)]*)\)", re.M)
_JS_BLOCK = re.compile(r"^(?:import|const|let|var)\s*\{([^}]*)\}\s*(?:from\b|=\s*require\()[^\n]*", re.M)
USES_CHARS = 16_000  # of the suffix, read for the names a file uses
SCAN_LINES = 2_000  # lines above the cursor read to tell whether it stands among the imports
_COMMENT = re.compile(r"^(?:#|//|/\*|\*|\"\"\"|'''|['\"]use strict['\"])")
_KEYWORDS = frozenset("""and as assert async await break case catch class const continue def default del delete do elif else except export
extends false finally for from function global if import in instanceof is lambda let new nonlocal none not null or pass raise require
return self static super switch this throw true try typeof undefined var void while with yield None True False""".split())


def family(path: str) -> Optional[str]:
    """The import syntax a file's name says it uses ("python", "js"), or None."""
    language = grammars.language_for_path(path)
    return FAMILIES.get(language) if language is not None else None


def bound_names(stripped: str, family: Optional[str]) -> tuple[str, ...]:
    """The names a top-level import line binds in its file (empty: not an import line, or
    `from m import *`, or a family not read)."""
    if family == "python":
        if (found := _PY_FROM.match(stripped)) is not None:
            return _python_names(found.group(1), whole_module=False)
        if (found := _PY_IMPORT.match(stripped)) is not None:
            return _python_names(found.group(1), whole_module=True)
    elif family == "js":
        if (found := _JS_REQUIRE.match(stripped)) is not None:
            return _js_names(found.group(1), ":")
        if (found := _JS_IMPORT.match(stripped)) is not None:
            return _js_names(found.group(1), "as")
    return ()


def _python_names(listed: str, whole_module: bool) -> tuple[str, ...]:
    names = []
    for part in listed.split(","):
        found = _AS.match(part.strip())
        if found is None:
            continue
        module, alias = found.groups()
        names.append(alias or (module.split(".")[0] if whole_module else module))
    return tuple(name for name in names if "." not in name)


def _js_names(lhs: str, rename: str) -> tuple[str, ...]:
    """`x`, `{ a, b: c }` (require) or `x, { a as b }`, `* as x` (import) -> the names bound."""
    names = []
    for part in re.split(r"[,{}]", lhs):
        part = part.strip()
        if not part:
            continue
        if part.startswith("*"):
            part = part.split("as")[-1].strip()
        elif rename == ":" and ":" in part:
            part = part.split(":")[-1].strip()
        elif rename == "as" and re.search(r"\sas\s", part):
            part = re.split(r"\sas\s", part)[-1].strip()
        if part.startswith("type "):
            part = part[5:].strip()
        if _NAME.fullmatch(part):
            names.append(part)
    return tuple(names)


_MODULE = re.compile(r"""require\(\s*['"]([^'"]+)['"]|from\s+['"]([^'"]+)['"]|^from\s+(\.*[\w.]*)\s+import|^import\s+([\w.]+)\s*(?:$|,|as\s)""")


def imports_itself(stripped: str, path: str) -> bool:
    """Whether an import line names the module of the file at `path` itself (`require('./
    subprotocol')` in subprotocol.js, `from .fields import Field` in fields.py): a file never
    needs to import itself."""
    found = _MODULE.search(stripped)
    if found is None:
        return False
    module = next(part for part in found.groups() if part is not None)
    if "/" in module:  # a path: its last part, the extension dropped
        last = module.rstrip("/").split("/")[-1].split(".")[0]
    else:  # a dotted module: its last name
        last = module.split(".")[-1]
    stem = re.split(r"[/\\]", path)[-1].split(".")[0]
    return bool(last) and last == stem


def is_import(stripped: str, family: Optional[str]) -> bool:
    return bool(bound_names(stripped, family)) or (family == "python" and stripped.startswith(("import ", "from "))) \
        or (family == "js" and stripped.startswith("import "))


def among_imports(prefix: str, after: tuple[str, ...], family: Optional[str]) -> bool:
    """Whether the cursor's line stands where a file keeps its imports: the next non-blank
    line is an import, or every line above it is an import, a comment, a docstring or
    "use strict" (what a file starts with). `prefix` ends with the cursor's line, which is
    not read; the scan stops at the first line that is none of those."""
    if family is None:
        return False
    if after and is_import(after[0], family):
        return True
    start, end = 0, prefix.rfind("\n")
    in_docstring = False
    for _ in range(SCAN_LINES):  # a file whose first SCAN_LINES lines are all imports is at its imports still
        if start > end:
            break
        stop = prefix.find("\n", start)
        line = prefix[start:stop].strip()
        start = stop + 1
        quotes = line.count('"""') + line.count("'''")
        if in_docstring or quotes:
            in_docstring ^= quotes % 2 == 1
            continue
        if line and not (is_import(line, family) or _COMMENT.match(line) or line.endswith("*/")):
            return False
    return not in_docstring


def lacking(prefix: str, suffix: str, family: str, limit: int) -> Counter:
    """The names the file uses (how often; an attribute after a dot is no use of a name)
    that none of its own import lines and none of its top-level definitions bind, keywords
    left out: at most `limit`, commonest first. Uses are counted in the prefix and the
    first USES_CHARS of the suffix (a 300 kB file's every name cost 15 ms a request);
    imports and definitions are found in the whole file, by multi-line patterns."""
    head = prefix[: prefix.rfind("\n") + 1]  # the cursor's own line, being written, is no use
    text = head + suffix
    bound: set[str] = set()
    for found in (_PY_TOP if family == "python" else _JS_TOP).finditer(text):
        stripped = found.group(0).strip()
        names = bound_names(stripped, family)
        if names:
            bound.update(names)
        elif (defined := (_PY_DEFINES if family == "python" else _JS_DEFINES).match(stripped)) is not None:
            bound.add(next(name for name in defined.groups() if name))
    blocks = _PY_BLOCK if family == "python" else _JS_BLOCK
    for found in blocks.finditer(text):
        block = " ".join(found.group(1).split())
        bound.update(_python_names(block, whole_module=False) if family == "python" else _js_names(block, ":" if "require" in found.group(0) else "as"))
    used = Counter(_USE.findall(_IMPORT_LINE.sub("", blocks.sub("", text[: len(head) + USES_CHARS]))))
    for name in bound | (_KEYWORDS & used.keys()):
        used.pop(name, None)
    return Counter(dict(used.most_common(limit)))
