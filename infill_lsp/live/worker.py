"""The engine thread: takes jobs from the scheduler and streams denoising steps back.

Engine calls block (and the engine serialises them anyway), so one thread runs them all,
off the event loop. The thread never waits on a client: it hands each frame to the job's
`deliver` callback, which only schedules work on the event loop.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Any, Optional

from .scheduler import FairScheduler, Job

log = logging.getLogger("infill.live")


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
    def __init__(self, engine: Any, scheduler: FairScheduler, error_type: type[BaseException]) -> None:
        super().__init__(name="infill-live-engine", daemon=True)
        self.engine = engine
        self.scheduler = scheduler
        self.error_type = error_type  # engine.InfillError: its message is safe to show to clients
        self.current: Optional[Job] = None
        self.completed = 0

    def run(self) -> None:
        while True:
            job = self.scheduler.next()
            if job is None:
                return
            if job.cancel.is_set():
                continue
            self.current = job
            try:
                self._run_one(job)
            finally:
                self.current = None
                self.completed += 1

    def _run_one(self, job: Job) -> None:
        job.started_at = time.monotonic()
        finished = False
        try:
            stream = self.engine.stream(job.prefix, job.suffix, language=job.language, cancel=job.cancel,
                                        **job.settings)
            try:
                for step in stream:
                    if job.cancel.is_set():
                        return  # the event loop already told the client; drop the rest
                    if step.result is not None:
                        # The final step's changes still matter to a live view: send them first.
                        if step.changes:
                            job.deliver("step", step_payload(step, job))
                        job.deliver("result", result_payload(step.result, job))
                        finished = True
                        return
                    job.deliver("step", step_payload(step, job))
            finally:
                stream.close()  # closing the generator is the engine's other cancellation path
        except self.error_type as exc:
            finished = True
            job.deliver("error", {"code": "engine_error", "message": str(exc)})
        except Exception:  # a bug in the engine must not take the server down
            finished = True
            log.exception("engine failed on a live request")
            job.deliver("error", {"code": "internal_error", "message": "the engine failed; see the server log"})
        finally:
            if not finished and not job.cancel.is_set():
                job.deliver("error", {"code": "internal_error", "message": "the engine stream ended without a result"})
