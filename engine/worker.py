"""The engine worker: one thread that owns the model, fed by a fair queue of requests.

Every server front end (the language server, the live WebSocket server, next-edit in
both) runs its model work here:

    worker = EngineWorker(engine)                     # its thread starts at once
    cancel = worker.supersede(group, key)             # a newer request for (group, key)
                                                      #   cancels the older one, now
    worker.submit(Job(group, key, InfillCall(prefix, suffix, language, settings),
                      cancel, on_step=..., on_done=...))
    outcome = await worker.run(job)                   # the same, awaited from asyncio
    worker.cancel(group, key)                         # stop (group, key)'s request
    worker.close()

- Requests in: `Job`s. `group` is whose turn it is (a connection; the language server
  is one group), `key` is what a newer request replaces within the group (a document,
  a session). At most one job per (group, key) waits; a newer one takes its place in
  the queue, and turns go round robin across groups, then across a group's keys, so
  one client with many sessions cannot crowd out a client with one.
- Results out: `on_step(DenoiseStep)` for every denoising pass (infill jobs), then
  exactly one `on_done(Outcome)` per submitted job — also for one superseded before
  it ran (`Outcome.started` False). Callbacks run on the worker thread: they must hand
  off (e.g. `loop.call_soon_threadsafe`) and never block.
- Per-request cancel: `job.cancel`, a threading.Event. Set it and the job never starts,
  or the model stops at its next pass (its result then has stop_reason "cancelled").

Batching: infill jobs are denoised together, up to `max_batch` at once (engine/batching.py:
one forward pass per step over every canvas in flight; a job joins at the next pass and
leaves when its middle closes, so a short request never waits for a long one). Reports
stay per job (`on_step`, `on_done`, `cancel`); a job's context cache is kept under its
(group, key), so a session's next request re-encodes only what its user typed. Beyond
`max_batch`, jobs wait in the fair queue, where a newer one still replaces an older.
Next-edit calls run alone, between two passes. `after_pass` (optional) runs on the
thread after every pass: a front end that buffers its callbacks' hand-offs wakes its
event loop there once per pass, not once per frame (each wakeup hands the GIL over).
"""
from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Hashable, Mapping, Optional, Union, cast

from engine.protocols import BatchingEngine, StreamingEngine
from engine.types import DEFAULT_MAX_BATCH, DenoiseStep, InfillError, model_failure

if TYPE_CHECKING:  # engine.batching imports torch: the worker loads it on its thread, when it first batches
    from engine.batching import BatchRunner, Ticket
    from engine.next_edit.suggest import CursorLike, NextEditResult
    from engine.types import InfillResult
    from engine.workspace import WorkspaceContext

log = logging.getLogger("infill.worker")

@dataclass(frozen=True)
class InfillCall:
    """Engine.stream(prefix, suffix, language, cancel, cross_file=..., filename=...,
    detect_language=..., **settings)."""

    prefix: str
    suffix: str
    language: Optional[str] = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    cross_file: str = ""
    # With no language: a file name the client sent, else detection if asked (engine/language.py).
    filename: Optional[str] = None
    detect_language: bool = False
    workspace: Optional["WorkspaceContext"] = None  # where the request's drafts come from (engine/drafts.py)


@dataclass(frozen=True)
class NextEditCall:
    """Engine.next_edit(document, cursor, history, language, cancel, **limits)."""

    document: str
    cursor: "CursorLike"
    history: Any = None  # the edit history as engine.next_edit reads it (EditHistory, or its entries)
    language: Optional[str] = None
    limits: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class Outcome:
    """How a job ended: its result (InfillResult or NextEditResult), or its error (an
    InfillError: the input's fault; a ModelFailure: out of memory, a forward pass that
    timed out or failed), or neither when it never ran."""

    result: Union["InfillResult", "NextEditResult", None] = None
    error: Optional[BaseException] = None
    started: bool = False  # the engine was called (a superseded queued job never is)
    cancelled: bool = False  # its cancel was set by the time it ended


@dataclass(eq=False)
class Job:
    group: Hashable
    key: Hashable
    call: Union[InfillCall, NextEditCall]
    cancel: threading.Event = field(default_factory=threading.Event)
    on_step: Optional[Callable[[DenoiseStep], None]] = None  # called with each DenoiseStep (worker thread)
    on_done: Optional[Callable[[Outcome], None]] = None  # called once (worker thread, or submit's caller)
    received_at: float = field(default_factory=time.monotonic)
    started_at: Optional[float] = None


