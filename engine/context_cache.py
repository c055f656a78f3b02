"""The engine's encoded contexts kept for reuse, so that a keystroke re-encodes only what
changed: the last request's, and each keyed request's (a live session, an editor's
document) within a memory budget, least recently used first out.

A context is reusable when it is a `ReusableContext` (engine/types.py: the embedded
model's, which records the token ids it encoded); a checkpoint family's contexts are not
(their keys depend on the canvas) and are simply never reused.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Hashable, Iterator, Optional

from engine.types import ReusableContext

KEYED_CONTEXT_BYTES = 256 * 2**20  # memory for keyed requests' contexts (the embedded model: ~4 MB each)
KEYED_CONTEXTS = 4096  # and at most this many (for contexts that do not report their size)


class ContextCache:
    """Encoded contexts a request can build on. Not thread-safe: the engine's lock
    serializes every use (one model, one forward at a time)."""

    def __init__(self, max_bytes: int = KEYED_CONTEXT_BYTES, max_entries: int = KEYED_CONTEXTS) -> None:
        self.max_bytes, self.max_entries = max_bytes, max_entries
        self.last: object = None  # the newest context, what an unkeyed request builds on
        self._keyed: OrderedDict[Hashable, tuple[object, int]] = OrderedDict()  # key -> (context, bytes)
        self.keyed_bytes = 0

    def __len__(self) -> int:
        return len(self._keyed)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._keyed

    def __iter__(self) -> Iterator[Hashable]:
        return iter(list(self._keyed))

    def keys(self) -> list[Hashable]:
        """The keys with a kept context, least recently used first."""
        return list(self._keyed)

    def bytes_of(self, key: Hashable) -> int:
        """Memory `key`'s kept context holds (0 when none is kept)."""
        return self._keyed.get(key, (None, 0))[1]

    def reusable(self, prefix_ids: list[int], suffix_ids: list[int], key: Optional[Hashable] = None) -> tuple[object, int]:
        """The cached context a request can build on (a keyed request: its key's previous
        one only, never another key's, so that a batch line's or a session's answer does
        not depend on which request ran before it (issue 35); an unkeyed one: the newest)
        and how many of its context tokens it keeps exactly: the common token prefix, and
        the suffix when it is unchanged."""
        old = self.last if key is None else self._keyed.get(key, (None, 0))[0]
        return old, kept_tokens(old, prefix_ids, suffix_ids)

    def remember(self, context: object, key: Optional[Hashable] = None) -> None:
        """The newest context is what the next unkeyed request builds on; a keyed one is
        also kept for its key, forgetting the least recently used beyond the budget."""
        self.last = context
        if key is None:
            return
        self.forget(key)
        size = context.nbytes if isinstance(context, ReusableContext) else 0
        self._keyed[key] = (context, size)
        self.keyed_bytes += size
        while len(self._keyed) > 1 and (self.keyed_bytes > self.max_bytes or len(self._keyed) > self.max_entries):
            self.keyed_bytes -= self._keyed.popitem(last=False)[1][1]

    def forget(self, key: Hashable) -> None:
        """Drop `key`'s context (its session or document closed)."""
        entry = self._keyed.pop(key, None)
        if entry is not None:
            self.keyed_bytes -= entry[1]

    def clear(self) -> None:
        """Drop every context: the next request encodes from scratch."""
        self.last = None
        self._keyed.clear()
        self.keyed_bytes = 0


def kept_tokens(old: object, prefix_ids: list[int], suffix_ids: list[int]) -> int:
    """How many of a request's context tokens `old` (a cached context, or None) holds
    exactly: the common token prefix, and the suffix when it is unchanged. The rest is
    what encoding the request's context computes."""
    reused = 0
    if isinstance(old, ReusableContext):
        limit = min(len(old.prefix_ids), len(prefix_ids))
        while reused < limit and old.prefix_ids[reused] == prefix_ids[reused]:
            reused += 1
        if old.suffix_ids == suffix_ids:
            reused += len(suffix_ids)
    return reused
