"""Retrieve-then-edit training examples: the canvas starts from a near line of the same file.

At run time the workspace index offers lines of the user's repository that look like the
one at the cursor (engine/workspace). A line it holds verbatim is a draft the model
verifies; a line a name or a character away (`except TypeError as exc:` where
`except TypeError as e:` stands) is a start the model should edit into the line that
fits. The shipped model was never taught that: measured on the tuning packages
(docs/measurements/2026-12-07-near-lines.md) it edits such a start right 0 times in 91,
and its best guess keeps only 41% of the clean canvas tokens that are already right,
since clean canvas rows carried a loss weight of 0.1 in its recipe.

An example here is a whole line of a corpus file with the cursor after its indentation
(the editor's cursor), the true line as the target, and a *noisy canvas* that starts
from the most similar other line within `WINDOW` lines of it in the same file (the
retrieval's near-cursor candidates, engine/workspace), as tokens:

    input  = indentation + near line + newline, then masks to the canvas length
             (engine/near_edit.py `edit_canvas_length`, the run-time canvas)
    target = indentation + true line + newline, then end-of-middle tokens

so positions that agree teach keeping (weight `KEEP_WEIGHT`, well above the plain
recipe's 0.1), positions that differ teach the edit (weight 1), and the masks after
the line teach ending it there. Only pairs of the same token count are used
(substitutions): trained with position-aligned targets of other lengths too, the model
learned to shift tokens and rewrote right ones with their neighbours'. Pairs whose near
line is the true line itself (the same line stands elsewhere in the window) teach keeping
a right start unchanged.

Never benchmark data: the pairs are mined from the corpus files alone.
"""
from __future__ import annotations

import math
import random
from collections import Counter
from typing import Optional

from lab.training.data import KEEP_WEIGHT, DataConfig, Example  # noqa: F401  (KEEP_WEIGHT: the weight this recipe's starts get)
from engine.near_edit import edit_canvas_length
from engine.tokenizer import Tokenizer

WINDOW = 150  # lines either side searched for the near line (retrieval favours near-cursor lines too)
MIN_SIMILARITY = 0.5  # a start less alike than this is no edit: the example falls back to plain infilling
MIN_CHARS, MAX_CHARS = 6, 160  # stripped target lengths used
MAX_TRIES = 8  # target lines tried per file before falling back


def distance(a: str, b: str, bound: Optional[int] = None) -> int:
    """Levenshtein distance (insertions, deletions, substitutions, each 1). With `bound`,
    any distance over it may be returned as bound + 1 (a row whose minimum passes it stops)."""
    if len(a) < len(b):
        a, b = b, a
    if bound is not None and len(a) - len(b) > bound:
        return bound + 1
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        if bound is not None and min(current) > bound:
            return bound + 1
        previous = current
    return previous[-1]


def nearest_line(lines: list[str], index: int, window: int = WINDOW, floor: float = MIN_SIMILARITY) -> Optional[tuple[float, int]]:
    """(similarity, line index) of the stripped line most like lines[index] within the
    window (1 - Levenshtein distance / the longer length), or None below `floor`. Ties go
    to the closer line, as the retrieval's near-cursor rank does."""
    target = lines[index].strip()
    n = len(target)
    mine = Counter(target)
    best: Optional[tuple[float, int]] = None
    best_sim = floor - 1e-9
    lo, hi = max(0, index - window), min(len(lines), index + window + 1)
    order = sorted((j for j in range(lo, hi) if j != index), key=lambda j: abs(j - index))
    for j in order:
        other = lines[j].strip()
        m = len(other)
        if not other or m < n * floor or n < m * floor:
            continue
        longest = max(n, m)
        bound = math.floor(longest * (1 - best_sim) + 1e-9)
        if other == target:
            return 1.0, j
        theirs = Counter(other)
        if max(sum((mine - theirs).values()), sum((theirs - mine).values())) > bound:
            continue
        d = distance(target, other, bound)
        if d > bound:
            continue
        sim = 1.0 - d / longest
        if sim > best_sim:
            best, best_sim = (sim, j), sim
    return best


def target_lines(text: str) -> tuple[list[str], list[int]]:
    """The text's lines, and which of them an example may target (MIN_CHARS..MAX_CHARS stripped)."""
    lines = text.split("\n")
    return lines, [i for i, line in enumerate(lines) if MIN_CHARS <= len(line.strip()) <= MAX_CHARS]


def line_span(lines: list[str], index: int) -> tuple[int, int]:
    """[start, end) of line `index` in the text `lines` were split from, its newline included."""
    start = sum(len(x) + 1 for x in lines[:index])
    return start, start + len(lines[index]) + (1 if index + 1 < len(lines) else 0)


def around_line(text: str, start: int, end: int, tok: Tokenizer, cfg: DataConfig, head: list[int] = ()) -> tuple[list[int], list[int]]:
    """(prefix ids, suffix ids) for a cursor after the indentation of the line at [start,
    end): BOS, `head` (text the model reads first: retrieved snippets), then the tail of
    the text before the line's start (the engine's whitespace healing moves an
    indentation-ending prefix back to there), within the window; the text after the line."""
    prefix_text = text[max(0, start - cfg.prefix_tokens * cfg.chars_per_token_budget) : start]
    suffix_text = text[end : end + cfg.suffix_tokens * cfg.chars_per_token_budget]
    keep = cfg.prefix_tokens - 1 - len(head)
    prefix = tok.encode(prefix_text)[-keep:] if prefix_text and keep > 0 else []
    bos = [tok.bos_id] if tok.bos_id is not None else []
    return bos + list(head) + prefix, tok.encode(suffix_text)[: cfg.suffix_tokens]


def near_line_example(text: str, tok: Tokenizer, cfg: DataConfig, rng: random.Random) -> Optional[Example]:
    """One retrieve-then-edit example from a file, or None when no line of it has a near
    line in its window (the caller then makes a plain example)."""
    lines, candidates = target_lines(text)
    for _ in range(MAX_TRIES if candidates else 0):
        index = rng.choice(candidates)
        found = nearest_line(lines, index)
        if found is None:
            continue
        _, j = found
        line = lines[index]
        indent = line[: len(line) - len(line.lstrip())]
        start, end = line_span(lines, index)
        target_ids = tok.encode(line + ("\n" if end > start + len(line) else ""))
        start_ids = tok.encode(indent + lines[j].strip() + "\n")
        if len(start_ids) != len(target_ids):
            # Substitutions only: where the lengths differ, a position-aligned target makes
            # the model shift tokens it should keep (measured: it then rewrote a third of
            # right tokens with a neighbour's, lab.training.near_eval), and it cannot tell
            # from the start where the insertion goes.
            continue
        n = edit_canvas_length(len(start_ids), cfg.block_size)
        if n > cfg.canvas_max:
            continue  # the run-time canvas could not hold this line: not a pair to learn
        canvas = target_ids + [tok.eom_id] * (n - len(target_ids))
        noisy = start_ids + [tok.mask_id] * (n - len(start_ids))
        prefix, suffix = around_line(text, start, end, tok, cfg)
        return Example(prefix, canvas, suffix, noisy_canvas=noisy)
    return None