class FairQueue:
    """Pending jobs: one per (group, key), round robin across groups, then keys."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._pending: "OrderedDict[Hashable, OrderedDict[Hashable, Job]]" = OrderedDict()
        self._closed = False
        self._nudged = False

    def put(self, job: Job) -> Optional[Job]:
        """Queue `job`; returns the older pending job of its (group, key) that it replaced."""
        with self._cond:
            if self._closed:
                raise RuntimeError("the engine worker is closed")
            keys = self._pending.setdefault(job.group, OrderedDict())
            replaced = keys.get(job.key)
            keys[job.key] = job  # an existing key keeps its place in the order
            self._cond.notify()
            return replaced

    def withdraw(self, group: Hashable, key: Hashable) -> Optional[Job]:
        """Remove and return (group, key)'s pending job, if it has not started yet."""
        with self._cond:
            keys = self._pending.get(group)
            if not keys or key not in keys:
                return None
            job = keys.pop(key)
            if not keys:
                del self._pending[group]
            return job

    def __len__(self) -> int:
        with self._cond:
            return sum(len(keys) for keys in self._pending.values())

    def nudge(self) -> None:
        """Wake a waiting `take` (it returns None): the worker has housekeeping to do."""
        with self._cond:
            self._nudged = True
            self._cond.notify_all()

    def take(self, timeout: Optional[float] = None) -> Optional[Job]:
        """The next job in round-robin order; None when closed, nudged, or after `timeout`
        seconds idle."""
        with self._cond:
            deadline = None if timeout is None else time.monotonic() + timeout
            while not self._pending:
                if self._closed or self._nudged:
                    self._nudged = False
                    return None
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return None
                self._cond.wait(remaining)
            group, keys = self._pending.popitem(last=False)
            _, job = keys.popitem(last=False)
            if keys:
                self._pending[group] = keys  # back of the line: the other groups get a turn first
            return job

    @property
    def closed(self) -> bool:
        with self._cond:
            return self._closed

    def close(self) -> list[Job]:
        """Stop handing out jobs; returns the ones still pending."""
        with self._cond:
            self._closed = True
            left = [job for keys in self._pending.values() for job in keys.values()]
            self._pending.clear()
            self._cond.notify_all()
            return left


