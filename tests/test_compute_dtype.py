"""The compute dtype of infill's own model directories (engine/api.py `compute_dtype`):
bf16 where the CPU multiplies bf16 in hardware, fp32 elsewhere, overridable, and a bad
value is a clear error."""
from __future__ import annotations

import pytest
import torch

import engine.api
from engine.api import compute_dtype
from engine.types import InfillError


def test_auto_is_bf16_only_on_a_cpu_with_native_bf16(monkeypatch):
    monkeypatch.delenv("INFILL_DTYPE", raising=False)
    monkeypatch.setattr(engine.api, "native_bf16_cpu", lambda: True)
    assert compute_dtype(None, "cpu") == torch.bfloat16
    assert compute_dtype("auto", "cpu") == torch.bfloat16
    assert compute_dtype(None, "cuda") == torch.float32  # not measured on a GPU: unchanged there
    monkeypatch.setattr(engine.api, "native_bf16_cpu", lambda: False)
    assert compute_dtype(None, "cpu") == torch.float32


def test_an_explicit_choice_or_the_environment_wins(monkeypatch):
    monkeypatch.setattr(engine.api, "native_bf16_cpu", lambda: True)
    monkeypatch.setenv("INFILL_DTYPE", "fp32")
    assert compute_dtype(None) == torch.float32
    assert compute_dtype("bf16") == torch.bfloat16  # the caller's argument before the environment
    monkeypatch.setattr(engine.api, "native_bf16_cpu", lambda: False)
    monkeypatch.setenv("INFILL_DTYPE", "BF16")
    assert compute_dtype(None) == torch.bfloat16


@pytest.mark.parametrize("bad", ["fp16", "int8", "32"])
def test_a_bad_dtype_is_a_clear_error(monkeypatch, bad):
    monkeypatch.delenv("INFILL_DTYPE", raising=False)
    with pytest.raises(InfillError, match="dtype must be one of auto, fp32, bf16"):
        compute_dtype(bad)
    monkeypatch.setenv("INFILL_DTYPE", bad)
    with pytest.raises(InfillError, match="INFILL_DTYPE"):
        compute_dtype(None)


def test_a_bf16_engine_computes_in_bf16_and_answers_with_fp32_logits(tiny_model_dir):
    eng = engine.api.load(tiny_model_dir, dtype="bf16")
    assert eng.info["dtype"] == "bfloat16"
    assert {p.dtype for p in eng.model.parameters()} == {torch.bfloat16}
    job = eng.job("def add(a, b):\n    return ", "\n", "python", max_tokens=4)
    job.prepare()
    ids = job.canvas_ids()
    logits = job.forward(torch.tensor(ids))
    assert logits.dtype == torch.float32 and logits.shape == (len(ids), eng.model.cfg.vocab_size)
    result = eng.infill("def add(a, b):\n    return ", "\n", language="python", max_tokens=4)
    assert result.forwards >= 1 and result.stop_reason
    assert engine.api.load(tiny_model_dir, dtype="fp32").info["dtype"] == "float32"
