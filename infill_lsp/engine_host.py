"""Owns the engine for the language server: loads it in the background and runs every
model call on the engine's one worker thread (engine/worker.py).

Loading (torch import, weights) takes seconds, so it runs on its own thread while the
server keeps answering. Model calls go to the EngineWorker through the request path's
lane (infill_lsp/request_path.py: supersede and cancel per key, the bridge to asyncio);
pygls' own pool (which reads stdin) stays free.

Memory: the model serving and the loads under way are held, nothing more. A load of the
directory the serving model came from, unchanged on disk since (a `modelDir` setting
switched to a directory that failed to load and back), keeps that model instead of
loading a second copy; and when a model is dropped its freed memory is handed back to the
operating system (glibc keeps freed weights otherwise: every swap grew the server by
megabytes).
"""
from __future__ import annotations

import asyncio
import ctypes
import logging
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Hashable, Optional, Union

from engine.model_dir_watch import DirState, ModelDirWatch, dir_state
from engine.protocols import BatchingEngine
from engine.types import InfillError
from engine.worker import EngineWorker, InfillCall, NextEditCall, Outcome

from .request_path import EngineUnavailable, Lane

log = logging.getLogger(__name__)

GROUP = "lsp"  # one client per language server: every request takes its turn in one group
__all__ = ["EngineHost", "EngineUnavailable", "GROUP"]  # EngineUnavailable: the request path's, raised here


