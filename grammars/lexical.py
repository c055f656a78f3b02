"""A small bracket and quote counter driven by the language data (no grammar needed).

Used only to break ties between otherwise equally parseable choices, for instance whether a
closing quote at the end of a middle doubles the one the suffix starts with.
"""
from __future__ import annotations

import functools
import re
from typing import Callable, NamedTuple, Optional

from .registry import LanguageSpec

CONTEXT_LINES = 30


def bracket_imbalance(spec: LanguageSpec, prefix: str, middle: str, suffix: str) -> int:
    """Unmatched or mismatched brackets plus unterminated strings around the middle.

    Only the last CONTEXT_LINES lines of the prefix and the first of the suffix are read.
    Brackets inside strings and comments do not count.
    """
    before = "\n".join(prefix.split("\n")[-CONTEXT_LINES:])
    after = "\n".join(suffix.split("\n")[:CONTEXT_LINES])
    closers = spec.closers
    stack: list[str] = []
    bad = 0
    for kind, ch in _bracket_events(spec, before + middle + after):
        if kind == "unterminated":
            bad += 1
        elif kind == "open":
            stack.append(ch)
        elif stack and stack[-1] == closers[ch]:
            stack.pop()
        else:
            bad += 1
    return bad + len(stack)


def bracket_depths(spec: LanguageSpec, text: str) -> tuple[int, int]:
    """(lowest, final) bracket depth over `text`, strings and comments skipped: a text that
    starts inside a block dips below 0, one that ends inside a block ends above 0."""
    depth = lowest = 0
    for kind, _ in _bracket_events(spec, text):
        if kind == "open":
            depth += 1
        elif kind == "close":
            depth -= 1
            lowest = min(lowest, depth)
    return lowest, depth


def open_brackets(spec: LanguageSpec, text: str) -> "list[tuple[str, int]] | None":
    """The brackets still open at the end of `text` (strings and comments skipped), as
    (opener, offset) from the outermost; None when the text is not a plain nesting there
    (a closer that does not match, or a string left open)."""
    openers, closers = spec.openers, spec.closers
    stack: list[tuple[str, int]] = []
    for kind, ch, at in _bracket_events(spec, text, offsets=True):
        if kind == "unterminated":
            return None
        if kind == "open":
            stack.append((ch, at))
        elif stack and stack[-1][0] == closers[ch]:
            stack.pop()
        else:
            return None
    return stack


def closing_offset(spec: LanguageSpec, text: str, depth: int) -> "int | None":
    """The offset in `text` of the closer that closes the last of `depth` brackets open
    before it (strings and comments skipped), or None when they stay open."""
    for kind, _, at in _bracket_events(spec, text, offsets=True):
        depth += {"open": 1, "close": -1}.get(kind, 0)
        if depth <= 0:
            return at
    return None


def open_multiline_string(spec: LanguageSpec, text: str) -> "tuple[str, int] | None":
    """(closing delimiter, offset of the opening one) of the multi-line string (Python's
    triple quotes, a backquote) that `text` ends inside, else None (strings and comments
    read as `_bracket_events` does)."""
    last = None
    for event in _bracket_events(spec, text, offsets=True):
        last = event
    if last is None or last[0] != "unterminated":
        return None
    close = dict(spec.quotes).get(last[1], last[1])
    return (close, last[2]) if len(close) > 1 or close == "`" else None


def _bracket_events(spec: LanguageSpec, text: str, offsets: bool = False):
    """("open" | "close", bracket) per bracket outside strings and comments, and
    ("unterminated", quote) per string that does not end; with `offsets`, each event's
    character offset as a third item.

    One regular expression jumps to the next place where something starts (a comment, a
    quote, a bracket), trying them in that order there, as a scan character by character
    would: a syntax window is ~6,000 characters, read three times per request, and a
    Python loop over every character took ~2.5 ms a read (a tenth of a request's time
    while typing, issue 34)."""
    scanner = _scanner(spec.line_comment or "", spec.block_comment, spec.quotes, spec.brackets)
    i, n = 0, len(text)
    while i < n:
        found = scanner.pattern.search(text, i)
        if found is None:
            return
        at, kind = found.start(), found.lastgroup
        if kind == "line":
            nl = text.find("\n", at)
            i = n if nl < 0 else nl
        elif kind == "block":
            assert spec.block_comment is not None
            close = text.find(spec.block_comment[1], found.end())
            i = n if close < 0 else close + len(spec.block_comment[1])
        elif kind == "quote":
            opener = found.group()
            i, terminated = _skip_string(text, found.end(), scanner.closes[opener])
            if not terminated:  # with offsets: where the string opened
                yield ("unterminated", opener, at) if offsets else ("unterminated", opener)
        else:
            ch = found.group()
            yield (kind, ch, at) if offsets else (kind, ch)
            i = at + 1