class EngineWorker:
    """The thread that runs every model call of a server (module docstring)."""

    def __init__(self, engine: Optional[StreamingEngine], *, name: str = "infill-engine", max_batch: Optional[int] = None, after_pass: Optional[Callable[[], None]] = None) -> None:
        self.engine = engine  # may be swapped between jobs (a reloaded model)
        self.queue = FairQueue()
        self.max_batch = max_batch or DEFAULT_MAX_BATCH
        self.after_pass = after_pass
        self.current: Optional[Job] = None  # a next-edit job while it runs
        self.in_batch: dict[int, Job] = {}  # id(job) -> infill job, while the batch has it
        self.completed = 0
        self._runner: Optional["BatchRunner"] = None  # made on the thread (it imports torch)
        self._tokens: dict[tuple[Hashable, Hashable], threading.Event] = {}
        self._tokens_lock = threading.Lock()
        self._forgotten: list[tuple[Hashable, Hashable]] = []  # cached contexts to drop, on the thread
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    # -- requests in -----------------------------------------------------------------------
    def supersede(self, group: Hashable, key: Hashable) -> threading.Event:
        """A fresh cancel token for a new request of (group, key); the previous request of
        (group, key) is cancelled now, whether it waits in a front end (debounce), in the
        queue, or runs."""
        fresh = threading.Event()
        with self._tokens_lock:
            older = self._tokens.get((group, key))
            self._tokens[(group, key)] = fresh
        if older is not None:
            older.set()
        return fresh

    def submit(self, job: Job) -> None:
        """Queue a job; a pending job of the same (group, key) is replaced (and told so)."""
        if job.cancel.is_set():
            self._finish(job, Outcome(cancelled=True))
            return
        replaced = self.queue.put(job)
        if replaced is not None and replaced is not job:
            replaced.cancel.set()
            self._finish(replaced, Outcome(cancelled=True))

    def cancel(self, group: Hashable, key: Hashable) -> None:
        """Stop (group, key)'s request: withdrawn if queued, stopped at its next pass if running."""
        with self._tokens_lock:
            token = self._tokens.pop((group, key), None)
        if token is not None:
            token.set()
        pending = self.queue.withdraw(group, key)
        if pending is not None:
            pending.cancel.set()
            self._finish(pending, Outcome(cancelled=True))

    def forget(self, group: Hashable, key: Hashable) -> None:
        """(group, key) is over for good (a closed session or document, an answered HTTP
        request): the engine's cached context for it is dropped on the worker thread
        before the next pass. Without this, every session that ever ran keeps its context
        (megabytes) until the engine's cache budget pushes it out."""
        with self._tokens_lock:
            self._forgotten.append((group, key))
        self.queue.nudge()

    def pending(self) -> int:
        return len(self.queue)

    async def run(self, job: Job, on_outcome: Optional[Callable[[Outcome], None]] = None) -> Outcome:
        """Submit `job` and await its Outcome from asyncio. `on_outcome` runs on the event
        loop once the job ends, also when the awaiting task was cancelled meanwhile (its
        cancel is then set, so the model stops at its next pass)."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[Outcome] = loop.create_future()
        chained = job.on_done

        def finished(outcome: Outcome) -> None:
            if chained is not None:
                chained(outcome)
            loop.call_soon_threadsafe(_resolve, done, outcome)

        job.on_done = finished
        if on_outcome is not None:
            done.add_done_callback(lambda future: on_outcome(future.result()))
        self.submit(job)
        try:
            return await asyncio.shield(done)
        except asyncio.CancelledError:
            job.cancel.set()
            raise

    def close(self) -> None:
        """Stop taking jobs; pending ones end cancelled, a running one at its next pass."""
        for job in self.queue.close():
            job.cancel.set()
            self._finish(job, Outcome(cancelled=True))
        running = self.current
        if running is not None:
            running.cancel.set()
        for job in list(self.in_batch.values()):
            job.cancel.set()

    def join(self, timeout: Optional[float] = None) -> None:
        """Wait for the thread to end (after `close`)."""
        self._thread.join(timeout)

    # -- the thread ------------------------------------------------------------------------
    def _loop(self) -> None:
        while True:
            self._drop_forgotten()
            runner = self._batch()
            while runner.in_flight < self.max_batch:
                busy = runner.has_work()
                if not busy:
                    self._after_pass()  # nothing handed off may wait while the thread sleeps
                job = self._take(wait=not busy)
                if job is None:
                    break
                if not busy:
                    runner = self._batch()  # the engine may have been swapped while the thread waited
                if isinstance(job.call, InfillCall) and isinstance(runner.engine, BatchingEngine):
                    self._join(runner, job)
                else:  # next-edit; or an engine-shaped object that can only stream one request
                    self._run_alone(job)
            if runner.has_work():
                runner.run_pass()
            self._after_pass()
            if not runner.has_work() and self.queue.closed:
                self._drop_forgotten()  # the last jobs' contexts too (their on_done may have closed the queue)
                return

    def _drop_forgotten(self) -> None:
        with self._tokens_lock:
            keys, self._forgotten = self._forgotten, []
        if isinstance(self.engine, BatchingEngine):  # only a batching engine keeps contexts per key
            for key in keys:
                self.engine.drop_context(key)

    def _batch(self) -> "BatchRunner":
        """The batch runner of the current engine (a new one once a swapped-out engine's
        batch has emptied). An engine that cannot batch (none loaded yet, or one that only
        streams) gets a runner too: nothing ever joins it, so it stays empty."""
        if self._runner is None or (self._runner.engine is not self.engine and not self._runner.has_work()):
            from engine.batching import BatchRunner

            self._runner = BatchRunner(cast(BatchingEngine, self.engine), self.max_batch)
        return self._runner

    def _take(self, wait: bool) -> Optional[Job]:
        """The next job to start, or None (nothing pending without `wait`; closed)."""
        while True:
            job = self.queue.take(timeout=None if wait else 0)
            if job is None or not job.cancel.is_set():
                return job
            self._finish(job, Outcome(cancelled=True))

    def _join(self, runner: "BatchRunner", job: Job) -> None:
        """Hand an infill job to the batch: it joins at the next pass."""
        call = job.call
        assert isinstance(call, InfillCall)
        job.started_at = time.monotonic()
        try:
            engine_job = runner.engine.job(call.prefix, call.suffix, call.language, job.cancel, cross_file=call.cross_file, cache_key=(job.group, job.key), filename=call.filename, detect_language=call.detect_language, workspace=call.workspace, **call.settings)
        except Exception as error:  # bad input or settings: this job's outcome, not the thread's end
            if not isinstance(error, InfillError):
                log.exception("the engine failed on a request")
            self._finish(job, Outcome(error=for_front_end(error), started=True, cancelled=job.cancel.is_set()))
            self.completed += 1
            return
        self.in_batch[id(job)] = job
        runner.submit(engine_job, on_step=lambda step: self._step(job, step), on_done=lambda ticket: self._batch_done(job, ticket))

    def _step(self, job: Job, step: DenoiseStep) -> None:
        if step.result is None and job.on_step is not None and not job.cancel.is_set():
            job.on_step(step)

    def _batch_done(self, job: Job, ticket: "Ticket") -> None:
        self.in_batch.pop(id(job), None)
        self.completed += 1
        if ticket.error is not None:
            outcome = Outcome(error=for_front_end(ticket.error), started=True, cancelled=job.cancel.is_set())
        elif ticket.job.run is None:  # cancelled while it waited to join: the engine never ran it
            outcome = Outcome(cancelled=True)
        else:
            outcome = Outcome(result=ticket.final.result, started=True, cancelled=job.cancel.is_set())
        self._finish(job, outcome)

    def _run_alone(self, job: Job) -> None:
        """A job run start to end by itself, between two passes of the batch."""
        self.current, job.started_at = job, time.monotonic()
        try:
            outcome = self._run(job)
        finally:
            self.current = None
            self.completed += 1
        self._finish(job, outcome)

    def _run(self, job: Job) -> Outcome:
        try:
            if isinstance(job.call, NextEditCall):
                call = job.call
                result = self.engine.next_edit(call.document, call.cursor, call.history, language=call.language, cancel=job.cancel, **call.limits)
                return Outcome(result=result, started=True, cancelled=job.cancel.is_set())
            return self._stream(job)
        except Exception as error:  # reported to the front end; a bad request must not end the thread
            if not isinstance(error, InfillError):
                log.exception("the engine failed on a request")
            return Outcome(error=for_front_end(error), started=True, cancelled=job.cancel.is_set())

    def _stream(self, job: Job) -> Outcome:
        """Run an infill job alone, pass by pass: steps out while it is wanted, then the result."""
        call = job.call
        assert isinstance(call, InfillCall)
        stream = self.engine.stream(call.prefix, call.suffix, call.language, job.cancel, cross_file=call.cross_file, filename=call.filename, detect_language=call.detect_language, workspace=call.workspace, **call.settings)
        try:
            for step in stream:
                if step.result is not None:
                    return Outcome(result=step.result, started=True, cancelled=job.cancel.is_set())
                if job.on_step is not None and not job.cancel.is_set():
                    job.on_step(step)
        finally:
            stream.close()
        raise RuntimeError("the engine stream ended without a result")

    def _after_pass(self) -> None:
        if self.after_pass is not None:
            try:
                self.after_pass()
            except Exception:  # a front end's hook must not end the thread
                log.exception("an engine worker after_pass hook failed")

    def _finish(self, job: Job, outcome: Outcome) -> None:
        with self._tokens_lock:
            if self._tokens.get((job.group, job.key)) is job.cancel:
                del self._tokens[(job.group, job.key)]  # (group, key) is idle again
        if job.on_done is None:
            return
        try:
            job.on_done(outcome)
        except Exception:  # a front end's callback must not end the thread
            log.exception("an engine worker callback failed")


def for_front_end(error: BaseException) -> BaseException:
    """The error a job's Outcome carries: an InfillError as it is (the input's fault; its
    message is for the user), anything else (out of memory, a timed-out or failing forward
    pass, a bug) as an engine.types.ModelFailure saying so in one sentence, with the
    original as its cause. The thread itself goes on with the next job."""
    if isinstance(error, InfillError):
        return error
    failure = model_failure(error)
    if failure is not error:
        failure.__cause__ = error
    return failure


class LoopInbox:
    """Hands the worker thread's callbacks to an asyncio loop, one wakeup per pass.

    `post(fn, *args)` (worker thread) only buffers; `wake()`, the worker's `after_pass`,
    schedules everything buffered with one `call_soon_threadsafe`. Every wakeup hands the
    GIL to the loop thread and back: once per step frame, that cost the engine thread a
    fifth of its time when a batched pass delivered a frame to each of 32 sessions."""

    def __init__(self) -> None:
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._posted: list[tuple[Callable[..., None], tuple[Any, ...]]] = []
        self._scheduled = False  # a wakeup is on its way: it will take what is posted meanwhile
        self._lock = threading.Lock()

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    def post(self, callback: Callable[..., None], *args: Any) -> None:
        with self._lock:
            self._posted.append((callback, args))

    def wake(self) -> None:
        with self._lock:
            if not self._posted or self._loop is None or self._scheduled:
                return
            self._scheduled = True
        try:
            self._loop.call_soon_threadsafe(self._run)
        except RuntimeError:
            pass  # the loop is closed: the server is shutting down

    def _run(self) -> None:
        with self._lock:
            posted, self._posted, self._scheduled = self._posted, [], False
        for callback, args in posted:
            try:
                callback(*args)
            except Exception:  # one connection's bug must not lose the others' frames
                log.exception("an engine event failed on the event loop")


def _resolve(future: "asyncio.Future[Outcome]", outcome: Outcome) -> None:
    if not future.done():
        future.set_result(outcome)
