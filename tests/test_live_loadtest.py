"""A short run of the live load test: a real `infill serve` child process on a tiny model,
many sessions over few connections, every frame checked for routing and lifecycle."""
from __future__ import annotations

import json

import pytest

from lab.loadtest import live as loadtest


def test_short_load_run_has_no_protocol_errors_or_misrouted_frames(capsys: pytest.CaptureFixture[str]) -> None:
    status = loadtest.main(["--seconds", "4", "--sessions", "24", "--connections", "6", "--max-tokens", "6",
                            "--tiny-model", "--json"])
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["violations"] == []
    assert status == 0
    assert summary["results"] >= 1 and summary["steps"] >= summary["results"]
    assert summary["requests"] == summary["results"] + summary["cancelled"]
    assert summary["first_frame_ms"]["p50"] is not None and summary["result_ms"]["p99"] is not None
    assert summary["server_rss_mib"]["samples"] >= 1
