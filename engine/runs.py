"""Runs of tokens and what follows them, where a text agrees with itself (sampler rule 6,
engine/copying.py; the workspace's table, engine/workspace/ngrams.py).

An NgramTable holds every run of 2-4 tokens of some token sequences and the token after
each, as two numpy arrays (a key per run, sorted; the next tokens in the same order): ~36
bytes a token. No torch here: the workspace's code imports it without the model.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

COPY_NGRAMS = (4, 3, 2)  # run lengths the copy guess tries, longest first
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
        """The token that follows the longest run ending `left` that the table's texts hold,
        when they agree on it (MIN_SEEN, MIN_SHARE); None otherwise, also where that run was
        seen too seldom (a shorter one is not asked: measured, docs/measurements/2026-12-02-sampler.md)."""
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
