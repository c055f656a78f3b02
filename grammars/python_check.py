"""CPython's own parser as a second final check for Python splices (issue 26).

tree-sitter-python accepts some code that CPython refuses: a statement indented deeper than
its block (`return x` where an `if ...:` line was removed leaves the `if`'s body at an
indentation nothing opened) parses without an error in tree-sitter, and CPython stops at it
with `IndentationError: unexpected indent`. So the final check of a Python splice also asks
CPython (parse only, never run: `compile(..., PyCF_ONLY_AST)`).

CPython reports only its first error, so the judgement compares the first error of the
window with the middle spliced in against that of the window with the hole left empty:

* no error in the splice: fine;
* an error in the splice where the empty hole parses: the middle added it, refused;
* an error on the lines the middle touches (from the cursor's line to the first line of code
  after the middle, where CPython reports a wrong indentation or a missing block; for an
  indentation error, on to the first line of code after the middle indented no deeper than
  the cursor's line, where a block the middle opened ends): refused, whatever the empty hole
  did there (an empty hole's own error must be repaired, as in the tree-sitter check);
* an error elsewhere where the empty hole has one too (the file has an error of its own, the
  window starts inside a bracket): CPython cannot judge the middle, and tree-sitter's
  verdict stands.

A window that starts inside a block (its first line indented) gets `if 1:` lines before it
that open the blocks it needs, or CPython would stop at its first line whatever the middle.

Windows bigger than MAX_WINDOW_BYTES are trimmed to the top-level statements around the
cursor (a column-0 line before the cursor's line to one after the touched lines), so that
one check stays around a few milliseconds; if that is still too big, CPython is not asked.
"""
from __future__ import annotations

import ast
import warnings
from dataclasses import dataclass
from typing import Optional

MAX_WINDOW_BYTES = 64_000  # ~20 ms to parse on a shared CPU; a 6 kB window takes ~1.5 ms


@dataclass(frozen=True)
class PythonError:
    line: int  # 1-based, in the text parsed
    message: str


