"""`infill/stats`: shown/accepted counts, latency percentiles, avoided model passes."""
from __future__ import annotations

from typing import Any
from .host import LspServer


STATS_METHOD = "infill/stats"


def register(server: "LspServer") -> None:
    @server.feature(STATS_METHOD)
    def stats(ls: "LspServer", params: Any) -> dict:
        snapshot = ls.stats.snapshot()
        snapshot["model"] = ls.engine.model_name
        snapshot["open_documents"] = len(ls.documents)
        snapshot["workspace"] = ls.workspace_folders.status()
        return snapshot
