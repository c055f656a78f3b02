"""Triton kernels of engine.quant against their torch references, in the interpreter.

TRITON_INTERPRET=1 must be in the environment before triton is first imported in the
process (triton.language's own jit helpers are decorated at that import), and in a
full pytest run other modules (bitsandbytes, the families tests) import triton first.
So this module only runs in a process started with TRITON_INTERPRET=1:
tests/test_quant_triton.py starts one (`TRITON_INTERPRET=1 pytest` on this file works
too); anywhere else it skips itself.
bfloat16 is not covered here: triton 3.9's interpreter mis-converts to and from bf16
(numpy has no bf16), so bf16 is checked on the GPU by scripts/gpu_quant_bench.py.
"""
from __future__ import annotations

import os

import pytest
import torch

if os.environ.get("TRITON_INTERPRET") != "1":
    pytest.skip("runs in its own TRITON_INTERPRET=1 process, started by tests/test_quant_triton.py", allow_module_level=True)

import triton  # noqa: E402,F401  (a hard import: in that process triton must exist)

from engine.quant import formats  # noqa: E402
from lab.quant.attention import canvas_attention_ref  # noqa: E402
from lab.quant.triton_attention import canvas_attention  # noqa: E402
from engine.quant.triton_kernels import MatmulConfig, _int8_matmul_kernel, int4_matmul, int8_matmul  # noqa: E402

# Error bound per output, relative to sum_k |x_k w_k| (so it is scale free): float32 is
# computed in IEEE fp32 by both sides; fp16 rounds the output (2^-11) and the activations
# that feed the kernel's dot.
RTOL = {torch.float32: 1e-5, torch.float16: 2e-3}

# (M rows, K in, N out): single row, odd everything, more rows than one block.
SHAPES = [(1, 64, 48), (5, 70, 33), (17, 200, 130), (40, 97, 65)]


def test_kernels_run_interpreted() -> None:
    from triton.runtime.interpreter import InterpretedFunction

    assert isinstance(_int8_matmul_kernel, InterpretedFunction), (
        "engine.quant.triton_kernels was imported before TRITON_INTERPRET=1 was set; run this module in a fresh process"
    )


