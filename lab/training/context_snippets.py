"""Training examples that teach the model to read retrieved code in its context.

At run time the workspace's drafts are lines found elsewhere in the user's repository;
with the `draft_context` knob their places (each line with its non-blank neighbours) go
at the head of the model's window, in the layout of engine/workspace/snippets.py. The
shipped model never saw such text: with the true line in its window it wrote the line
no more often (docs/measurements/2026-12-07-near-lines.md, "Context probe"). Here an
example is a whole line of a corpus file with the cursor after its indentation (the
editor's cursor; the middle is the line and its newline), and one to three snippets of
the same file before the prefix:

- with probability HELD, the line itself where it stands (its neighbours are the
  cursor's: what a draft found after the same previous line looks like), or another place
  where the same line stands;
- with probability NEAR, the most similar other line near it (lab/training/near_lines.py
  `nearest_line`), which the model must not copy blindly;
- and DISTRACTORS: other lines of the file, far from the cursor, so it learns that a
  snippet may have nothing to do with the line.

Everything is mined from the corpus files alone, never from benchmark data.
"""
from __future__ import annotations

import math
import random
from typing import Optional

from engine.tokenizer import Tokenizer
from engine.workspace.snippets import MAX_SNIPPET_CHARS, snippet_block, with_neighbours
from lab.training.data import DataConfig, Example
from lab.training.near_lines import MAX_CHARS, MIN_CHARS, nearest_line

HELD = 0.45  # the line's own place (or another where it stands) among the snippets
NEAR = 0.25  # else a near line's place
FAR = 12  # a distractor's line is at least this many lines from the cursor's
MAX_CROSS_TOKENS = 96  # the snippets' share of the prefix window (the engine's cross_file_share cuts likewise)
MAX_TRIES = 8


def _distractor(lines: list[str], index: int, rng: random.Random) -> Optional[int]:
    for _ in range(6):
        j = rng.randrange(len(lines))
        if abs(j - index) >= FAR and MIN_CHARS <= len(lines[j].strip()) <= MAX_CHARS:
            return j
    return None


def snippet_places(lines: list[str], index: int, rng: random.Random) -> list[int]:
    """The line numbers whose places are shown for a cursor at line `index`, in the order shown."""
    places: list[int] = []
    draw = rng.random()
    if draw < HELD:
        target = lines[index].strip()
        others = [j for j, line in enumerate(lines) if j != index and line.strip() == target]
        places.append(rng.choice(others) if others and rng.random() < 0.5 else index)
    elif draw < HELD + NEAR:
        found = nearest_line(lines, index)
        if found is not None and found[1] != index:
            places.append(found[1])
    for _ in range(rng.randint(0 if places else 1, 2)):
        j = _distractor(lines, index, rng)
        if j is not None and j not in places:
            places.append(j)
    rng.shuffle(places)
    return places


def context_example(text: str, tok: Tokenizer, cfg: DataConfig, rng: random.Random) -> Optional[Example]:
    """One example with snippets before the prefix, or None (the caller makes a plain one)."""
    lines = text.split("\n")
    candidates = [i for i, line in enumerate(lines) if MIN_CHARS <= len(line.strip()) <= MAX_CHARS]
    if not candidates:
        return None
    for _ in range(MAX_TRIES):
        index = rng.choice(candidates)
        places = snippet_places(lines, index, rng)
        snippets = [s for s in (with_neighbours(lines, j) for j in places) if sum(len(x) for x in s) <= MAX_SNIPPET_CHARS]
        if not snippets:
            continue
        cross = tok.encode(snippet_block(snippets))[:MAX_CROSS_TOKENS]
        line = lines[index]
        start = sum(len(x) + 1 for x in lines[:index])
        end = start + len(line) + 1 if index + 1 < len(lines) else start + len(line)
        middle = tok.encode(text[start:end])
        n = cfg.block_size * math.ceil((len(middle) + 1) / cfg.block_size)
        if n > cfg.canvas_max:
            continue
        canvas = middle + [tok.eom_id] * (n - len(middle))
        # The cursor after the indentation: the prefix ends at the line's start (the
        # engine's whitespace healing moves an indentation-ending prefix back to there).
        prefix_text = text[max(0, start - cfg.prefix_tokens * cfg.chars_per_token_budget) : start]
        suffix_text = text[end : end + cfg.suffix_tokens * cfg.chars_per_token_budget]
        keep = cfg.prefix_tokens - 1 - len(cross)
        prefix = tok.encode(prefix_text)[-keep:] if prefix_text and keep > 0 else []
        suffix = tok.encode(suffix_text)[: cfg.suffix_tokens]
        bos = [tok.bos_id] if tok.bos_id is not None else []
        return Example(bos + cross + prefix, canvas, suffix)
    return None
