"""The compute dtype of infill's own model directories (engine/precision.py `compute_dtype`):
bf16 where the CPU multiplies bf16 in hardware, fp32 elsewhere, overridable, and a bad
value is a clear error."""
from __future__ import annotations

import pytest
import torch

import engine.api
import engine.precision
from engine.precision import compute_dtype, native_bf16_cpu
from engine.types import InfillError

# Both compute dtypes, for tests of properties each must keep (tests/test_batch_independence.py,
# tests/test_lookahead.py). bf16 is the default, and its rows' independence promised, only on
# a CPU that multiplies bf16 in hardware; elsewhere it is emulated and those cases skip.
BOTH_DTYPES = ["fp32", pytest.param("bf16", marks=pytest.mark.skipif(not native_bf16_cpu(), reason="bf16 is the default only on a CPU with native bf16 (engine/precision.py)"))]


def test_auto_is_bf16_only_on_a_cpu_with_native_bf16(monkeypatch):
    monkeypatch.delenv("INFILL_DTYPE", raising=False)
    monkeypatch.setattr(engine.precision, "native_bf16_cpu", lambda: True)
    assert compute_dtype(None, "cpu") == torch.bfloat16
    assert compute_dtype("auto", "cpu") == torch.bfloat16
    assert compute_dtype(None, "cuda") == torch.float32  # not measured on a GPU: unchanged there
    monkeypatch.setattr(engine.precision, "native_bf16_cpu", lambda: False)
    assert compute_dtype(None, "cpu") == torch.float32


def test_an_explicit_choice_or_the_environment_wins(monkeypatch):
    monkeypatch.setattr(engine.precision, "native_bf16_cpu", lambda: True)
    monkeypatch.setenv("INFILL_DTYPE", "fp32")
    assert compute_dtype(None) == torch.float32
    assert compute_dtype("bf16") == torch.bfloat16  # the caller's argument before the environment
    monkeypatch.setattr(engine.precision, "native_bf16_cpu", lambda: False)
    monkeypatch.setenv("INFILL_DTYPE", "BF16")
    assert compute_dtype(None) == torch.bfloat16


@pytest.mark.parametrize("bad", ["fp16", "int8", "32"])
def test_a_bad_dtype_is_a_clear_error(monkeypatch, bad):
    monkeypatch.delenv("INFILL_DTYPE", raising=False)
    with pytest.raises(InfillError, match="^dtype must be one of auto, fp32, bf16, not"):
        compute_dtype(bad)
    monkeypatch.setenv("INFILL_DTYPE", bad)
    with pytest.raises(InfillError, match="^INFILL_DTYPE must be one of auto, fp32, bf16, not"):
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


def test_rows_are_rounded_up_to_a_bounded_few_sizes():
    from engine.precision import row_bucket

    sizes = {row_bucket(rows) for rows in range(1, 4097)}
    assert len(sizes) <= 60
    assert [row_bucket(r) for r in (1, 2, 3, 5, 8, 9, 64, 65, 100, 512, 513)] == [1, 2, 4, 8, 8, 16, 64, 96, 128, 512, 640]
    assert all(rows <= row_bucket(rows) <= max(rows * 2, 8) for rows in range(1, 4097))


@pytest.mark.skipif(not engine.precision.native_bf16_cpu(), reason="rows are padded only where bf16 is the default: a CPU that multiplies bf16 in hardware")
def test_a_bucketed_linear_gives_each_row_what_nn_linear_gives_it():
    """In bf16 (where it is used: fp32's MKL kernels sum a row differently for another
    number of rows, so fp32 is never padded) the padding changes no bit of a row."""
    from engine.precision import bucket_rows

    dtype = torch.bfloat16
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 672, bias=False), torch.nn.Linear(672, 96)).to(dtype)
    assert bucket_rows(model) == 2
    for rows in list(range(1, 80)) + [100, 333, 517]:
        x = torch.randn(1, rows, 256, dtype=dtype)
        out = model(x)
        assert out.shape == (1, rows, 96)
        reference = torch.nn.functional.linear(torch.nn.functional.linear(x, model[0].weight), model[1].weight, model[1].bias)
        assert torch.equal(out, reference), rows


def test_the_embedded_model_in_bf16_keeps_its_tied_head_and_pads_no_answer(tiny_model_dir):
    from engine.precision import RowBucketedLinear

    eng = engine.api.load(tiny_model_dir, dtype="bf16")
    linears = [m for m in eng.model.modules() if isinstance(m, torch.nn.Linear)]
    assert linears and all(type(m) is RowBucketedLinear for m in linears)
    if eng.model.cfg.tie_embeddings:
        assert eng.model.lm_head.weight is eng.model.embed.weight
    assert all(type(m) is torch.nn.Linear for m in engine.api.load(tiny_model_dir, dtype="fp32").model.modules() if isinstance(m, torch.nn.Linear))