class EngineHost:
    """A local engine on an EngineWorker: an engine.protocols.ModelHost (the language server
    also runs on RemoteEngineHost, infill_lsp/remote.py)."""

    def __init__(self) -> None:
        self._engine: BatchingEngine | None = None
        self._ready: asyncio.Future[BatchingEngine] | None = None
        self._load_generation = 0
        self._installed_generation = 0  # the load whose engine is in use
        self._loads_in_flight = 0
        self._superseded: tuple[int, BatchingEngine, str | None] | None = None  # an older load's engine, in reserve
        self._model_dir: str | None = None
        self._loading_dir: str | None = None
        self.dir_watch: ModelDirWatch | None = None  # the loaded model's directory, watched for changes
        self._loaded_from: tuple[Path, DirState] | None = None  # the serving model's directory and its files at load
        self._dropped = threading.Event()  # a model was dropped: its freed memory goes back after the next request
        self.worker = EngineWorker(None, name="infill-engine")  # gets the engine once it is loaded
        self.lane = Lane(self.worker, GROUP)  # every request of the one client (infill_lsp/request_path.py)
        self._loader = ThreadPoolExecutor(max_workers=1, thread_name_prefix="infill-load")

    @property
    def model_name(self) -> str | None:
        return getattr(self._engine, "model_name", None)

    @property
    def requested_dir(self) -> str | None:
        """The model directory most recently asked for (loading or loaded)."""
        return self._loading_dir

    @property
    def loaded(self) -> bool:
        return self._engine is not None

    def expect_load(self) -> None:
        """A load is coming (the client sent `initialized`; the settings that name the model
        are being read): requests from now on wait for it rather than being refused."""
        if self._ready is None:
            self._ready = asyncio.get_running_loop().create_future()

    async def load(self, model_dir: str | None) -> str:
        """Load (or reload) the model; returns its name. Raises EngineUnavailable.

        Requests arriving meanwhile wait on `wait_ready`; a newer load supersedes this one.
        A newer load that fails does not cost the model an older one is still loading (a
        bad modelDir setting sent during the first load used to leave no model at all):
        the older one is installed when it arrives, and a loaded model keeps serving.
        """
        kept = self._keep_serving(model_dir)
        if kept is not None:
            return kept
        loop = asyncio.get_running_loop()
        self._load_generation += 1
        generation = self._load_generation
        self._loads_in_flight += 1
        self._loading_dir = model_dir
        if self._ready is None or self._ready.done():
            self._ready = loop.create_future()
        ready = self._ready
        try:
            engine = await loop.run_in_executor(self._loader, _load_engine, model_dir)
        except EngineUnavailable as error:
            self._loads_in_flight -= 1
            if generation == self._load_generation and self._superseded is not None:
                self._install(*self._superseded)  # an older load that succeeded meanwhile
            if not ready.done() and self._loads_in_flight == 0:
                if self._engine is None:
                    ready.set_exception(error)
                    ready.exception()  # mark retrieved: waiters re-raise it themselves
                else:
                    ready.set_result(self._engine)  # keep serving with the old model
            raise
        self._release_memory_when_dropped(engine)
        self._loads_in_flight -= 1
        if generation == self._load_generation:
            self._install(generation, engine, model_dir)
        elif generation > self._installed_generation:
            self._superseded = (generation, engine, model_dir)  # kept in case the newer load fails
        if self._engine is not None and not ready.done() and (
            generation == self._load_generation or self._loads_in_flight == 0
        ):
            ready.set_result(self._engine)
        return str(getattr(engine, "model_name", "model"))

    def _keep_serving(self, model_dir: str | None) -> str | None:
        """The serving model's name when `model_dir` is the directory it was loaded from and
        that directory's files are as they were then; None: load it. Loading it again would
        give the same model after seconds of work, with a second copy of the weights in
        memory meanwhile and freed pages kept by the allocator after (+43 MB on the first
        switch back in the fuzz run). Loads still running for other directories are
        outdated by this request, as a newer load outdates them."""
        if self._engine is None or model_dir != self._model_dir or self._loaded_from is None:
            return None
        path, state = self._loaded_from
        if dir_state(path) != state:  # replaced on disk since: the user reloads to get the new files
            return None
        self._load_generation += 1
        self._installed_generation = self._load_generation
        self._superseded = None
        self._loading_dir = model_dir
        if self._ready is not None and not self._ready.done():
            self._ready.set_result(self._engine)
        return str(getattr(self._engine, "model_name", "model"))

    def _install(self, generation: int, engine: BatchingEngine, model_dir: str | None) -> None:
        self._engine, self._model_dir, self._installed_generation = engine, model_dir, generation
        self.worker.engine = engine  # the next job runs on the new model
        self._superseded = None
        model_dir_path = getattr(engine, "model_dir", None)
        self.dir_watch = ModelDirWatch(model_dir_path) if model_dir_path is not None else None
        state = dir_state(Path(model_dir_path)) if model_dir_path is not None else None
        self._loaded_from = (Path(model_dir_path), state) if state is not None else None

    def _release_memory_when_dropped(self, engine: object) -> None:
        """Hand `engine`'s memory back to the operating system once nothing holds it (a
        swapped-out model, once the worker has moved on from it; an outdated load). The
        finalizer runs when the last reference goes but before the engine's members are
        freed, so it only notes the drop; the trim runs after the next request's outcome
        (`run`), when the freeing is done. Engines that take no weak reference (test
        doubles) are skipped."""
        try:
            finalizer = weakref.finalize(engine, self._dropped.set)
        except TypeError:
            return
        finalizer.atexit = False  # at exit the process gives everything back anyway

    def model_dir_notice(self) -> str | None:
        """One line when the loaded model's directory disappeared or was replaced since the
        last notice (checked at most every few seconds; the model keeps serving)."""
        return self.dir_watch.check() if self.dir_watch is not None else None

    async def wait_ready(self) -> BatchingEngine:
        """The engine, once loaded. Raises EngineUnavailable when loading failed."""
        if self._engine is not None:  # while a reload runs, the old model keeps serving
            return self._engine
        if self._ready is None:
            raise EngineUnavailable("the model has not started loading (the client never sent 'initialized')")
        return await asyncio.shield(self._ready)

    def supersede(self, key: Hashable) -> threading.Event:
        """The cancel token of a new request for `key`; the previous one for `key` stops."""
        return self.lane.supersede(key)

    def cancel(self, key: Hashable) -> None:
        self.lane.cancel(key)

    def forget(self, key: Hashable) -> None:
        """`key` is over (its document closed): drop the engine's cached context for it."""
        self.lane.forget(key)

    async def run(self, key: Hashable, call: Union[InfillCall, NextEditCall], cancel: threading.Event, on_outcome: Optional[Callable[[Outcome], None]] = None) -> Outcome:
        """Run `call` on the worker once the model is ready. If the awaiting task is
        cancelled, `cancel` is set so the model stops at its next pass, and `on_outcome`
        still sees the run (the work it cost is counted)."""
        await self.wait_ready()
        outcome = await self.lane.run(key, call, cancel, on_outcome)
        if self._dropped.is_set():  # the worker freed a dropped model before running this request
            self._dropped.clear()
            try:
                self._loader.submit(return_freed_memory)  # ~40 ms: not on the event loop
            except RuntimeError:  # the host is closed: the process is ending
                pass
        return outcome

    def close(self, timeout: float = 10.0) -> None:
        self.worker.close()
        self.worker.join(timeout)  # a thread still inside torch at interpreter exit aborts the process
        self._loader.shutdown(wait=False, cancel_futures=True)


def return_freed_memory() -> None:
    """glibc's `malloc_trim(0)`: freed heap pages go back to the operating system. glibc
    keeps freed memory for reuse, so a dropped model's weights (tens of MB, in blocks the
    next model does not reuse exactly) stayed in the process's RSS: measured over 12 swaps
    between two model directories, RSS grew by up to 55 MB without this and stayed within
    10 MB with it. A no-op where the C library has no `malloc_trim` (macOS, Windows, musl)."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (AttributeError, OSError, TypeError):
        return
    trim(0)


def _load_engine(model_dir: str | None) -> BatchingEngine:
    try:
        import engine  # torch and the model load here, on the loader thread

        return engine.load(model_dir=model_dir)
    except InfillError as error:  # the engine's own one-line message
        raise EngineUnavailable(str(error)) from error
    except Exception as error:  # a broken install or model must not take the server down
        log.exception("model load failed")
        where = model_dir or "the embedded model"
        raise EngineUnavailable(f"cannot load the model from {where}: {type(error).__name__}: {error}") from error
