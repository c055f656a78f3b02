"""Engine output as live-protocol frames: a DenoiseStep as a `step`, an InfillResult as a `result`.

Pure functions of the engine's typed output and the job's clock; the connection sends them.
"""
from __future__ import annotations

import time
from typing import Any

from engine.types import DenoiseStep, InfillResult
from engine.worker import Job

from ..empty_answer import LIVE_KNOBS, explain_empty


def step_payload(step: DenoiseStep, job: Job) -> dict[str, Any]:
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


def result_payload(result: InfillResult, job: Job) -> dict[str, Any]:
    """An InfillResult as the body of a `result` frame, with the time it queued and, for an
    empty answer, `explanation`: why there is nothing to insert (infill_lsp/empty_answer.py)."""
    stats = result.to_dict()
    middle = stats.pop("middle")
    now = time.monotonic()
    started = job.started_at if job.started_at is not None else now
    payload: dict[str, Any] = {
        "text": middle,
        "stats": stats,
        "queue_ms": round((started - job.received_at) * 1000.0, 3),
        "elapsed_ms": round((now - job.received_at) * 1000.0, 3),
    }
    if not middle.strip():  # why there is nothing to insert, in the words `infill complete` prints
        payload["explanation"] = explain_empty(result.stop_reason, knobs=LIVE_KNOBS)
    return payload
