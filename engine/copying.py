"""Copying from the context: code repeats itself (sampler rules 6 and 7).

Rule 6 (`copy_mix`): at the first masked position, whose left side is all text, the
longest run of the last 2-4 tokens that also occurs in the workspace's files or the prefix
(or the suffix) proposes the token that followed it there (`CopyIndex`: where the run's
continuations agree, an NgramTable's majority; else the latest occurrence); the guess is
mixed into the model's probabilities with weight `copy_weight` (a pointer-style mixture
from token ids, no extra forward pass). Rule 7 (`extend_by_copy`): after a pass's commits, the masked
positions right after them take the continued guess while it is among the model's
`copy_run_top` most likely tokens there and the constraint allows it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence

import torch

from engine.ending import after_written
from engine.runs import COPY_NGRAMS, NgramTable
from engine.types import CanvasChange

if TYPE_CHECKING:
    from engine.sampler import CanvasState, Denoising


class CopyIndex:
    """The copy rule's guesses: majorities first, then the latest occurrence. A run of 2-4
    tokens whose continuations agree (NgramTable) in the workspace's files (`workspace`,
    engine/workspace/ngrams.py), else in this request's prefix and suffix, proposes what
    follows it there; otherwise the token that followed the run's latest occurrence in the
    prefix, or in `also` (the suffix: code after the cursor repeats names and calls too;
    on the dev lines exact match 8.5% -> 9.0%, docs/sampler.md). A majority is right more
    often than the latest occurrence (docs/sampler.md "The copy rule's majorities")."""

    def __init__(self, source: Sequence[int], special: frozenset[int], also: Sequence[int] = (), workspace: Optional[NgramTable] = None) -> None:
        self.source = list(source)
        self.tables = [table for table in (workspace, NgramTable([list(also), self.source], special)) if table is not None]
        self.next: dict[tuple[int, ...], int] = {}
        for tokens in (list(also), self.source):  # the prefix's entries win
            for n in COPY_NGRAMS:  # later occurrences overwrite earlier ones
                runs = zip(*(tokens[i : len(tokens) - n + i] for i in range(n)))
                self.next.update({run: following for run, following in zip(runs, tokens[n:]) if following not in special})

    def guess(self, left: Sequence[int]) -> Optional[int]:
        for table in self.tables:
            token = table.guess(left)
            if token is not None:
                return token
        for n in COPY_NGRAMS:
            if len(left) >= n:
                token = self.next.get(tuple(left[-n:]))
                if token is not None:
                    return token
        return None


def copy_mix(probs: torch.Tensor, canvas: CanvasState, index: CopyIndex, weight: float) -> None:
    masked = canvas.masked_positions()
    if not masked:
        return
    first = masked[0]
    if first > 0 and "\n" in canvas.tok.piece(canvas.ids[first - 1]):
        # A middle's new line is where it most often should end or turn; copying there
        # measurably ran middles on into the context's next line (docs/sampler.md).
        return
    token = index.guess((index.source[-COPY_NGRAMS[0]:] + canvas.ids[:first])[-COPY_NGRAMS[0]:])
    if token is not None:
        probs[first] *= 1.0 - weight
        probs[first, token] += weight


def extend_by_copy(probs: torch.Tensor, run: "Denoising", changes: list[CanvasChange]) -> list[CanvasChange]:
    """Rule 7: write the copy guesses that continue this pass's commits while each is among
    the model's `copy_run_top` most likely tokens at its position and the constraint allows
    the text so far; stops at a newline (rule 6's exception), a guess the model ranks lower,
    or a position already resolved."""
    canvas, index, top = run.canvas, run.copy_index, run.settings.copy_run_top
    position = after_written(canvas, changes)
    if index is None or top <= 0 or position is None:
        return []
    tok = canvas.tok
    left = index.source[-COPY_NGRAMS[0]:] + canvas.ids[:position]  # grows with each guess
    guesses: list[tuple[int, int, float]] = []  # (position, token, probability)
    while position < canvas.size and canvas.ids[position] == tok.mask_id and "\n" not in tok.piece(left[-1]):
        token = index.guess(left[-COPY_NGRAMS[0]:])
        if token is None or token not in probs[position].topk(min(top, probs.shape[-1])).indices.tolist():
            break
        guesses.append((position, token, float(probs[position, token])))
        left.append(token)
        position += 1
    if run.constraint is not None:
        # The longest run of guesses the constraint allows (a refused guess is dropped, not
        # replaced: its evidence was the copy, and the copy said this token).
        while guesses and not run.constraint.allows(run.prefix, canvas.pieces({position: token for position, token, _ in guesses}), run.suffix):
            guesses.pop()
    for position, token, _ in guesses:
        canvas.commit(position, token)
    return [CanvasChange(position, tok.piece(token), confidence, "commit") for position, token, confidence in guesses]
