"""Weight-only quantized formats and their pure-torch reference math.

Two formats, both for a linear weight W of shape (N, K) = (out_features, in_features):

* int8, per output channel, symmetric:   W[n, k] ~= q[n, k] * s[n]
      q: (N, K) int8 in [-127, 127], s: (N,) float32.
  Symmetric because the weights of a trained transformer are centred on zero; -128 is
  left unused so that negation stays exact.

* int4, group-wise along K, asymmetric:  W[n, k] ~= q[n, k] * s[n, g] + m[n, g],  g = k // G
      q in [0, 15], packed two per byte: packed: (N, Kp // 2) uint8 with
      packed[n, j] = q[n, 2j] | q[n, 2j + 1] << 4   (low nibble = even k, high = odd k)
      s, m: (N, Kp // G) float16 (scale and group minimum).
  Kp is K rounded up to a multiple of G: the padded columns hold q = 0 and the matmul
  masks the matching activations, so any K (odd included) works. Asymmetric (min/max)
  rather than symmetric because with 16 levels a wasted half-range costs a whole bit.
  Scales are float16 so the format stays ~4.5 bits per weight at G = 64.

The reference functions here define the semantics the Triton kernels must match.
"""
from __future__ import annotations

import torch

INT4_GROUP_SIZES = (32, 64, 128)


def quantize_int8(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(N, K) float -> q (N, K) int8, scales (N,) float32."""
    w = w.detach().float()
    amax = w.abs().amax(dim=1)  # (N,)
    # An all-zero row gets scale 1 (not 0) so dequantising never divides by zero.
    scales = torch.where(amax > 0, amax / 127.0, torch.ones_like(amax))
    q = torch.round(w / scales[:, None]).clamp_(-127, 127).to(torch.int8)
    return q, scales


def dequantize_int8(q: torch.Tensor, scales: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """-> (N, K) weight in `dtype`."""
    return (q.float() * scales.float()[:, None]).to(dtype)


def int8_linear_ref(x: torch.Tensor, q: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """x (..., K) @ dequant(q).T -> (..., N), computed in float32, returned in x.dtype.

    The per-channel scale commutes with the K reduction, so it is applied to the output.
    """
    y = torch.nn.functional.linear(x.float(), q.float()) * scales.float()
    return y.to(x.dtype)


def padded_k(k: int, group_size: int) -> int:
    return (k + group_size - 1) // group_size * group_size


def check_group_size(group_size: int) -> None:
    if group_size not in INT4_GROUP_SIZES:
        raise ValueError(f"int4 group size must be one of {INT4_GROUP_SIZES}, got {group_size}")


def quantize_int4(w: torch.Tensor, group_size: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(N, K) float -> packed (N, Kp/2) uint8, scales (N, Kp/G) fp16, mins (N, Kp/G) fp16."""
    check_group_size(group_size)
    w = w.detach().float()
    N, K = w.shape
    Kp = padded_k(K, group_size)
    if Kp != K:
        # Zero padding: the padded columns are masked out of every matmul, so their value
        # only widens the last group's range to include 0, which costs little.
        w = torch.nn.functional.pad(w, (0, Kp - K))
    groups = w.view(N, Kp // group_size, group_size)  # (N, ngroups, G)
    lo = groups.amin(dim=2)
    hi = groups.amax(dim=2)
    # Round the stored fp16 values first and quantise against *those*, so the codes are
    # the best ones for the numbers the kernels will actually use.
    scales = ((hi - lo) / 15.0).clamp_min(1e-8).to(torch.float16)
    mins = lo.to(torch.float16)
    s32, m32 = scales.float()[:, :, None], mins.float()[:, :, None]
    q = torch.round((groups - m32) / s32).clamp_(0, 15).to(torch.uint8).view(N, Kp)
    packed = q[:, 0::2] | (q[:, 1::2] << 4)  # (N, Kp/2)
    return packed.contiguous(), scales.contiguous(), mins.contiguous()


def unpack_int4(packed: torch.Tensor) -> torch.Tensor:
    """(N, Kp/2) uint8 -> (N, Kp) uint8 codes in [0, 15]."""
    lo = packed & 0x0F
    hi = packed >> 4
    return torch.stack((lo, hi), dim=2).view(packed.shape[0], -1)


def dequantize_int4(
    packed: torch.Tensor, scales: torch.Tensor, mins: torch.Tensor, group_size: int, k: int, dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    """-> (N, k) weight in `dtype` (the padding columns are dropped)."""
    q = unpack_int4(packed).float()  # (N, Kp)
    N, Kp = q.shape
    q = q.view(N, Kp // group_size, group_size)
    w = q * scales.float()[:, :, None] + mins.float()[:, :, None]
    return w.view(N, Kp)[:, :k].to(dtype)


def int4_linear_ref(
    x: torch.Tensor, packed: torch.Tensor, scales: torch.Tensor, mins: torch.Tensor, group_size: int
) -> torch.Tensor:
    """x (..., K) @ dequant(packed).T -> (..., N), computed in float32, returned in x.dtype."""
    w = dequantize_int4(packed, scales, mins, group_size, x.shape[-1])
    return torch.nn.functional.linear(x.float(), w).to(x.dtype)


def int4_linear_grouped(
    x: torch.Tensor, codes: torch.Tensor, scales: torch.Tensor, mins: torch.Tensor, group_size: int
) -> torch.Tensor:
    """Same result as int4_linear_ref, from unpacked codes (N, Kp) uint8, without ever
    forming the float weight: per group g,
        y[m, n] = sum_g s[n, g] * (x_g[m] . codes_g[n]) + m[n, g] * sum(x_g[m]).
    The only pass over the weight is the uint8 -> float cast of the codes; scales and
    minimums touch (M, N, groups) numbers only. This is the CPU path of Int4Linear.
    """
    N, Kp = codes.shape
    ng = Kp // group_size
    lead, K = x.shape[:-1], x.shape[-1]
    xp = torch.nn.functional.pad(x.reshape(-1, K), (0, Kp - K)).view(-1, ng, group_size)  # (M, ng, G)
    c = codes.to(x.dtype).view(N, ng, group_size)  # (N, ng, G)
    part = torch.einsum("mgk,ngk->mng", xp, c)  # (M, N, ng)
    y = (part * scales.to(x.dtype)).sum(-1) + xp.sum(-1) @ mins.to(x.dtype).T  # (M, N)
    return y.view(*lead, N)
