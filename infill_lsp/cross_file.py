"""Context from other open documents of the same language, bounded in size.

The engine takes one prefix and one suffix, so the context goes at the very start of the
prefix, as comment lines: commented out it cannot unbalance the grammar the syntax
constraint checks, and the engine drops the far left of a long prefix first, so it never
crowds out the code right before the cursor. From each other document we take its
outline (the unindented lines: imports, signatures, top-level names), newest edit first.
"""
from __future__ import annotations

from typing import Iterable

from .text import TextDocument

# Line-comment markers per LSP language id; languages missing here get no cross-file context.
LINE_COMMENT = {
    "python": "#", "ruby": "#", "shellscript": "#", "sh": "#", "bash": "#", "perl": "#", "r": "#",
    "yaml": "#", "toml": "#", "elixir": "#", "julia": "#",
    "javascript": "//", "javascriptreact": "//", "typescript": "//", "typescriptreact": "//",
    "go": "//", "rust": "//", "c": "//", "cpp": "//", "java": "//", "csharp": "//", "kotlin": "//",
    "swift": "//", "scala": "//", "dart": "//", "php": "//", "zig": "//",
    "lua": "--", "sql": "--", "haskell": "--",
}

_MAX_OUTLINE_LINE = 160  # longer lines are data, not declarations


def _outline(text: str) -> list[str]:
    lines = []
    for line in text.splitlines():
        if line and not line[0].isspace() and len(line) <= _MAX_OUTLINE_LINE:
            lines.append(line)
    return lines


def cross_file_context(current: TextDocument, others: Iterable[TextDocument], budget_chars: int) -> str:
    """A comment block with outlines of `others` that share `current`'s language, at most
    `budget_chars` long ("" when there is nothing to add or no budget)."""
    marker = LINE_COMMENT.get(current.language_id)
    if budget_chars <= 0 or marker is None:
        return ""
    pieces: list[str] = []
    used = 0
    for other in others:
        if other.language_id != current.language_id:
            continue
        header = f"{marker} Context from {other.uri.rsplit('/', 1)[-1]}:\n"
        block = [header]
        size = len(header)
        for line in _outline(other.text):
            commented = f"{marker} {line}\n"
            if used + size + len(commented) > budget_chars:
                break
            block.append(commented)
            size += len(commented)
        if len(block) == 1:  # not even one line fits: the budget is spent
            break
        pieces.extend(block)
        used += size
    return "".join(pieces) + ("\n" if pieces else "")
