"""The context window: which text around the cursor the model sees. Decided here, once.

Front ends hand the engine everything they have — the whole text before and after the
cursor, and context from other files — and `context_window` cuts it to what the model
was trained on (`SamplerSettings.context_tokens` / `suffix_tokens`, set from the model
directory's training recipe by `engine.load`). Cross-file context gets a budget *inside*
the prefix window (`cross_file_share` of it, at most): it goes first, as the front end
wrote it (comment lines), and the code right before the cursor fills the rest, so
neither crowds the other out. Before this, the language server kept 16,000 characters of
prefix after its cross-file block and the engine kept the last ~870 of them: cross-file
context reached the model only when the local prefix was short.

Windows are cut in characters first (a tokenizer call on a megabyte costs time) with a
measured chars-per-token budget, at line boundaries, then in tokens by the engine.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

CHARS_PER_TOKEN_BUDGET = 3.4  # measured on the corpus's validation split (chars per token)
CUT_GRID = 256  # the prefix window's left edge moves in steps of this many chars (cache reuse)


@dataclass(frozen=True)
class ContextWindow:
    """The texts the model sees: `cross_file` then `prefix` before the canvas, `suffix` after."""

    prefix: str  # the tail of the text before the cursor
    suffix: str  # the head of the text after the cursor
    cross_file: str = ""  # the part of the cross-file context that fits its budget


def prefix_tail(prefix: str, max_tokens: int) -> str:
    """The tail of the prefix worth `max_tokens` tokens, cut at a line start.

    The cut moves in steps of CUT_GRID chars, so while the user types the window's left
    edge stays put and the cached keys/values of the prefix stay valid."""
    budget = int(max_tokens * CHARS_PER_TOKEN_BUDGET)
    if len(prefix) <= budget:
        return prefix
    target = len(prefix) - budget
    target = (target // CUT_GRID + 1) * CUT_GRID
    line_start = prefix.find("\n", target)
    return prefix[line_start + 1 :] if line_start != -1 else prefix[target:]


def suffix_head(suffix: str, max_tokens: int) -> str:
    """The head of the suffix worth `max_tokens` tokens, cut after a line end."""
    budget = int(max_tokens * CHARS_PER_TOKEN_BUDGET)
    if len(suffix) <= budget:
        return suffix
    line_end = suffix.rfind("\n", 0, budget)
    return suffix[: line_end + 1] if line_end > 0 else suffix[:budget]


def cross_file_head(context: str, max_tokens: int) -> str:
    """The first whole lines of cross-file context worth at most `max_tokens` tokens
    (the front end puts the most relevant first)."""
    budget = int(max_tokens * CHARS_PER_TOKEN_BUDGET)
    if len(context) <= budget:
        return context
    line_end = context.rfind("\n", 0, budget)
    return context[: line_end + 1] if line_end != -1 else ""


def context_window(prefix: str, suffix: str, *, prefix_tokens: int, suffix_tokens: int, cross_file: str = "", cross_file_share: float = 0.0) -> ContextWindow:
    """The window for one request (module docstring). Without cross-file context the
    prefix window is the whole `prefix_tokens` budget."""
    cross = cross_file_head(cross_file, int(prefix_tokens * cross_file_share)) if cross_file else ""
    local_tokens = prefix_tokens - cross_file_tokens(cross)
    return ContextWindow(prefix_tail(prefix, local_tokens), suffix_head(suffix, suffix_tokens), cross)


def cross_file_tokens(cross: str) -> int:
    """The part of the prefix budget (in tokens) that `cross` uses up."""
    return math.ceil(len(cross) / CHARS_PER_TOKEN_BUDGET)
