"""Each checkpoint family answers the batch contract end to end (`infill batch --model DIR`)."""
import json
import os
import subprocess
import sys

import pytest

from lab.fixtures.family_checkpoints import make_tiny_checkpoint

FAMILIES = ["dream", "dreamon", "llada", "open_dcoder"]


@pytest.mark.parametrize("family", FAMILIES)
def test_batch_contract_with_each_tiny_family(tmp_path, family):
    ckpt = make_tiny_checkpoint(family, tmp_path / family)
    model_dir = ckpt.path
    lines = [
        json.dumps({"id": "a", "prefix": "def f(x):\n    return ", "suffix": "\n", "max_tokens": 6, "constrained": False}),
        json.dumps({"id": "b", "prefix": "x = [1, 2", "suffix": "]\n", "language": "python", "max_tokens": 4}),
        "not json",
    ]
    out = subprocess.run([sys.executable, "-m", "infill_lsp.cli", "batch", "--model", str(model_dir)], input="\n".join(lines) + "\n",
                         capture_output=True, text=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert out.returncode == 0, out.stderr
    rows = [json.loads(l) for l in out.stdout.splitlines()]
    assert [r["id"] for r in rows] == ["a", "b", None]
    for row in rows[:2]:
        assert isinstance(row["middle"], str) and row["forwards"] >= 1 and row["tokens"] <= 6
    assert "error" in rows[2]
