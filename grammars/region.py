"""The block around the cursor, judged on its own: the final check in a file broken
elsewhere.

In a file with syntax errors of its own away from the cursor (other lines half written or
lost: the real-lines benchmark blanks every sampled line of a file at once), tree-sitter's
error recovery reaches across the cursor: an ERROR node from a broken dict literal 300
lines up ends inside the middle, so every middle, the true line too, adds an error, and
a broken one can pass (`lambda a, b: None,` with its list never closed). On the tuning
packages' real lines (toolz, marshmallow, semver, knex; 400 lines, workspace mode) the
final check refused the true line itself on 73.

`clean_block` finds the innermost block around the cursor whose text has no error of its
own: the lines from the nearest header above the cursor that is indented less than its
line (a Python compound statement or a line ending with an opening bracket; in
JavaScript a line ending with `{`, `(` or `[`) to the end of that block (the first line
indented no deeper than the header, a closer at the header's indentation included,
`} else {` / `elif` going on), then the hole's own construct (its line and the deeper
lines below it), each wrapped where it is indented so it parses alone (in a class where
the line above opens one, else in a function). grammars/constraint.py lets that block
judge the splice (with the cursor at column 0 a middle that brings its indentation is
judged from after it; one that does not gets the block as a second hearing). The block keeps its own brackets and indentation,
so a middle that breaks it (`if x:` + a body it cannot hold, a stray `}`) is refused;
what it cannot see is the rest of the file, which was broken already (docs/grammars.md,
"Judged in its block").
"""
from __future__ import annotations

import re
from typing import Callable, Iterator, NamedTuple, Optional

from .window import Window, indent_width

MAX_LEVELS = 6  # blocks tried, innermost first
_PY_HEADER = re.compile(
    r"^\s*(async\s+def|def|class|if|elif|else|for|while|with|try|except|finally|match|case|async\s+for|async\s+with)\b.*:\s*(#.*)?$"
)
_PY_GOES_ON = re.compile(r"^\s*(elif|else|except|finally|case)\b")
_OPENERS = ("(", "[", "{")
_CLOSERS = (")", "]", "}")


class Block(NamedTuple):
    """A region around the cursor: its lines before the cursor (`prefix`, from its header
    line) and after it (`suffix`, to its end), the header's indentation, and the line above
    the header that holds it (`parent`, "" at the top)."""

    indent: int
    prefix: str
    suffix: str
    parent: str


def _is_header(language: str, line: str) -> bool:
    text = line.rstrip()
    if language == "python":
        return bool(_PY_HEADER.match(text)) or text.endswith(_OPENERS)
    stripped = text.lstrip()
    return text.endswith(_OPENERS) and not stripped.startswith(("//", "/*", "*"))


def _block_end(language: str, after: list[str], header_indent: int) -> int:
    """How many of the suffix's lines (its first is the rest of the cursor's line) belong
    to the block whose header is indented `header_indent`."""
    j = 1
    while j < len(after):
        line = after[j]
        if not line.strip():
            j += 1
            continue
        indent = indent_width(line)
        if indent < header_indent:
            return j
        if indent == header_indent:
            text = line.strip()
            if text.startswith(_CLOSERS):
                if text.endswith(_OPENERS + (":",)):  # `) -> int:`, `} else {`: the construct goes on
                    j += 1
                    continue
                return j + 1
            if language == "python" and _PY_GOES_ON.match(line):
                j += 1
                continue
            return j
        j += 1
    return len(after)


def _parent(lines: list[str], below: int, indent: int) -> str:
    """The nearest line above `lines[below]` indented less than `indent` ("" if none)."""
    for line in reversed(lines[:below]):
        if line.strip() and indent_width(line) < indent:
            return line
    return ""


def blocks(language: str, prefix: str, suffix: str, levels: int = MAX_LEVELS) -> Iterator[Block]:
    """The blocks around the cursor, innermost first, then the hole's own construct."""
    before = prefix.split("\n")
    after = suffix.split("\n")
    level = indent_width(before[-1])
    found = 0
    for i in range(len(before) - 2, -1, -1):
        line = before[i]
        if not line.strip():
            continue
        indent = indent_width(line)
        if indent >= level:
            continue
        level = indent
        if _is_header(language, line):
            yield Block(indent, "\n".join(before[i:]), "\n".join(after[: _block_end(language, after, indent)]), _parent(before, i, indent))
            found += 1
            if found >= levels:
                return
        if indent == 0:
            break
    # Last, the hole's own construct: the cursor's line with the deeper lines below it and
    # their closer (a method whose header line is the hole, in a class broken elsewhere).
    indent = indent_width(before[-1])
    own_end = _block_end(language, after, indent)
    if any(indent_width(line) > indent for line in after[1:own_end] if line.strip()):
        yield Block(indent, before[-1], "\n".join(after[:own_end]), _parent(before, len(before) - 1, indent))


def _wrapped(language: str, block: Block) -> tuple[str, str]:
    """The block's text inside what makes it parse alone where it is indented: a class
    where its parent line opens one (a method), else a function (statements)."""
    if block.indent == 0:
        return block.prefix, block.suffix
    in_class = re.match(r"^\s*(export\s+)?(default\s+)?class\b", block.parent) is not None
    if language == "python":
        if in_class:
            return "class _C:\n" + block.prefix, block.suffix
        awaits = "await" in block.prefix + block.suffix or "async " in block.prefix + block.suffix
        return ("async def _f():\n" if awaits else "def _f():\n") + block.prefix, block.suffix
    opener = "class _C {\n" if in_class else "async function* _f() {\n"
    return opener + block.prefix, block.suffix + "\n\n}\n"


def clean_block(language: str, prefix: str, suffix: str,
                window_of: Callable[[str, str], Window]) -> Optional[tuple[str, str]]:
    """(prefix, suffix) of the innermost block around the cursor, wrapped, that parses
    with no error but the hole's; None when no block does. It depends on the text around
    the cursor only, not on a middle: the caller keeps it with the request's window.
    `window_of(prefix, suffix)` builds (or recalls) a window."""
    for block in blocks(language, prefix, suffix):
        wrapped_prefix, wrapped_suffix = _wrapped(language, block)
        window = window_of(wrapped_prefix, wrapped_suffix)
        if not any(e not in window.cursor_errors for e in window.baseline):
            return wrapped_prefix, wrapped_suffix
    return None
