"""Mid-line items: the cursor inside a call's brackets, the closer already in the suffix.

Editors ask for completions mid-line as often as at a line start (`read_lines(|)` after
typing the opening bracket, where the editor has inserted the closer). The line items
(lab/bench_data) put the cursor at a line start only, so a rule for this position cannot be
measured on them. `midline_items` derives such items from them: in each line whose
last opening bracket `(`, `[` or `{` has a non-empty inside and its matching closer on the
same line, the cursor goes just after the opener, the middle is the inside, and the
closer and the rest of the line join the suffix. Derived from the dev lines for tuning,
from the held-out lines for reporting, like their sources.
"""
from __future__ import annotations

from typing import Optional

PAIRS = {"(": ")", "[": "]", "{": "}"}


def _inside(line: str) -> Optional[tuple[int, int]]:
    """(start, end) of the inside of the line's last opener that closes on the line, or None.
    A line with a quote or a comment marker is skipped: a bracket inside a string or a
    comment is not code, and telling them apart needs a lexer per language."""
    if any(mark in line for mark in ("\"", "'", "`", "#", "//", "/*")):
        return None
    for start in range(len(line) - 1, -1, -1):
        opener = line[start]
        if opener not in PAIRS:
            continue
        depth = 0
        for end in range(start, len(line)):
            ch = line[end]
            if ch == opener:
                depth += 1
            elif ch == PAIRS[opener]:
                depth -= 1
                if depth == 0:
                    return (start + 1, end) if end > start + 1 else None
        return None
    return None


def midline_items(items: list[dict]) -> list[dict]:
    """Mid-line variants of single-line items (see the module docstring); items whose line
    has no such bracket are skipped."""
    out = []
    for item in items:
        line = item["middle"]
        span = _inside(line)
        if span is None:
            continue
        start, end = span
        out.append({**item, "prefix": item["prefix"] + line[:start], "middle": line[start:end], "suffix": line[end:] + item["suffix"]})
    return out


def midword_items(items: list[dict]) -> list[dict]:
    """Mid-word variants of single-line items: the cursor inside the line's first word
    (after its indentation), after half of it, as when a user types it and the editor asks
    at every key; the middle is the rest of the line. Words shorter than 4 characters are
    skipped (an editor's suggestion after one typed letter says little)."""
    out = []
    for item in items:
        line = item["middle"]
        body = line.lstrip(" \t")
        word = body[: len(body) - len(body.lstrip("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"))]
        if len(word) < 4 or word[0].isdigit():
            continue
        cut = len(line) - len(body) + len(word) // 2
        out.append({**item, "prefix": item["prefix"] + line[:cut], "middle": line[cut:]})
    return out
