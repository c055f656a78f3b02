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
    text = before + middle + after
    openers, closers = spec.openers, spec.closers
    quotes = sorted(spec.quotes, key=lambda pair: -len(pair[0]))
    line_comment = spec.line_comment
    block = spec.block_comment
    stack: list[str] = []
    bad = 0
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
            i, terminated = _skip_string(text, i + len(quote[0]), quote[1])
            bad += 0 if terminated else 1
            continue
        if ch in openers:
            stack.append(ch)
        elif ch in closers:
            if stack and stack[-1] == closers[ch]:
                stack.pop()
            else:
                bad += 1
        i += 1
    return bad + len(stack)


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
