"""`infill/stats`: shown/accepted counts, latency percentiles, avoided model passes."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..server import InfillServer

STATS_METHOD = "infill/stats"


def register(server: "InfillServer") -> None:
    @server.feature(STATS_METHOD)
    def stats(ls: "InfillServer", params: Any) -> dict:
        snapshot = ls.stats.snapshot()
        snapshot["model"] = ls.engine.model_name
        snapshot["open_documents"] = len(ls.documents)
        return snapshot
