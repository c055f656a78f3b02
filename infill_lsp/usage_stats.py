"""Usage figures for `infill/stats`: kept in this process only, never sent anywhere."""
from __future__ import annotations

import math
import time
from collections import Counter, deque
from dataclasses import dataclass, field


def percentile(samples: list[float], fraction: float) -> float | None:
    """Nearest-rank percentile (None for no samples)."""
    if not samples:
        return None
    ordered = sorted(samples)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


# Always reported (as 0 until they happen), so clients can diff two snapshots.
OUTCOMES = (
    "requests", "shown", "empty", "accepted", "cache_hits", "superseded_before_model",
    "cancelled_by_client", "cancelled_during_model", "model_runs", "forwards",
    "model_unavailable", "errors", "model_failures", "stale",
)


@dataclass
class Stats:
    """Counters by outcome and the latency of the last `window` answered requests."""

    window: int = 2000
    started: float = field(default_factory=time.monotonic)
    counts: Counter = field(default_factory=Counter)
    _latency_ms: deque = field(init=False)
    _model_ms: deque = field(init=False)

    def __post_init__(self) -> None:
        self._latency_ms = deque(maxlen=self.window)
        self._model_ms = deque(maxlen=self.window)

    def count(self, outcome: str, amount: int = 1) -> None:
        self.counts[outcome] += amount

    def answered(self, latency_ms: float, shown: bool) -> None:
        """A request answered (not cancelled): its time from arrival to answer."""
        self._latency_ms.append(latency_ms)
        self.counts["shown" if shown else "empty"] += 1

    def model_ran(self, ms: float, forwards: int) -> None:
        self._model_ms.append(ms)
        self.counts["model_runs"] += 1
        self.counts["forwards"] += forwards

    def snapshot(self) -> dict:
        latency = list(self._latency_ms)
        model = list(self._model_ms)
        shown = self.counts["shown"]

        def rounded(value: float | None) -> float | None:
            return None if value is None else round(value, 2)

        return {
            "uptime_s": round(time.monotonic() - self.started, 1),
            "counts": dict(sorted({**dict.fromkeys(OUTCOMES, 0), **self.counts}.items())),
            "shown": shown,
            "accepted": self.counts["accepted"],
            "acceptance_rate": round(self.counts["accepted"] / shown, 4) if shown else None,
            "latency_ms": {
                "samples": len(latency),
                "p50": rounded(percentile(latency, 0.50)),
                "p90": rounded(percentile(latency, 0.90)),
                "p99": rounded(percentile(latency, 0.99)),
            },
            "model_ms": {
                "samples": len(model),
                "p50": rounded(percentile(model, 0.50)),
                "p99": rounded(percentile(model, 0.99)),
            },
            "note": "kept in this server process only; nothing leaves the machine",
        }
