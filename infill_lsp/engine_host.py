"""Owns the engine: loads it in the background and runs infill calls off the event loop.

Loading (torch import, weights) takes seconds, so it runs on its own thread while the
server keeps answering. Infills go to the engine's batch worker (engine/batching.py: one
thread, every request in flight denoised together); other model calls (next-edit) run on
one dedicated worker thread, which keeps pygls' own pool (which reads stdin) free.
"""
from __future__ import annotations

import asyncio
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Mapping

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelAnswer:
    middle: str
    forwards: int
    ms: float
    stop_reason: str


class EngineUnavailable(Exception):
    """The model failed to load; the message says why (one line, for the user)."""


class EngineHost:
    def __init__(self) -> None:
        self._engine: Any = None
        self._ready: asyncio.Future[Any] | None = None
        self._load_generation = 0
        self._model_dir: str | None = None
        self._loading_dir: str | None = None
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="infill-engine")
        self._batch_worker: Any = None  # engine.batching.BatchWorker: infills of all documents, batched
        self._batch_engine: Any = None
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

    async def load(self, model_dir: str | None) -> str:
        """Load (or reload) the model; returns its name. Raises EngineUnavailable.

        Requests arriving meanwhile wait on `wait_ready`; a newer load supersedes this one.
        """
        loop = asyncio.get_running_loop()
        self._load_generation += 1
        generation = self._load_generation
        self._loading_dir = model_dir
        if self._ready is None or self._ready.done():
            self._ready = loop.create_future()
        ready = self._ready
        try:
            engine = await loop.run_in_executor(self._loader, _load_engine, model_dir)
        except EngineUnavailable as error:
            if generation == self._load_generation and not ready.done():
                if self._engine is None:
                    ready.set_exception(error)
                    ready.exception()  # mark retrieved: waiters re-raise it themselves
                else:
                    ready.set_result(self._engine)  # keep serving with the old model
            raise
        if generation == self._load_generation:
            self._engine = engine
            self._model_dir = model_dir
            if not ready.done():
                ready.set_result(engine)
        return str(getattr(engine, "model_name", "model"))

    async def wait_ready(self) -> Any:
        """The engine, once loaded. Raises EngineUnavailable when loading failed."""
        if self._engine is not None:  # while a reload runs, the old model keeps serving
            return self._engine
        if self._ready is None:
            raise EngineUnavailable("the model has not started loading (the client never sent 'initialized')")
        return await asyncio.shield(self._ready)

    async def infill(
        self,
        prefix: str,
        suffix: str,
        language: str | None,
        cancel: threading.Event,
        settings: Mapping[str, object],
        on_finished: Callable[[ModelAnswer], None] | None = None,
        cache_key: object = None,
    ) -> ModelAnswer | None:
        """Run the model on the batch worker; None when cancelled before it started.

        When the awaiting task is cancelled, `cancel` is set so the model stops at its
        next pass, and `on_finished` still sees the run (the work it cost is counted).
        `cache_key` (a document) keeps that document's context cache across requests.
        """
        engine = await self.wait_ready()
        if cancel.is_set():
            return None
        loop = asyncio.get_running_loop()
        job = engine.job(prefix, suffix, language, cancel, cache_key=cache_key, **settings)  # bad settings: InfillError here
        run: asyncio.Future[ModelAnswer | None] = loop.create_future()
        self._batcher(engine).submit(job, on_done=lambda ticket: loop.call_soon_threadsafe(_settle, run, ticket))
        if on_finished is not None:
            run.add_done_callback(lambda done: _report(done, on_finished))
        try:
            return await asyncio.shield(run)
        except asyncio.CancelledError:
            cancel.set()
            raise

    def _batcher(self, engine: Any) -> Any:
        """The batch worker of the loaded engine (one per engine: a reload starts another)."""
        if self._batch_engine is not engine:
            from engine.batching import BatchWorker  # deferred: importing torch takes seconds

            if self._batch_worker is not None:
                self._batch_worker.close(timeout=0)  # its requests finish, it then exits
            self._batch_worker, self._batch_engine = BatchWorker(engine), engine
        return self._batch_worker

    def run_on_worker(self, function: Callable[[], Any]) -> "asyncio.Future[Any]":
        return asyncio.get_running_loop().run_in_executor(self._worker, function)

    def close(self) -> None:
        if self._batch_worker is not None:
            self._batch_worker.close(timeout=0)
        self._worker.shutdown(wait=False, cancel_futures=True)
        self._loader.shutdown(wait=False, cancel_futures=True)


def _report(done: "asyncio.Future[ModelAnswer | None]", on_finished: Callable[[ModelAnswer], None]) -> None:
    if done.cancelled() or done.exception() is not None:
        return
    answer = done.result()
    if answer is not None:
        on_finished(answer)


def _load_engine(model_dir: str | None) -> Any:
    try:
        import engine  # deferred: importing torch takes seconds

        return engine.load(model_dir=model_dir)
    except Exception as error:  # a broken install or model must not take the server down
        if type(error).__name__ == "InfillError":  # the engine's own one-line message
            raise EngineUnavailable(str(error)) from error
        log.exception("model load failed")
        where = model_dir or "the embedded model"
        raise EngineUnavailable(f"cannot load the model from {where}: {type(error).__name__}: {error}") from error


def _settle(run: "asyncio.Future[ModelAnswer | None]", ticket: Any) -> None:
    """Hand a finished batch ticket to the awaiting task (on the event loop)."""
    if run.done():
        return
    if ticket.error is not None:
        run.set_exception(ticket.error)
        return
    result = ticket.final.result
    if result.stop_reason == "cancelled" and result.forwards == 0:
        run.set_result(None)  # superseded while it waited to join: the model never ran
    else:
        run.set_result(ModelAnswer(result.middle, result.forwards, result.ms, result.stop_reason))
