"""Triton kernels: fused dequantise + matmul for the int8 and int4 formats of formats.py.

Shapes the sampler produces: x is a handful of canvas rows (M = 1..64) against a large
weight (N x K), so the kernels are bound by reading the weight, not by arithmetic. They
never materialise a dequantised weight: each program loads a (BLOCK_K, BLOCK_N) tile of
integer codes, converts it in registers and feeds tl.dot. Scales are applied to the
partial products, never to the weight tile (per channel: once at the end; per group:
once per K block, which is why BLOCK_K must divide the group size).

Few rows means few (M, N) tiles, too few to fill a large GPU, so the K reduction can be
split over SPLIT_K programs that atomically add float32 partial sums.

Importing this module imports triton; TRITON_INTERPRET=1 must be set before that to run
the kernels on CPU tensors (the tests do so).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch
import triton
import triton.language as tl


@dataclass(frozen=True)
class MatmulConfig:
    block_m: int = 16
    block_n: int = 64
    block_k: int = 64
    split_k: int = 1
    num_warps: int = 4
    num_stages: int = 3


@triton.jit
def _int8_matmul_kernel(
    x_ptr, q_ptr, s_ptr, y_ptr,
    M, N, K,
    stride_xm, stride_xk, stride_qn, stride_qk, stride_ym, stride_yn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    SPLIT_K: tl.constexpr, IEEE: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    pid_k = tl.program_id(2)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(pid_k * BLOCK_K, K, BLOCK_K * SPLIT_K):
        kk = k0 + rk
        x = tl.load(x_ptr + rm[:, None] * stride_xm + kk[None, :] * stride_xk,
                    mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)  # (BM, BK)
        q = tl.load(q_ptr + rn[None, :] * stride_qn + kk[:, None] * stride_qk,
                    mask=(rn[None, :] < N) & (kk[:, None] < K), other=0)  # (BK, BN) int8
        # int8 codes are exact in bf16/fp16/fp32, so the tile converts losslessly.
        if IEEE:
            acc += tl.dot(x, q.to(x.dtype), input_precision="ieee")
        else:
            acc += tl.dot(x, q.to(x.dtype))
    s = tl.load(s_ptr + rn, mask=rn < N, other=0.0).to(tl.float32)  # (BN,)
    acc = acc * s[None, :]
    y_ptrs = y_ptr + rm[:, None] * stride_ym + rn[None, :] * stride_yn
    y_mask = (rm[:, None] < M) & (rn[None, :] < N)
    if SPLIT_K == 1:
        tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=y_mask)
    else:
        tl.atomic_add(y_ptrs, acc, mask=y_mask)


@triton.jit
def _int4_matmul_kernel(
    x_ptr, p_ptr, s_ptr, m_ptr, y_ptr,
    M, N, K, KP,
    stride_xm, stride_xk, stride_pn, stride_pj, stride_sn, stride_sg, stride_ym, stride_yn,
    GROUP: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    SPLIT_K: tl.constexpr, IEEE: tl.constexpr,
):
    # Packed byte j holds k = 2j (low nibble) and k = 2j + 1 (high nibble). Rather than
    # interleaving the nibbles back into one (BLOCK_K, BN) tile, the activations are read
    # as their even and odd columns and two half-depth dots are summed.
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    pid_k = tl.program_id(2)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rj = tl.arange(0, BLOCK_K // 2)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(pid_k * BLOCK_K, KP, BLOCK_K * SPLIT_K):
        ke = k0 + 2 * rj  # (BK/2,) even k
        ko = ke + 1
        row_ok = rm[:, None] < M
        xe = tl.load(x_ptr + rm[:, None] * stride_xm + ke[None, :] * stride_xk,
                     mask=row_ok & (ke[None, :] < K), other=0.0)  # (BM, BK/2)
        xo = tl.load(x_ptr + rm[:, None] * stride_xm + ko[None, :] * stride_xk,
                     mask=row_ok & (ko[None, :] < K), other=0.0)
        # KP is a multiple of GROUP and GROUP of BLOCK_K, so every packed column exists.
        p = tl.load(p_ptr + rn[None, :] * stride_pn + (k0 // 2 + rj)[:, None] * stride_pj,
                    mask=rn[None, :] < N, other=0)  # (BK/2, BN) uint8
        lo = (p & 0xF).to(x_ptr.dtype.element_ty)
        hi = (p >> 4).to(x_ptr.dtype.element_ty)
        if IEEE:
            part = tl.dot(xe, lo, input_precision="ieee") + tl.dot(xo, hi, input_precision="ieee")
        else:
            part = tl.dot(xe, lo) + tl.dot(xo, hi)  # (BM, BN) = sum_k x * code
        xsum = tl.sum(xe.to(tl.float32), axis=1) + tl.sum(xo.to(tl.float32), axis=1)  # (BM,)
        g = k0 // GROUP
        s = tl.load(s_ptr + rn * stride_sn + g * stride_sg, mask=rn < N, other=0.0).to(tl.float32)
        mn = tl.load(m_ptr + rn * stride_sn + g * stride_sg, mask=rn < N, other=0.0).to(tl.float32)
        # sum_k x (code * s + min) = s * sum_k x code + min * sum_k x   (within one group)
        acc += part * s[None, :] + xsum[:, None] * mn[None, :]
    y_ptrs = y_ptr + rm[:, None] * stride_ym + rn[None, :] * stride_yn
    y_mask = (rm[:, None] < M) & (rn[None, :] < N)
    if SPLIT_K == 1:
        tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=y_mask)
    else:
        tl.atomic_add(y_ptrs, acc, mask=y_mask)


def default_config(M: int, N: int, K: int, device: torch.device, group_size: Optional[int] = None) -> MatmulConfig:
    """A fixed heuristic (no autotuning, so the first call is not a tuning sweep)."""
    block_m = 16 if M <= 16 else (32 if M <= 32 else 64)
    block_n = 64
    block_k = 128 if group_size is None else min(group_size, 128)
    split_k = 1
    if device.type == "cuda":
        # Weight-streaming kernels need enough programs in flight to saturate HBM:
        # aim for ~2 programs per SM, but keep >= 4 K blocks per program.
        sms = torch.cuda.get_device_properties(device).multi_processor_count
        tiles = triton.cdiv(M, block_m) * triton.cdiv(N, block_n)
        k_blocks = triton.cdiv(K, block_k)
        while tiles * split_k < 2 * sms and k_blocks // (split_k * 2) >= 4:
            split_k *= 2
    return MatmulConfig(block_m=block_m, block_n=block_n, block_k=block_k, split_k=split_k)


def _flatten(x: torch.Tensor) -> torch.Tensor:
    return x.reshape(-1, x.shape[-1])  # (..., K) -> (M, K), a view when possible


def _output(M: int, N: int, like: torch.Tensor, split_k: int) -> torch.Tensor:
    # Split-K partial sums are atomically added, so they need a zeroed float32 buffer.
    if split_k > 1:
        return torch.zeros(M, N, device=like.device, dtype=torch.float32)
    return torch.empty(M, N, device=like.device, dtype=like.dtype)


def int8_matmul(x: torch.Tensor, q: torch.Tensor, scales: torch.Tensor, config: Optional[MatmulConfig] = None) -> torch.Tensor:
    """x (..., K) @ (q * scales[:, None]).T -> (..., N) in x.dtype. q: (N, K) int8, scales: (N,)."""
    N, K = q.shape
    if x.shape[-1] != K:
        raise ValueError(f"x has {x.shape[-1]} features, weight expects {K}")
    x2 = _flatten(x)
    M = x2.shape[0]
    cfg = config or default_config(M, N, K, x.device)
    y = _output(M, N, x2, cfg.split_k)
    grid = (triton.cdiv(M, cfg.block_m), triton.cdiv(N, cfg.block_n), cfg.split_k)
    _int8_matmul_kernel[grid](
        x2, q, scales, y, M, N, K,
        x2.stride(0), x2.stride(1), q.stride(0), q.stride(1), y.stride(0), y.stride(1),
        BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, BLOCK_K=cfg.block_k,
        SPLIT_K=cfg.split_k, IEEE=x.dtype == torch.float32,
        num_warps=cfg.num_warps, num_stages=cfg.num_stages,
    )
    return y.to(x.dtype).view(*x.shape[:-1], N)


def int4_matmul(
    x: torch.Tensor, packed: torch.Tensor, scales: torch.Tensor, mins: torch.Tensor, group_size: int,
    config: Optional[MatmulConfig] = None,
) -> torch.Tensor:
    """x (..., K) @ dequant_int4(...).T -> (..., N) in x.dtype.

    packed: (N, Kp/2) uint8; scales, mins: (N, Kp/group_size); K <= Kp (padding masked).
    """
    N, KP = packed.shape[0], packed.shape[1] * 2
    K = x.shape[-1]
    if KP % group_size or scales.shape != (N, KP // group_size) or mins.shape != scales.shape:
        raise ValueError("packed / scales / mins shapes do not match the group size")
    if not KP - group_size < K <= KP:
        raise ValueError(f"x has {K} features, packed weight holds {KP} (padded to groups of {group_size})")
    x2 = _flatten(x)
    M = x2.shape[0]
    cfg = config or default_config(M, N, K, x.device, group_size)
    if group_size % cfg.block_k or cfg.block_k < 32:
        raise ValueError(f"block_k={cfg.block_k} must be >= 32 and divide the group size {group_size}")
    y = _output(M, N, x2, cfg.split_k)
    grid = (triton.cdiv(M, cfg.block_m), triton.cdiv(N, cfg.block_n), cfg.split_k)
    _int4_matmul_kernel[grid](
        x2, packed, scales, mins, y, M, N, K, KP,
        x2.stride(0), x2.stride(1), packed.stride(0), packed.stride(1), scales.stride(0), scales.stride(1),
        y.stride(0), y.stride(1),
        GROUP=group_size, BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, BLOCK_K=cfg.block_k,
        SPLIT_K=cfg.split_k, IEEE=x.dtype == torch.float32,
        num_warps=cfg.num_warps, num_stages=cfg.num_stages,
    )
    return y.to(x.dtype).view(*x.shape[:-1], N)