def first_error(text: str) -> Optional[PythonError]:
    """CPython's first syntax error in `text`, or None if it parses."""
    try:
        with warnings.catch_warnings():
            # Invalid escapes and the like are warnings, and under `-W error` they would
            # become SyntaxErrors the file does not have.
            warnings.simplefilter("ignore")
            compile(text, "<window>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:  # IndentationError and TabError included
        return PythonError(exc.lineno or 1, exc.msg)
    except ValueError as exc:  # a NUL byte
        return PythonError(1, str(exc))
    return None


def _is_code(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


def _is_top_level(line: str) -> bool:
    """A statement's first line at column 0; not a closer there (the `)` that ends a
    multi-line `from operator import (`: cut before it, the window never closed it, and
    the true middle was refused)."""
    return _is_code(line) and not line[:1].isspace() and line[:1] not in ")]}"


def _touched_lines(lines: list[str], first: int, last: int) -> int:
    """The last line (0-based) of the touched region: the first line of code after `last`
    (where CPython reports `unexpected indent` or `expected an indented block`)."""
    for i in range(last + 1, len(lines)):
        if _is_code(lines[i]):
            return i
    return len(lines) - 1


def _trim(prefix: str, suffix: str) -> tuple[str, str]:
    """The window cut to whole top-level statements around the cursor, when it is too big."""
    if len((prefix + suffix).encode("utf-8")) <= MAX_WINDOW_BYTES:
        return prefix, suffix
    head = prefix.split("\n")
    start = 0
    for i in range(len(head) - 2, -1, -1):  # a column-0 line before the cursor's line
        if _is_top_level(head[i]):
            start = i
            break
    tail = suffix.split("\n")
    end = len(tail)
    for i in range(1, len(tail)):  # a column-0 line after the cursor's line
        if _is_top_level(tail[i]):
            end = i
            break
    return "\n".join(head[start:]), "\n".join(tail[:end])


def _block_headers(prefix: str, suffix: str) -> str:
    """`if 1:` lines that open every block a window starting inside one needs.

    A window that starts inside a class or a function (the file is one big block, or its
    first line is indented) fails CPython at its first line whatever the middle. Headers at
    each indentation below the first line's that the window dedents to (plus column 0) make
    it parse as the file would; `else`/`elif` after them still parse too."""
    before = [line for line in prefix.split("\n")[:-1] if _is_code(line)]  # not the cursor's line: the middle's
    if not before or not before[0][:1].isspace():
        return ""
    first = before[0][: len(before[0]) - len(before[0].lstrip())]
    lines = before[1:] + [line for line in suffix.split("\n") if _is_code(line)]
    levels = {""} | {line[: len(line) - len(line.lstrip())] for line in lines}
    return "".join(f"{level}if 1:\n" for level in sorted(levels, key=len) if len(level) < len(first))


def adds_python_error(prefix: str, middle: str, suffix: str) -> bool:
    """Whether CPython refuses prefix + middle + suffix for a reason the middle is to blame
    for (see the module docstring); False where CPython cannot judge."""
    prefix, suffix = _trim(prefix, suffix)
    headers = _block_headers(prefix, suffix)
    prefix = headers + prefix
    text = prefix + middle + suffix
    if len(text.encode("utf-8")) > MAX_WINDOW_BYTES:
        return False
    error = first_error(text)
    if error is None:
        return False
    first = prefix.count("\n")  # 0-based line of the cursor
    last = first + middle.count("\n")  # and of the middle's end
    lines = text.split("\n")
    touched_end = _touched_lines(lines, first, last)
    if _is_indentation_error(error):
        touched_end = max(touched_end, _dedent_line(lines, first, last))
    if first + 1 <= error.line <= touched_end + 1:
        return True
    if error.line <= first and _bracket_line(prefix) + 1 <= error.line:
        return True
    return first_error(prefix + suffix) is None


def over_indented(prefix: str, suffix: str) -> bool:
    """Whether the cursor's line is indented deeper than CPython lets any code start,
    whatever follows: with the line made `pass` at its indentation, CPython finds an
    `unexpected indent` on that very line (or, when nothing is typed on the line yet, the
    next code line's dedent then matches no outer level: a deeper block cannot bring back
    a level the line skipped), and the file without the line has no error up to there. A
    middle can only add to the line, so more indentation at most, which does not help:
    every middle is refused by the final check, and the engine answers at once
    (engine/api.py; issue 34: a llama.vim `/infill` on an over-indented line took 119
    passes to answer nothing). A line not indented enough is not such a line: the middle
    may write the rest of its indentation (engine/healing.py)."""
    line_start = prefix.rfind("\n") + 1
    line = prefix[line_start:]
    indent = line[: len(line) - len(line.lstrip(" \t"))]
    if not indent:
        return False
    typed = bool(line.strip() or suffix.split("\n", 1)[0].strip())
    newline = suffix.find("\n")
    before, after = _trim(prefix[:line_start], suffix[newline:] if newline != -1 else "")
    before = _block_headers(before + indent, after) + before
    text = before + indent + "pass" + after
    error = first_error(text)
    if error is None:
        return False
    cursor = before.count("\n") + 1  # 1-based, as CPython counts
    lines = text.split("\n")
    next_code = next((i + 1 for i in range(cursor, len(lines)) if _is_code(lines[i])), None)
    too_deep = error.line == cursor and "unexpected indent" in error.message
    skipped = not typed and error.line == next_code and "unindent does not match" in error.message
    if not (too_deep or skipped):
        return False
    blank = first_error(before + after.lstrip(" \t"))
    return blank is None or blank.line + (blank.line >= cursor) > error.line


def opens_block(prefix: str, suffix: str) -> Optional[str]:
    """Where the cursor's line must open a block: the indentation a block header there
    starts with ("" when the user typed it already), else None. So when the next line of
    code is indented deeper than anything before it opened: with the line made `pass`,
    CPython finds an `unexpected indent` on that next line, and with it made `if 1:` none
    up to there. With the cursor at a line's start the line is taken at the previous code
    line's indentation. Only blank lines: with code typed on the line the model's text
    goes on from it. The engine then tries a candidate that writes a header (engine/request.py,
    `_header_seed`): the model alone writes a plain statement there (`balance = 0` above
    an indented `return True`), which the final check refuses, and answers nothing."""
    from .lexical import blank_line

    line_start = prefix.rfind("\n") + 1
    before, after = _trim(prefix[:line_start], suffix)
    line = blank_line(before + prefix[line_start:], after, _is_code)
    if line is None:
        return None
    indent, write, end, following = line
    if indent.startswith(following[: len(following) - len(following.lstrip(" \t"))]):
        return None  # the next line of code is no deeper (a cheap look before asking CPython)
    before = _block_headers(before + indent, after) + before
    cursor = before.count("\n")  # 0-based line of the cursor
    text = before + indent + "pass" + end + after
    lines = text.split("\n")
    next_code = next((i + 1 for i in range(cursor + 1, len(lines)) if _is_code(lines[i])), None)
    plain = first_error(text)
    if next_code is None or plain is None or plain.line != next_code or "unexpected indent" not in plain.message:
        return None
    opened = first_error(before + indent + "if 1:" + end + after)
    if opened is not None and opened.line <= next_code:
        return None
    return write


def _bracket_line(prefix: str) -> int:
    """The line (0-based) of the outermost bracket open at the cursor, or the cursor's line.
    CPython reports an error in a bracketed expression at the line it starts on, above the
    middle: `[` + `x` + newline + hole for `for x in xs` + newline + `if x` + `]` gets
    `expected 'else' after 'if' expression` at the `[`'s line, and the middle `| y` was
    shown, though that line is the middle's to fix as much as its own."""
    from .lexical import open_brackets
    from .registry import get

    stack = open_brackets(get("python"), prefix)
    return prefix.count("\n", 0, stack[0][1]) if stack else prefix.count("\n")


INDENTATION_MESSAGES = ("unindent does not match", "unexpected indent", "expected an indented block")


def _is_indentation_error(error: PythonError) -> bool:
    return any(m in error.message for m in INDENTATION_MESSAGES)


def _dedent_line(lines: list[str], first: int, last: int) -> int:
    """The first line of code after the middle (0-based) indented no deeper than the
    cursor's line: where the block the middle sits in goes on. A middle that opens a
    block with its own indentation (`def f():` + a body deeper than the cursor's) makes
    CPython stop where the suffix dedents back, a few lines below the middle; as the
    cursor's line's own error (`if :`) was there before, that error was not blamed on the
    middle, and a broken file was shown (docs/ladder.md)."""
    cursor_line = lines[first]
    indent = len(cursor_line) - len(cursor_line.lstrip())
    for i in range(last + 1, len(lines)):
        line = lines[i]
        if _is_code(line) and len(line) - len(line.lstrip()) <= indent:
            return i
    return len(lines) - 1