def _check(y: torch.Tensor, ref: torch.Tensor, scale: torch.Tensor, dtype: torch.dtype) -> None:
    assert y.dtype == dtype and y.shape == ref.shape
    rel = ((y.float() - ref.float()).abs() / scale.clamp_min(1e-12)).max().item()
    assert rel <= RTOL[dtype], f"max error {rel:.2e} of sum|x w| exceeds {RTOL[dtype]:.0e}"


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("split_k", [1, 2])
def test_int8_matmul_matches_reference(shape: tuple[int, int, int], dtype: torch.dtype, split_k: int) -> None:
    M, K, N = shape
    g = torch.Generator().manual_seed(hash((shape, split_k)) % 2**31)
    x = torch.randn(M, K, generator=g).to(dtype)
    q, s = formats.quantize_int8(torch.randn(N, K, generator=g) * 0.05)
    cfg = MatmulConfig(block_m=16, block_n=32, block_k=32, split_k=split_k)
    y = int8_matmul(x, q, s, cfg)
    ref = formats.int8_linear_ref(x.float(), q, s)
    _check(y, ref, x.float().abs() @ formats.dequantize_int8(q, s).abs().T, dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("group_size,block_k,split_k", [(32, 32, 1), (64, 32, 3), (128, 64, 1)])
def test_int4_matmul_matches_reference(shape: tuple[int, int, int], dtype: torch.dtype, group_size: int, block_k: int, split_k: int) -> None:
    M, K, N = shape
    g = torch.Generator().manual_seed(hash((shape, group_size)) % 2**31)
    x = torch.randn(M, K, generator=g).to(dtype)
    w = torch.randn(N, K, generator=g) * 0.05 + 0.01  # off-centre: the group minimum term matters
    packed, scales, mins = formats.quantize_int4(w, group_size)
    cfg = MatmulConfig(block_m=16, block_n=32, block_k=block_k, split_k=split_k)
    y = int4_matmul(x, packed, scales, mins, group_size, cfg)
    ref = formats.int4_linear_ref(x.float(), packed, scales, mins, group_size)
    deq = formats.dequantize_int4(packed, scales, mins, group_size, K)
    _check(y, ref, x.float().abs() @ deq.abs().T, dtype)


def test_default_config_handles_leading_dims_and_strided_input() -> None:
    torch.manual_seed(0)
    base = torch.randn(2, 3, 2 * 96)
    x = base[..., ::2]  # (2, 3, 96), non-contiguous last dimension
    q, s = formats.quantize_int8(torch.randn(40, 96))
    torch.testing.assert_close(int8_matmul(x, q, s), formats.int8_linear_ref(x, q, s), rtol=1e-5, atol=1e-5)
    packed, scales, mins = formats.quantize_int4(torch.randn(40, 96), 32)
    torch.testing.assert_close(
        int4_matmul(x, packed, scales, mins, 32), formats.int4_linear_ref(x, packed, scales, mins, 32), rtol=1e-5, atol=1e-5
    )


def test_int4_matmul_rejects_mismatched_shapes() -> None:
    packed, scales, mins = formats.quantize_int4(torch.randn(8, 64), 32)
    with pytest.raises(ValueError):
        int4_matmul(torch.randn(2, 30), packed, scales, mins, 32)  # 30 features, weight holds 33..64
    with pytest.raises(ValueError):
        int4_matmul(torch.randn(2, 64), packed, scales, mins, 64)  # wrong group size for these scales


# (B canvases, H heads, N canvas, S suffix, P prefix, D head dim)
ATTN_SHAPES = [(1, 2, 1, 0, 0, 32), (1, 2, 5, 0, 7, 32), (3, 2, 17, 9, 40, 24), (2, 3, 16, 70, 33, 16)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("shape", ATTN_SHAPES)
def test_canvas_attention_matches_reference(shape: tuple[int, ...], dtype: torch.dtype) -> None:
    B, H, N, S, P, D = shape
    g = torch.Generator().manual_seed(hash(shape) % 2**31)
    rnd = lambda *s: (torch.randn(*s, generator=g) * 2).to(dtype)  # noqa: E731 (x2: peaky softmax)
    # Canvas q/k/v as the model makes them: a transposed view, not contiguous.
    q, k, v = (rnd(B, N, H, D).transpose(1, 2) for _ in range(3))
    sk, sv, pk, pv = rnd(1, H, S, D), rnd(1, H, S, D), rnd(1, H, P, D), rnd(1, H, P, D)
    out = canvas_attention(q, sk, sv, pk, pv, k, v, block_m=16, block_n=16)
    ref = canvas_attention_ref(*(t.float() for t in (q, sk, sv, pk, pv, k, v)))
    assert out.dtype == dtype and out.shape == (B, H, N, D)
    # Outputs are convex combinations of values of size ~2: absolute bounds by dtype.
    tol = {torch.float32: 1e-5, torch.float16: 1e-2}[dtype]
    assert (out.float() - ref).abs().max().item() <= tol


def test_canvas_attention_with_per_canvas_context() -> None:
    # Context batch equal to B (no sharing) must also work: batch strides are real.
    g = torch.Generator().manual_seed(7)
    B, H, N, S, P, D = 2, 2, 3, 4, 6, 16
    q, k, v = (torch.randn(B, H, N, D, generator=g) for _ in range(3))
    sk, sv, pk, pv = (torch.randn(B, H, L, D, generator=g) for L in (S, S, P, P))
    out = canvas_attention(q, sk, sv, pk, pv, k, v)
    torch.testing.assert_close(out, canvas_attention_ref(q, sk, sv, pk, pv, k, v), rtol=1e-5, atol=1e-5)
