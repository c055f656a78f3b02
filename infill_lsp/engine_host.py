"""Owns the engine: loads it in the background and runs infill calls off the event loop.

Loading (torch import, weights) takes seconds, so it runs on its own thread while the
server keeps answering. Model calls run on one dedicated worker thread: the engine holds
a lock anyway, and a separate executor keeps pygls' own pool (which reads stdin) free.
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
        self._installed_generation = 0  # the load whose engine is in use
        self._loads_in_flight = 0
        self._superseded: tuple[int, Any, str | None] | None = None  # an older load's engine, in reserve
        self._model_dir: str | None = None
        self._loading_dir: str | None = None
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="infill-engine")
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
        A newer load that fails does not cost the model an older one is still loading (a
        bad modelDir setting sent during the first load used to leave no model at all):
        the older one is installed when it arrives, and a loaded model keeps serving.
        """
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

    def _install(self, generation: int, engine: Any, model_dir: str | None) -> None:
        self._engine, self._model_dir, self._installed_generation = engine, model_dir, generation
        self._superseded = None

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
    ) -> ModelAnswer | None:
        """Run the model on the worker thread; None when cancelled before it started.

        When the awaiting task is cancelled, `cancel` is set so the model stops at its
        next pass, and `on_finished` still sees the run (the work it cost is counted).
        """
        engine = await self.wait_ready()
        loop = asyncio.get_running_loop()
        run = loop.run_in_executor(
            self._worker, _run_infill, engine, prefix, suffix, language, cancel, dict(settings)
        )
        if on_finished is not None:
            run.add_done_callback(lambda done: _report(done, on_finished))
        try:
            return await asyncio.shield(run)
        except asyncio.CancelledError:
            cancel.set()
            raise

    def run_on_worker(self, function: Callable[[], Any]) -> "asyncio.Future[Any]":
        return asyncio.get_running_loop().run_in_executor(self._worker, function)

    def close(self) -> None:
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


def _run_infill(
    engine: Any, prefix: str, suffix: str, language: str | None, cancel: threading.Event, settings: dict
) -> ModelAnswer | None:
    # A request superseded while it queued behind another never reaches the model.
    if cancel.is_set():
        return None
    result = engine.infill(prefix, suffix, language=language, cancel=cancel, **settings)
    return ModelAnswer(result.middle, result.forwards, result.ms, result.stop_reason)
