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
from engine.workspace.snippets import MAX_SNIPPET_CHARS, SNIPPET_TOKENS, snippet_block, with_neighbours
from lab.training.data import DataConfig, Example
from lab.training.near_lines import MAX_CHARS, MIN_CHARS, around_line, line_span, nearest_line, target_lines

HELD = 0.45  # the line's own place (or another where it stands) among the snippets
NEAR = 0.25  # else a near line's place
FAR = 12  # a distractor's line is at least this many lines from the cursor's
MAX_CROSS_TOKENS = SNIPPET_TOKENS  # the snippets' share of the prefix window (the engine's draft_context cuts likewise)
MAX_TRIES = 8


def _distractor(lines: list[str], index: int, rng: random.Random) -> Optional[int]:
    for _ in range(6):
        j = rng.randrange(len(lines))
        if abs(j - index) >= FAR and MIN_CHARS <= len(lines[j].strip()) <= MAX_CHARS:
            return j
    return None


KINDS = {"held": 0.0, "near": HELD, "distractors": 1.0}  # `kind`: the draw that picks each


def snippet_places(lines: list[str], index: int, rng: random.Random, kind: Optional[str] = None) -> list[int]:
    """The line numbers whose places are shown for a cursor at line `index`, in the order
    shown (`kind` forces what is shown beside the distractors: lab/training/context_eval.py)."""
    places: list[int] = []
    draw = rng.random()
    if kind is not None:
        draw = KINDS[kind]
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


def context_example(text: str, tok: Tokenizer, cfg: DataConfig, rng: random.Random, kind: Optional[str] = None, show: bool = True) -> Optional[Example]:
    """One example with snippets before the prefix, or None (the caller makes a plain one).
    `kind` forces what the snippets hold (KINDS); `show=False` makes the same example
    with no snippets (the same rng draws), the baseline a reading model should beat."""
    lines, candidates = target_lines(text)
    for _ in range(MAX_TRIES if candidates else 0):
        index = rng.choice(candidates)
        places = [(j, with_neighbours(lines, j)) for j in snippet_places(lines, index, rng, kind)]
        shown = [(j, s) for j, s in places if sum(map(len, s)) <= MAX_SNIPPET_CHARS]
        if not shown or (kind == "held" and not any(lines[j].strip() == lines[index].strip() for j, _ in shown)):
            continue  # nothing to show, or the line's own place was too long a snippet
        start, end = line_span(lines, index)
        middle = tok.encode(text[start:end])
        n = cfg.block_size * math.ceil((len(middle) + 1) / cfg.block_size)
        if n > cfg.canvas_max:
            continue
        cross = tok.encode(snippet_block([s for _, s in shown]))[:MAX_CROSS_TOKENS] if show else []
        prefix, suffix = around_line(text, start, end, tok, cfg, head=cross)
        return Example(prefix, middle + [tok.eom_id] * (n - len(middle)), suffix)
    return None
