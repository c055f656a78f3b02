"""The engine thread: takes jobs from the scheduler and streams denoising steps back.

Model passes block, so one thread runs them all, off the event loop, for every job in
flight at once (continuous batching). The thread never waits on a client: it hands each
frame to the job's `deliver` callback, which only schedules work on the event loop.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable, Optional

from .scheduler import FairScheduler, Job


def step_payload(step: Any, job: Job) -> dict[str, Any]:
    """A DenoiseStep as the body of a `step` frame (positions that changed, plus the canvas)."""
    return {
        "step": step.step,
        "changes": [
            {"position": change.position, "text": change.text,
             "confidence": round(float(change.confidence), 4), "kind": change.kind}
            for change in step.changes
        ],
        "canvas": list(step.canvas),
        "masked": sum(1 for piece in step.canvas if piece is None),
        "forwards": step.forwards,
        "ms": round(float(step.ms), 3),
        "elapsed_ms": round((time.monotonic() - job.received_at) * 1000.0, 3),
    }


def result_payload(result: Any, job: Job) -> dict[str, Any]:
    stats = result.to_dict()
    middle = stats.pop("middle")
    now = time.monotonic()
    started = job.started_at if job.started_at is not None else now
    return {
        "text": middle,
        "stats": stats,
        "queue_ms": round((started - job.received_at) * 1000.0, 3),
        "elapsed_ms": round((now - job.received_at) * 1000.0, 3),
    }


class EngineWorker(threading.Thread):
    """Denoises the scheduler's jobs together, one forward pass per step for all of them.

    Up to `max_batch` jobs are in flight in one BatchRunner (engine/batching.py): a job
    joins at the next pass and leaves as soon as its result is out, so a short request
    never waits for a long one. Beyond that, jobs wait in the fair scheduler, where a newer
    request of the same session still replaces a queued one.
    """

    def __init__(self, engine: Any, scheduler: FairScheduler, error_type: type[BaseException], max_batch: Optional[int] = None,
                 after_pass: Optional[Callable[[], None]] = None) -> None:
        super().__init__(name="infill-live-engine", daemon=True)
        from engine.batching import DEFAULT_MAX_BATCH, BatchRunner  # deferred: importing torch takes seconds

        self.engine = engine
        self.scheduler = scheduler
        self.error_type = error_type  # engine.InfillError: its message is safe to show to clients
        self.runner = BatchRunner(engine, max_batch or DEFAULT_MAX_BATCH)
        self.in_flight: dict[int, Job] = {}  # id(job) -> job, while the runner has it
        self.completed = 0
        self.after_pass = after_pass  # e.g. wake the event loop once for all frames of a pass

    def run(self) -> None:
        while True:
            while self.runner.in_flight < self.runner.max_batch:
                busy = self.runner.has_work()
                if not busy:
                    self._flush()  # before waiting: nothing posted may wait with us
                job = self.scheduler.next(timeout=0 if busy else None)
                if job is None:
                    break
                self._start(job)
            if self.runner.has_work():
                self.runner.run_pass()
            self._flush()
            if not self.runner.has_work() and self.scheduler.closed:
                return

    def _flush(self) -> None:
        if self.after_pass is not None:
            self.after_pass()

    def cancel_all(self) -> None:
        """Cancel every job in flight (server shutdown); each ends at its next pass."""
        for job in list(self.in_flight.values()):
            job.cancel.set()

    def _start(self, job: Job) -> None:
        if job.cancel.is_set():
            return
        job.started_at = time.monotonic()
        try:
            # Keyed by session: its next request re-encodes only what the user typed.
            engine_job = self.engine.job(job.prefix, job.suffix, job.language, job.cancel,
                                         cache_key=("live", job.connection, job.session), **job.settings)
        except self.error_type as exc:
            job.deliver("error", {"code": "engine_error", "message": str(exc)})
            return
        self.in_flight[id(job)] = job
        self.runner.submit(engine_job, on_step=lambda step: self._on_step(job, step), on_done=lambda ticket: self._on_done(job, ticket))

    def _on_step(self, job: Job, step: Any) -> None:
        if job.cancel.is_set():
            return  # the event loop already told the client; drop the rest
        if step.result is None:
            job.deliver("step", step_payload(step, job))
        elif step.changes:  # the final step's changes still matter to a live view: send them first
            job.deliver("step", step_payload(step, job))

    def _on_done(self, job: Job, ticket: Any) -> None:
        self.in_flight.pop(id(job), None)
        self.completed += 1
        if job.cancel.is_set():
            return
        if ticket.error is None:
            job.deliver("result", result_payload(ticket.final.result, job))
        elif isinstance(ticket.error, self.error_type):
            job.deliver("error", {"code": "engine_error", "message": str(ticket.error)})
        else:  # a bug in the engine must not take the server down (the runner logged it)
            job.deliver("error", {"code": "internal_error", "message": "the engine failed; see the server log"})
