"""The one request path of every front end: from a request to the engine worker and back.

The language server, the live WebSocket server and the HTTP API all run their model work
on the engine worker (engine/worker.py), a thread. What they share lives here, once:

- the bridge (`InFlight`): a job submitted to the worker whose steps and outcome reach
  the event loop through one hand-off (`Handoff`: `direct_handoff(loop)`, one
  `call_soon_threadsafe` per event, or a `LoopInbox.post`, one wakeup per pass). Read it
  as an awaited outcome (`await flight.outcome()`), a stream of events (`await
  flight.next()`), or loop-side callbacks (`on_event`);
- the lane (`Lane`): a front end's requests within one worker group (the language server;
  one live connection; one HTTP request): supersede by key, submit, cancel, forget;
- the lifecycle of an editor's request (`Request`): supersede → debounce → run → stale,
  with the client's cancel (or hang-up) stopping the model at its next pass. Its answer
  (`Answer`) says how it ended: "ok", "superseded", "cancelled" or "stale";
- the error mapping (`user_error`): a job's outcome or a raised exception as a typed
  `UserError` (an `ErrorCode` and one line for the user) that each surface renders in
  its own format: an LSP log line, an OpenAI error object (`UserError.http_status`), a
  live protocol `error` frame.

    lane = Lane(worker, group, handoff)                  # a surface's requests
    flight = lane.submit(key, call, lane.supersede(key), steps=True)
    while (event := await flight.next())[0] == "step": ...
    error = user_error(event[1])                         # None when it has a result

Nothing here knows a wire format: a new route (another HTTP dialect) is its parser, a
renderer of `UserError`, and a few lines over `Lane`/`InFlight`.
"""
from __future__ import annotations

import asyncio
import enum
import threading
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Literal, Optional, Protocol, Union, overload

from engine.types import InfillError, ModelFailure
from engine.worker import EngineWorker, InfillCall, Job, NextEditCall, Outcome

Call = Union[InfillCall, NextEditCall]
Handoff = Callable[..., None]  # handoff(callback, *args): from the worker thread to the loop, never blocking
STEP_BACKLOG = 32  # steps a reader may fall behind by before they collapse into the newest


# -- the error mapping ---------------------------------------------------------------------------

class EngineUnavailable(Exception):
    """No model to run on: it failed to load, or a remote server cannot answer; the message
    says why (one line, for the user). (infill_lsp/engine_host.py re-exports it.)"""


class ErrorCode(str, enum.Enum):
    """Why a request has no answer, as every surface tells it."""

    REFUSED = "refused"  # the input's fault (an InfillError); the message is for the user
    MODEL_FAILED = "model_failed"  # out of memory, a timed-out pass: retry
    MODEL_ERROR = "model_error"  # a forward pass failed (a ModelFailure not worth retrying)
    UNAVAILABLE = "unavailable"  # no model to run on (not loaded, a remote server down)
    CANCELLED = "cancelled"  # the job was cancelled before it had a result (the server stopping)
    INTERNAL = "internal"  # a bug: the server logs it, the user gets no details


HTTP_STATUS = {ErrorCode.REFUSED: 400, ErrorCode.MODEL_FAILED: 503, ErrorCode.MODEL_ERROR: 500,
               ErrorCode.UNAVAILABLE: 503, ErrorCode.CANCELLED: 503, ErrorCode.INTERNAL: 500}
INTERNAL_MESSAGE = "the engine failed; see the server log"
CANCELLED_MESSAGE = "the request was cancelled: the server is shutting down"


@dataclass(frozen=True)
class UserError:
    code: ErrorCode
    message: str  # one line, safe to show (no traceback, no internals for INTERNAL)
    cause: Optional[BaseException] = None  # what was raised, for a surface that logs details

    @property
    def retryable(self) -> bool:
        return self.code in (ErrorCode.MODEL_FAILED, ErrorCode.UNAVAILABLE, ErrorCode.CANCELLED)

    @property
    def http_status(self) -> int:
        return HTTP_STATUS[self.code]


@overload
def user_error(ended: BaseException) -> UserError: ...
@overload
def user_error(ended: Outcome) -> Optional[UserError]: ...


def user_error(ended: Union[Outcome, BaseException]) -> Optional[UserError]:
    """How a job's outcome (or an exception raised on the way) reaches the user; None for
    an outcome with a result."""
    if isinstance(ended, Outcome):
        if ended.result is not None:
            return None
        if ended.error is not None:
            return user_error(ended.error)
        if ended.cancelled:
            return UserError(ErrorCode.CANCELLED, CANCELLED_MESSAGE)
        return UserError(ErrorCode.INTERNAL, INTERNAL_MESSAGE)  # a run that never produced a result
    if isinstance(ended, InfillError):
        return UserError(ErrorCode.REFUSED, str(ended), ended)
    if isinstance(ended, ModelFailure):
        return UserError(ErrorCode.MODEL_FAILED if ended.retryable else ErrorCode.MODEL_ERROR, str(ended), ended)
    if isinstance(ended, EngineUnavailable):
        return UserError(ErrorCode.UNAVAILABLE, str(ended), ended)
    return UserError(ErrorCode.INTERNAL, INTERNAL_MESSAGE, ended)


