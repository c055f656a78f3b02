"""The workspace as the copy rule's datastore: which token follows a run of 2-4 tokens in
the user's other files (sampler rule 6, engine/copying.py).

The copy rule asks this table first: where the workspace agrees with itself (a run seen at
least `MIN_SEEN` times, one next token holding at least `MIN_SHARE` of them; engine/
runs.py NgramTable) its guess goes before those of the request's own text (measured on
the tuning packages' real lines, docs/workspace.md "The workspace as the copy rule's
datastore"). A code base repeats its own names, calls and idioms, which a model of a few
million parameters has never seen.

The table is two numpy arrays (a key per 2-, 3- and 4-token run, sorted; the token after
each), ~36 bytes a workspace token, built from the files the index holds (at most
`MAX_TOKENS` tokens: the rest of a very large workspace is left out) and rebuilt, in a
thread, when the index changes, re-tokenizing only the files that changed.
"""
from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from engine.runs import NgramTable

log = logging.getLogger(__name__)

MAX_TOKENS = 1_000_000  # tokens indexed at most (~40 MB of tables); files past it are left out
MAX_FILE_BYTES = 512 * 1024  # a larger file is data, not code to copy from
REBUILD_AFTER_S = 30.0  # an editor's table is rebuilt at most this often: a save costs a second of CPU on a large workspace, a stale table nothing


class WorkspaceNgrams:
    """A workspace's NgramTable for one tokenizer, rebuilt when the index's generation moves
    (a file indexed or removed); `files` lists (path, signature) pairs, and only a file whose
    signature changed is read and tokenized again.

    `get(..., wait=False)` never makes a request wait for a build: it starts one in a
    thread (at most every REBUILD_AFTER_S) and answers with the table it has (None before the
    first is done), so an editor's completions after opening a folder or saving a file do not
    pay for it. `wait=True` (`infill batch`) builds before answering: the same answers every run."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.table: Optional[NgramTable] = None
        self.generation: Optional[int] = None  # the index's generation the table was made for
        self.signature: object = None  # the files (path, signature) it was made from
        self.cached: dict[str, tuple[object, np.ndarray]] = {}
        self.building: Optional[threading.Thread] = None
        self.built_at = 0.0  # time.monotonic() when the table was last made

    def get(self, generation: int, files: Callable[[], list[tuple[Path, object]]], encode: Callable[[str], list[int]], special: frozenset[int], *,
            wait: bool = False) -> Optional[NgramTable]:
        """The table for the index's `generation` (its files listed by `files`, asked only
        when the generation moved), or the one it has while a new one is built."""
        with self.lock:
            if self.table is not None and generation == self.generation:
                return self.table
            if not wait:
                recent = self.table is not None and time.monotonic() - self.built_at < REBUILD_AFTER_S
                if not recent and (self.building is None or not self.building.is_alive()):
                    self.building = threading.Thread(target=self._build_quietly, args=(generation, files, encode, special), name="infill-ngrams", daemon=True)
                    self.building.start()
                return self.table
            building = self.building
        if building is not None:
            building.join()
        self._build(generation, files, encode, special)
        return self.table

    def _build_quietly(self, *args: object) -> None:
        """`_build` in its thread: a failure (the index closed meanwhile, a file system
        error) is logged and leaves the table it had; the next request tries again."""
        try:
            self._build(*args)  # type: ignore[arg-type]
        except Exception as error:  # noqa: BLE001 - a background build must not kill the server
            log.warning("workspace copy table not rebuilt: %s", error)

    def _build(self, generation: int, files_of: Callable[[], list[tuple[Path, object]]], encode: Callable[[str], list[int]], special: frozenset[int]) -> None:
        with self.lock:
            if self.table is not None and generation == self.generation:
                return
            old_cache = dict(self.cached)
        files = files_of()
        signature = tuple((str(p), s) for p, s in files)
        if self.table is not None and signature == self.signature:
            with self.lock:
                self.generation = generation  # nothing this table holds changed
            return
        cached: dict[str, tuple[object, np.ndarray]] = {}
        total, kept = 0, []
        for path, sig in files:
            old = old_cache.get(str(path))
            if old is not None and old[0] == sig:
                ids = old[1]
            else:
                try:
                    data = path.read_bytes()
                except OSError:
                    continue
                if len(data) > MAX_FILE_BYTES or b"\0" in data[:8192]:
                    continue
                ids = np.asarray(encode(data.decode("utf-8", errors="replace")), dtype=np.int32)
            if total + len(ids) > MAX_TOKENS:
                break
            total += len(ids)
            cached[str(path)] = (sig, ids)
            kept.append(ids)
        table = NgramTable(kept, special)
        with self.lock:
            self.cached, self.signature, self.generation, self.table = cached, signature, generation, table
            self.built_at = time.monotonic()
