"""The CPU twin of scripts/gpu_quant_bench.py: same checks, Triton interpreter, small shapes."""
from __future__ import annotations

import os

import json
import subprocess
import sys
from pathlib import Path

import pytest

if os.environ.get("CI"):
    import triton  # noqa: F401  (CI installs the test extra: a missing triton must fail, not skip)
else:
    triton = pytest.importorskip("triton")
ROOT = Path(__file__).resolve().parent.parent


def test_gpu_bench_interpreter_twin_passes(tmp_path: Path) -> None:
    out = tmp_path / "twin.json"
    # A subprocess: TRITON_INTERPRET must be set before triton is imported.
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gpu_quant_bench.py"), "--interpret", "--small", "--out", str(out)],
        capture_output=True, text=True, timeout=240, cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    results = json.loads(out.read_text())
    assert results["all_passed"] and results["interpret"]
    kernels = {c.get("kernel") for c in results["cases"]}
    assert {"int8_matmul", "int4_matmul", "canvas_attention"} <= kernels
    model_checks = [c for c in results["cases"] if "check" in c]
    assert len(model_checks) == 2
    # The kernel route and the torch route are different code: equal to ~1e-7, not identical.
    assert all(0 < c["max_rel_err"] <= c["bound"] for c in model_checks)
