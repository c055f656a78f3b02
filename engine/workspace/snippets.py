"""Retrieved code in the model's context: the places the workspace's drafts stand.

A draft (engine/workspace/retrieve.py) is a whole line found elsewhere in the user's
repository. Beside judging it, the model can read it where it stands: the line with the
line before and after it, as raw code at the head of the model's window (the cross-file
slot, engine/context_window.py), so the model sees which surroundings each candidate came
with. `snippet_block` is the one layout, used both by the engine (the `draft_context`
knob) and by the training recipe that teaches the model to read it
(lab/training/context_snippets.py): a model reads at run time only what it was trained on.

The shipped model was measured not to read retrieved code at all (the true line in its
window changed its answers on 1 of 167 held lines: docs/measurements/2026-12-07-near-lines.md);
the knob is off by default and is for a model trained with the recipe.
"""
from __future__ import annotations

from typing import Optional, Sequence

from engine.tokenizer import Tokenizer
from engine.workspace.index import WorkspaceIndex
from engine.workspace.retrieve import CURSOR_MARK, Draft, buffer_lines_around

SNIPPETS = 3  # the best-ranked drafts whose places are shown
MAX_SNIPPET_CHARS = 480  # a longer snippet (minified code, a data line) is not shown
SNIPPET_TOKENS = 96  # the snippets' share of the window, in tokens, as the recipe trains it


def snippet_block(snippets: Sequence[Sequence[str]]) -> str:
    """The text of the cross-file slot for `snippets` (each the lines of one place, as
    they stand, indentation kept): each snippet's lines, then a blank line."""
    return "".join("\n".join(lines) + "\n\n" for lines in snippets if lines)


def with_neighbours(lines: Sequence[str], i: int) -> list[str]:
    """Line i with the nearest non-blank line before and after it, as they stand (what
    the index's `lines_around(file, line, 1)` gives for an indexed file)."""
    before = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), None)
    after = next((lines[j] for j in range(i + 1, len(lines)) if lines[j].strip()), None)
    return [x for x in (before, lines[i], after) if x is not None]


def place_lines(index: Optional[WorkspaceIndex], place: tuple[str, int, int], buffer: str) -> list[str]:
    """The lines around a draft's place (retrieve.py `Draft.places`): the place's line with
    its non-blank neighbours. A place in the request's own buffer (number 0) is read from
    `buffer`; one in another open buffer is not shown. [] when the place is gone."""
    kind, where, at = place
    if kind == "buffer":
        if where != 0 or not 0 <= at <= len(buffer):
            return []
        before, line, after = buffer_lines_around(buffer, at, 1)
        return [*before, line, *after]
    if index is None:
        return []
    return index.lines_around(where, at, 1)


def draft_snippets(drafts: Sequence[Draft], index: Optional[WorkspaceIndex], buffer: str, count: int = SNIPPETS) -> list[list[str]]:
    """The places of the `count` best-ranked drafts, one snippet each (its strongest
    place). `buffer` is the request's text as the drafts were found in it: prefix,
    retrieve.CURSOR_MARK, suffix (the mark is dropped from what is shown)."""
    snippets: list[list[str]] = []
    for draft in drafts:
        if not draft.places:
            continue
        lines = [line.replace(CURSOR_MARK, "") for line in place_lines(index, draft.places[0], buffer)]
        if lines and sum(len(x) for x in lines) <= MAX_SNIPPET_CHARS:
            snippets.append(lines)
        if len(snippets) == count:
            break
    return snippets


def draft_context(drafts: Sequence[Draft], index: Optional[WorkspaceIndex], prefix: str, suffix: str, tokenizer: Optional[Tokenizer] = None) -> str:
    """The cross-file text the `draft_context` knob puts before the prefix: the best
    drafts' places (`draft_snippets`) in the `snippet_block` layout, cut to SNIPPET_TOKENS
    tokens when a tokenizer is given ("" when none)."""
    text = snippet_block(draft_snippets(drafts, index, prefix + CURSOR_MARK + suffix))
    if tokenizer is not None and text:
        ids = tokenizer.encode(text)
        if len(ids) > SNIPPET_TOKENS:
            text = tokenizer.decode(ids[:SNIPPET_TOKENS])
    return text