class _Scanner(NamedTuple):
    pattern: "re.Pattern[str]"
    closes: dict[str, str]  # a quote's opener -> its closer (the first pair listed for it)


@functools.lru_cache(maxsize=None)
def _scanner(line_comment: str, block: "tuple[str, str] | None", quotes: tuple[tuple[str, str], ...], brackets: tuple[tuple[str, str], ...]) -> _Scanner:
    """The alternatives in the order a character-by-character scan tries them at one place:
    a line comment, a block comment, the quotes (longest opener first), an opening bracket,
    a closing one (single characters only, as a scan compares one character)."""
    ordered = sorted(quotes, key=lambda pair: -len(pair[0]))
    closes: dict[str, str] = {}
    for open_, close in ordered:
        closes.setdefault(open_, close)
    openers = [o for o, _ in brackets if len(o) == 1]
    closers = [c for _, c in brackets if len(c) == 1 and c not in openers]
    parts = []
    if line_comment:
        parts.append(f"(?P<line>{re.escape(line_comment)})")
    if block:
        parts.append(f"(?P<block>{re.escape(block[0])})")
    if closes:
        parts.append("(?P<quote>" + "|".join(re.escape(q) for q in closes) + ")")
    if openers:
        parts.append("(?P<open>[" + "".join(re.escape(o) for o in openers) + "])")
    if closers:
        parts.append("(?P<close>[" + "".join(re.escape(c) for c in closers) + "])")
    return _Scanner(re.compile("|".join(parts) or "(?!)"), closes)


def _skip_string(text: str, i: int, close: str) -> tuple[int, bool]:
    """Index after the string's closing delimiter, and whether it was closed.

    A single-character quote ends at a newline (unterminated); a longer one or a backquote
    may span lines. A backslash escapes the character after it."""
    stop = _string_stop(close, len(close) > 1 or close == "`")
    n = len(text)
    while i < n:
        found = stop.search(text, i)
        if found is None:
            return n, False
        kind = found.lastgroup
        if kind == "escape":
            i = found.start() + 2
        elif kind == "close":
            return found.end(), True
        else:  # a newline ends a one-line string
            return found.start(), False
    return n, False


@functools.lru_cache(maxsize=None)
def _string_stop(close: str, multiline: bool) -> "re.Pattern[str]":
    return re.compile(r"(?P<escape>\\)|(?P<close>" + re.escape(close) + ")" + ("" if multiline else r"|(?P<newline>\n)"))


class BlankLine(NamedTuple):
    """The cursor's line when nothing but indentation stands on it (`blank_line`)."""

    indent: str  # its indentation: typed, or (the cursor at the line's start) the previous code line's
    write: str  # the part of `indent` a middle writes ("" when typed)
    end: str  # "\n" when the middle is a line of its own before code that follows the cursor
    following: str  # the next line of code below it


def blank_line(prefix: str, suffix: str, is_code: Callable[[str], bool], is_previous: Optional[Callable[[str], bool]] = None) -> Optional[BlankLine]:
    """The cursor's line, when only indentation is typed before the cursor and nothing after
    it on the line (or the cursor stands at a line's start, before the suffix's code), with
    the next line of code found by `is_code` and the previous one by `is_previous` (default
    `is_code`); None otherwise or when either is missing. What `opens_block` looks at in
    every language."""
    line_start = prefix.rfind("\n") + 1
    typed = prefix[line_start:]
    first, _, after = suffix.partition("\n")
    if typed.strip(" \t") or (typed and first.strip()):
        return None
    end = "\n" if not typed and first.strip() else ""
    following = next((line for line in (suffix if end else after).split("\n") if is_code(line)), None)
    if following is None:
        return None
    if typed:
        return BlankLine(typed, "", end, following)
    previous = next((line for line in reversed(prefix[:line_start].split("\n")) if (is_previous or is_code)(line)), None)
    if previous is None:
        return None
    indent = previous[: len(previous) - len(previous.lstrip(" \t"))]
    return BlankLine(indent, indent, end, following)