# -- the bridge: worker thread -> event loop --------------------------------------------------------

def direct_handoff(loop: asyncio.AbstractEventLoop) -> Handoff:
    """One `call_soon_threadsafe` per event (for a worker without a LoopInbox)."""

    def handoff(callback: Callable[..., None], *args: Any) -> None:
        try:
            loop.call_soon_threadsafe(callback, *args)
        except RuntimeError:
            pass  # the loop is closed: the server is shutting down

    return handoff


class InFlight:
    """One job on the worker, its events delivered on the event loop.

    `on_event(flight, kind, payload)` (loop) gets ("step", DenoiseStep) and ("done",
    Outcome) as they come; without it, `steps=True` queues them for `next()`. `outcome()`
    awaits the Outcome either way. `on_finished(outcome)` runs on the worker thread the
    moment the job ends (bookkeeping that must not wait for the loop); it must not block."""

    def __init__(self, worker: EngineWorker, job: Job, handoff: Handoff, *, steps: bool = False,
                 on_event: Optional[Callable[["InFlight", str, Any], None]] = None,
                 on_finished: Optional[Callable[[Outcome], None]] = None) -> None:
        self.worker = worker
        self.job = job
        self._handoff = handoff
        self._on_event = on_event
        self._on_finished = on_finished
        self._done: "asyncio.Future[Outcome]" = asyncio.get_running_loop().create_future()
        self._events: Optional["asyncio.Queue[tuple[str, Any]]"] = asyncio.Queue() if steps and on_event is None else None
        self.finished = False  # its outcome has been read by next()
        if steps:
            job.on_step = lambda step: handoff(self._deliver, "step", step)
        job.on_done = self._ended

    def start(self) -> "InFlight":
        """Submit the job (RuntimeError once the worker is closed)."""
        self.worker.submit(self.job)
        return self

    @property
    def cancelled(self) -> bool:
        return self.job.cancel.is_set()

    def cancel(self) -> None:
        """Stop it: withdrawn if queued, stopped at its next pass if running."""
        self.worker.cancel(self.job.group, self.job.key)

    async def outcome(self) -> Outcome:
        """The Outcome. If the awaiting task is cancelled (a client's cancel, a hang-up),
        the job's cancel is set, so the model stops at its next pass."""
        try:
            return await asyncio.shield(self._done)
        except asyncio.CancelledError:
            self.job.cancel.set()
            raise

    def add_outcome_callback(self, callback: Callable[[Outcome], None]) -> None:
        """`callback(outcome)` on the loop once the job ends, also after its awaiter gave up."""
        self._done.add_done_callback(lambda future: callback(future.result()))

    async def next(self) -> tuple[str, Any]:
        """The next ("step", DenoiseStep) or ("done", Outcome) (needs steps=True). Past
        STEP_BACKLOG unread steps, steps collapse into the newest one (a step carries the
        whole canvas, so a slow reader gets fewer, fuller snapshots, never a backlog)."""
        assert self._events is not None, "InFlight(..., steps=True) without on_event"
        kind, payload = await self._events.get()
        while kind == "step" and self._events.qsize() > STEP_BACKLOG:
            kind, payload = self._events.get_nowait()
        if kind != "step":
            self.finished = True
        return kind, payload

    async def outcome_or(self, giving_up: "asyncio.Future[Any]") -> Optional[Outcome]:
        """The Outcome, or None once `giving_up` (e.g. the client hanging up) is done first
        (the caller then cancels the job)."""
        done = asyncio.ensure_future(self.outcome())
        await asyncio.wait({done, giving_up}, return_when=asyncio.FIRST_COMPLETED)
        if not done.done():
            done.cancel()
            return None
        self.finished = True
        return done.result()

    def _ended(self, outcome: Outcome) -> None:  # worker thread
        if self._on_finished is not None:
            self._on_finished(outcome)
        self._handoff(self._deliver, "done", outcome)

    def _deliver(self, kind: str, payload: Any) -> None:  # event loop
        if kind == "done" and not self._done.done():
            self._done.set_result(payload)
        if self._on_event is not None:
            self._on_event(self, kind, payload)
        elif self._events is not None:
            self._events.put_nowait((kind, payload))


