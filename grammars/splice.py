"""Judging a finished splice: which syntax errors it adds in the region it touches."""
from __future__ import annotations

from .syntax import SyntaxErrorSpan, minimal_errors
from .window import Window


def _located(errors: list[SyntaxErrorSpan], cut: int, after: int, total: int) -> set[tuple]:
    """Error identities: prefix-side by offset, suffix-side by distance from the end."""
    keys: set[tuple] = set()
    for e in errors:
        if e.end <= cut:
            keys.add(("prefix", e.start, e.end, e.missing))
        elif e.start >= after:
            keys.add(("suffix", total - e.start, total - e.end, e.missing))
        else:
            keys.add(("middle", e.start, e.end, e.missing))
    return keys


def splice_error_balance(window: Window, middle: str, strict: bool = False) -> int:
    """How many more touched errors the splice has than the file had (<= 0 is acceptable).

    `strict`: the baseline's errors at the cursor (the empty hole itself, `while :`) count
    as errors the splice must have removed, so <= 0 means the hole is really filled."""
    middle_b = middle.encode("utf-8")
    text = window.prefix + middle_b + window.suffix
    after_errors = minimal_errors(window.final_parser.parse(text).root_node)
    cursor = window.cursor
    base_total = cursor + len(window.suffix)
    before = _located(
        [e for e in window.baseline if e not in window.cursor_errors], cursor, cursor, base_total
    )
    after = _located(after_errors, cursor, cursor + len(middle_b), len(text))
    base_all = before if strict else _located(window.baseline, cursor, cursor, base_total)
    added = {key for key in after if key not in base_all or key[0] == "middle"}
    removed = {key for key in before if key not in after}
    return len(added) - len(removed)
