"""Smoke run of scripts/gpu_family_bench.py on CPU with a tiny Dream-layout checkpoint."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from lab.fixtures.family_checkpoints import make_tiny_checkpoint  # noqa: E402

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "gpu_family_bench.py"


def _bench():
    spec = importlib.util.spec_from_file_location("gpu_family_bench", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_bench_smoke_on_cpu(tmp_path):
    ck = make_tiny_checkpoint("dream", tmp_path / "dream", hidden=32, layers=1, heads=2)
    out = tmp_path / "bench.json"
    rc = _bench().main([str(ck.path), "--device", "cpu", "--modes", "none,int8", "--repeats", "1", "--threads", "1", "--fidelity-policies", "exact,block", "--out", str(out)])
    report = json.loads(out.read_text())
    assert rc == 0 and report["model"]["family"] == "dream"
    for mode in ("none", "int8"):
        for scenario in ("single_line", "tokens_64"):
            s = report["modes"][mode][scenario]
            assert s["runs"] == 4 and s["forwards"] > 0 and s["tokens_per_forward"] > 0 and s["latency_ms_p50"] > 0
    exact, block = report["modes"]["none"]["cache_fidelity"]
    assert exact["policy"] == "exact" and exact["max_rel_err"] == 0.0 and exact["same_middle"] == 1.0
    assert block["policy"] == "block" and block["refreshes_per_infill"] < exact["refreshes_per_infill"]


def test_bench_records_modes_past_the_budget_as_skipped(tmp_path):
    ck = make_tiny_checkpoint("llada", tmp_path / "llada", hidden=32, layers=1, heads=2)
    out = tmp_path / "bench.json"
    rc = _bench().main([str(ck.path), "--device", "cpu", "--modes", "none,nf4", "--budget-s", "0", "--out", str(out)])
    assert rc == 0 and json.loads(out.read_text())["modes"] == {"none": {"skipped": "time budget"}, "nf4": {"skipped": "time budget"}}
