"""Copying from the context: code repeats itself (sampler rules 6 and 7).

Rule 6 (`copy_mix`): at the first masked position, whose left side is all text, the
longest run of the last 2-4 tokens that also occurs in the prefix (or the suffix)
proposes the token that followed it there; the guess is mixed into the model's
probabilities with weight `copy_weight` (a pointer-style mixture from token ids, no
extra forward pass). Rule 7 (`extend_by_copy`): after a pass's commits, the masked
positions right after them take the continued guess while it is among the model's
`copy_run_top` most likely tokens there and the constraint allows it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence

import numpy as np
import torch

from engine.ending import after_written
from engine.types import CanvasChange

if TYPE_CHECKING:
    from engine.sampler import CanvasState, Denoising

COPY_NGRAMS = (4, 3, 2)  # context lengths tried by the copy guess, longest first
TOKEN_BITS = 13  # ids up to 8,191 pack 4 to a run's key; larger vocabularies are folded by hashing
MIN_SEEN = 2  # an NgramTable guesses from a run seen at least this often (once is an anecdote)
MIN_SHARE = 0.7  # ... and only when one next token holds this share of its occurrences


def run_key(run: Sequence[int]) -> int:
    """One int64 per run: its length in the top bits, its tokens below (hashed when the
    vocabulary is larger than 13 bits a token)."""
    n = len(run)
    if all(0 <= t < (1 << TOKEN_BITS) for t in run):
        key = 0
        for t in run:
            key = (key << TOKEN_BITS) | t
        return (n << 56) | key
    return (n << 56) | (hash(tuple(run)) & ((1 << 56) - 1))


def _keys(ids: np.ndarray, n: int) -> np.ndarray:
    """The keys of every n-token run of `ids` that has a token after it."""
    count = len(ids) - n
    if count <= 0:
        return np.zeros(0, dtype=np.int64)
    if int(ids.max(initial=0)) < (1 << TOKEN_BITS):
        key = np.zeros(count, dtype=np.int64)
        for i in range(n):
            key = (key << TOKEN_BITS) | ids[i : i + count].astype(np.int64)
        return (np.int64(n) << 56) | key
    return np.array([run_key(ids[i : i + n].tolist()) for i in range(count)], dtype=np.int64)


class NgramTable:
    """Sorted run keys and the token after each run; `guess` answers one run."""

    def __init__(self, files: Sequence[Sequence[int] | np.ndarray], special: frozenset[int]) -> None:
        keys, following = [], []
        blocked = np.array(sorted(special), dtype=np.int64)
        for tokens in files:
            ids = np.asarray(tokens, dtype=np.int64)
            for n in COPY_NGRAMS:
                if len(ids) <= n:
                    continue
                after = ids[n:]
                keep = ~np.isin(after, blocked)
                keys.append(_keys(ids, n)[keep])
                following.append(after[keep])
        key = np.concatenate(keys) if keys else np.zeros(0, dtype=np.int64)
        nxt = np.concatenate(following) if following else np.zeros(0, dtype=np.int64)
        order = np.argsort(key, kind="stable")
        self.keys, self.following = key[order], nxt[order].astype(np.int32)
        self.tokens = sum(len(f) for f in files)

    def guess(self, left: Sequence[int]) -> Optional[int]:
        """The token that follows the longest run ending `left` that the workspace has seen,
        when the workspace agrees on it (MIN_SEEN, MIN_SHARE); None otherwise."""
        for n in COPY_NGRAMS:
            if len(left) < n:
                continue
            key = run_key(list(left[-n:]))
            lo = int(np.searchsorted(self.keys, key, side="left"))
            hi = int(np.searchsorted(self.keys, key, side="right"))
            if hi == lo:
                continue
            if hi - lo < MIN_SEEN:
                return None
            values, counts = np.unique(self.following[lo:hi], return_counts=True)
            best = int(counts.argmax())
            return int(values[best]) if counts[best] >= MIN_SHARE * (hi - lo) else None
        return None




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