class Lane:
    """A front end's requests within one group of the worker (whose turn it is: the language
    server; one live connection; one HTTP request). `handoff` None: direct to the loop that
    submits."""

    def __init__(self, worker: EngineWorker, group: Hashable, handoff: Optional[Handoff] = None) -> None:
        self.worker = worker
        self.group = group
        self.handoff = handoff

    def supersede(self, key: Hashable) -> threading.Event:
        """A fresh cancel token for a new request of `key`; the previous one stops now."""
        return self.worker.supersede(self.group, key)

    def cancel(self, key: Hashable) -> None:
        self.worker.cancel(self.group, key)

    def forget(self, key: Hashable) -> None:
        """`key` is over for good: the engine drops its cached context."""
        self.worker.forget(self.group, key)

    def submit(self, key: Hashable, call: Call, cancel: Optional[threading.Event] = None, *, steps: bool = False,
               on_event: Optional[Callable[[InFlight, str, Any], None]] = None,
               on_finished: Optional[Callable[[Outcome], None]] = None) -> InFlight:
        """Submit `call` for `key` (superseding the key's previous request unless `cancel`
        is given) and return it in flight."""
        job = Job(self.group, key, call, cancel if cancel is not None else self.supersede(key))
        handoff = self.handoff or direct_handoff(asyncio.get_running_loop())
        return InFlight(self.worker, job, handoff, steps=steps, on_event=on_event, on_finished=on_finished).start()

    async def run(self, key: Hashable, call: Call, cancel: threading.Event,
                  on_outcome: Optional[Callable[[Outcome], None]] = None) -> Outcome:
        """Submit and await the Outcome; `on_outcome` sees it on the loop even when the
        awaiting task was cancelled meanwhile (the work it cost is counted)."""
        job = Job(self.group, key, call, cancel)
        flight = InFlight(self.worker, job, self.handoff or direct_handoff(asyncio.get_running_loop()))
        if on_outcome is not None:
            flight.add_outcome_callback(on_outcome)
        flight.start()
        return await flight.outcome()


# -- the lifecycle of an editor's request ---------------------------------------------------------

class Runner(Protocol):
    """What runs an editor's calls: infill_lsp/engine_host.EngineHost (the local worker) or
    infill_lsp/remote.RemoteEngineHost (another server)."""

    def supersede(self, key: Hashable) -> threading.Event: ...

    async def run(self, key: Hashable, call: Call, cancel: threading.Event,
                  on_outcome: Optional[Callable[[Outcome], None]] = None) -> Outcome: ...


Status = Literal["ok", "superseded", "cancelled", "stale"]


@dataclass(frozen=True)
class Answer:
    """How a request ended: "ok" (with its result), "superseded" (a newer one replaced it
    before the model ran), "cancelled" (stopped while it ran), "stale" (the document
    changed while the model ran: the result belongs to text that no longer exists)."""

    status: Status
    result: Any = None


class Request:
    """One editor request for `key`: supersede → debounce → run → stale.

        async with Request(runner, key, on_hang_up=...) as request:   # supersedes key's older request
            if not await request.debounce(ms): ...                     # a newer one came meanwhile
            answer = await request.run(call, still_current=...)       # raises the job's error

    A cancel of the awaiting task (the client's $/cancelRequest) sets the cancel token, so
    the model stops at its next pass, and calls `on_hang_up` unless a newer request had
    superseded this one already."""

    def __init__(self, runner: Runner, key: Hashable, *, on_hang_up: Optional[Callable[[], None]] = None) -> None:
        self.runner = runner
        self.key = key
        self.on_hang_up = on_hang_up
        self.cancel = runner.supersede(key)

    async def __aenter__(self) -> "Request":
        return self

    async def __aexit__(self, kind: Any, error: Any, traceback: Any) -> None:
        if kind is not None and issubclass(kind, asyncio.CancelledError):
            superseded = self.cancel.is_set()
            self.cancel.set()
            if not superseded and self.on_hang_up is not None:
                self.on_hang_up()

    @property
    def superseded(self) -> bool:
        return self.cancel.is_set()

    async def debounce(self, ms: float) -> bool:
        """Wait `ms` for a newer request; False when one came (nothing to run)."""
        if ms > 0:
            await asyncio.sleep(ms / 1000)
        return not self.cancel.is_set()

    async def run(self, call: Call, *, still_current: Callable[[], bool],
                  on_outcome: Optional[Callable[[Outcome], None]] = None) -> Answer:
        """Run `call`; raises the job's error (see `user_error`)."""
        outcome = await self.runner.run(self.key, call, self.cancel, on_outcome=on_outcome)
        if not outcome.started:  # superseded while queued behind another model call
            return Answer("superseded")
        if outcome.error is not None:
            raise outcome.error
        result = outcome.result
        if result is None or getattr(result, "stop_reason", None) == "cancelled" or self.cancel.is_set():
            return Answer("cancelled")
        if not still_current():
            return Answer("stale", result)
        return Answer("ok", result)
