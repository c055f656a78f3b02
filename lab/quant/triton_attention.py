"""Triton canvas-query attention over cached context plus canvas keys (no concatenation).

One program per (batch*head, block of canvas queries) runs an online softmax
(flash-attention style, base-2 exponent) over three key/value segments read where they
live: the rotated suffix keys, the prefix cache and the canvas's own keys. Context
segments with batch size 1 are shared by all B candidate canvases (batch stride 0), so
neither the concatenation nor the expand of the reference is ever materialised.
No mask: canvas queries see every key (see engine/model.py).
"""
from __future__ import annotations

import math

import torch
import triton
import triton.language as tl


@triton.jit
def _attend_segment(
    acc, m_i, l_i, q, k_base, v_base, stride_kn, stride_vn, L, qk_scale,
    BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, D, IEEE: tl.constexpr,
):
    rn = tl.arange(0, BLOCK_N)
    rd = tl.arange(0, BLOCK_D)
    for start in range(0, L, BLOCK_N):
        cols = start + rn
        kv_mask = (cols[:, None] < L) & (rd[None, :] < D)
        k = tl.load(k_base + cols[:, None] * stride_kn + rd[None, :], mask=kv_mask, other=0.0)  # (BN, BD)
        v = tl.load(v_base + cols[:, None] * stride_vn + rd[None, :], mask=kv_mask, other=0.0)
        if IEEE:
            s = tl.dot(q, tl.trans(k), input_precision="ieee")  # (BM, BN)
        else:
            s = tl.dot(q, tl.trans(k))
        # Softmax scale and log2(e) applied to the fp32 scores, not folded into q: a
        # scaled q rounded back to bf16 would cost ~2^-9 relative error on every score.
        s = s * qk_scale
        s = tl.where(cols[None, :] < L, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        if IEEE:
            acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision="ieee")
        else:
            acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    return acc, m_i, l_i


@triton.jit
def _canvas_attention_kernel(
    q_ptr, sk_ptr, sv_ptr, pk_ptr, pv_ptr, k_ptr, v_ptr, o_ptr,
    H, N, S, P, D, qk_scale,
    sq_b, sq_h, sq_n, ssk_b, ssk_h, ssk_n, ssv_b, ssv_h, ssv_n,
    spk_b, spk_h, spk_n, spv_b, spv_h, spv_n, sk_b, sk_h, sk_n, sv_b, sv_h, sv_n,
    so_b, so_h, so_n,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, IEEE: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_bh = tl.program_id(1)
    b = pid_bh // H
    h = pid_bh % H
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rd = tl.arange(0, BLOCK_D)
    q_mask = (rm[:, None] < N) & (rd[None, :] < D)
    q = tl.load(q_ptr + b * sq_b + h * sq_h + rm[:, None] * sq_n + rd[None, :], mask=q_mask, other=0.0)
    acc = tl.zeros((BLOCK_M, BLOCK_D), dtype=tl.float32)
    m_i = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc, m_i, l_i = _attend_segment(acc, m_i, l_i, q, sk_ptr + b * ssk_b + h * ssk_h, sv_ptr + b * ssv_b + h * ssv_h,
                                    ssk_n, ssv_n, S, qk_scale, BLOCK_N, BLOCK_D, D, IEEE)
    acc, m_i, l_i = _attend_segment(acc, m_i, l_i, q, pk_ptr + b * spk_b + h * spk_h, pv_ptr + b * spv_b + h * spv_h,
                                    spk_n, spv_n, P, qk_scale, BLOCK_N, BLOCK_D, D, IEEE)
    acc, m_i, l_i = _attend_segment(acc, m_i, l_i, q, k_ptr + b * sk_b + h * sk_h, v_ptr + b * sv_b + h * sv_h,
                                    sk_n, sv_n, N, qk_scale, BLOCK_N, BLOCK_D, D, IEEE)
    out = acc / l_i[:, None]  # N >= 1 canvas keys, so every row has a positive sum
    tl.store(o_ptr + b * so_b + h * so_h + rm[:, None] * so_n + rd[None, :], out.to(o_ptr.dtype.element_ty), mask=q_mask)


def _strides(t: torch.Tensor, batch: int) -> tuple[int, int, int]:
    """(batch, head, position) strides; a batch-1 context shared by all canvases gets 0."""
    if t.stride(-1) != 1:
        raise ValueError("attention inputs need a contiguous last (head) dimension")
    return (0 if t.shape[0] == 1 and batch > 1 else t.stride(0)), t.stride(1), t.stride(2)


def canvas_attention(
    q: torch.Tensor, suffix_k: torch.Tensor, suffix_v: torch.Tensor, prefix_k: torch.Tensor, prefix_v: torch.Tensor,
    k: torch.Tensor, v: torch.Tensor, block_m: int = 16, block_n: int = 64, num_warps: int = 4,
) -> torch.Tensor:
    """Same contract as attention.canvas_attention_ref: q, k, v (B, H, N, D);
    suffix_* (1|B, H, S, D); prefix_* (1|B, H, P, D) -> (B, H, N, D) in q.dtype."""
    B, H, N, D = q.shape
    S, P = suffix_k.shape[2], prefix_k.shape[2]
    for name, t in (("suffix", suffix_k), ("prefix", prefix_k)):
        if t.shape[0] not in (1, B) or t.shape[1] != H or t.shape[3] != D:
            raise ValueError(f"{name} keys of shape {tuple(t.shape)} do not fit queries {tuple(q.shape)}")
    if N == 0:
        return torch.empty_like(q)
    out = torch.empty(B, H, N, D, device=q.device, dtype=q.dtype)
    block_d = max(16, triton.next_power_of_2(D))
    grid = (triton.cdiv(N, block_m), B * H)
    _canvas_attention_kernel[grid](
        q, suffix_k, suffix_v, prefix_k, prefix_v, k, v, out,
        H, N, S, P, D, (1.0 / math.sqrt(D)) * 1.4426950408889634,
        *_strides(q, B), *_strides(suffix_k, B), *_strides(suffix_v, B), *_strides(prefix_k, B), *_strides(prefix_v, B),
        *_strides(k, B), *_strides(v, B), *_strides(out, B),
        BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_D=block_d, IEEE=q.dtype == torch.float32,
        num_warps=num_warps,
    )
    return out
