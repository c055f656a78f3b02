"""A small bracket and quote counter driven by the language data (no grammar needed).

Used only to break ties between otherwise equally parseable choices, for instance whether a
closing quote at the end of a middle doubles the one the suffix starts with.
"""
from __future__ import annotations

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
    character offset as a third item."""
    openers, closers = spec.openers, spec.closers
    quotes = sorted(spec.quotes, key=lambda pair: -len(pair[0]))
    line_comment = spec.line_comment
    block = spec.block_comment
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if line_comment and text.startswith(line_comment, i):
            nl = text.find("\n", i)
            i = n if nl < 0 else nl
            continue
        if block and text.startswith(block[0], i):
            close = text.find(block[1], i + len(block[0]))
            i = n if close < 0 else close + len(block[1])
            continue
        quote = next((q for q in quotes if text.startswith(q[0], i)), None)
        if quote is not None:
            opened = i
            i, terminated = _skip_string(text, i + len(quote[0]), quote[1])
            if not terminated:  # with offsets: where the string opened
                yield ("unterminated", quote[0], opened) if offsets else ("unterminated", quote[0])
            continue
        if ch in openers:
            yield ("open", ch, i) if offsets else ("open", ch)
        elif ch in closers:
            yield ("close", ch, i) if offsets else ("close", ch)
        i += 1


def _skip_string(text: str, i: int, close: str) -> tuple[int, bool]:
    """Index after the string's closing delimiter, and whether it was closed.

    A single-character quote ends at a newline (unterminated); a longer one or a backquote
    may span lines.
    """
    multiline = len(close) > 1 or close == "`"
    n = len(text)
    while i < n:
        if text[i] == "\\":
            i += 2
            continue
        if text.startswith(close, i):
            return i + len(close), True
        if text[i] == "\n" and not multiline:
            return i, False
        i += 1
    return n, False
