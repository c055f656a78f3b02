"""Quantized drop-in replacements for bias-free or biased nn.Linear layers.

Both modules keep their codes and scales as buffers, so `state_dict()` /
`load_state_dict()` and `.to(device)` work as for any module, and a model built with
empty quantized modules (prepare_for_load) accepts a quantized checkpoint strictly.

Dispatch: CUDA tensors go to the Triton kernels when triton imports; everything else
(CPU, or INFILL_QUANT_KERNEL=torch) takes the torch path. The CPU paths were chosen by
measurement (docs/quantization.md): torch's own _weight_int8pack_mm /
_weight_int4pack_mm_for_cpu were 20-50x slower than these on the 2-core dev machine.
"""
from __future__ import annotations

import functools
import os
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

from engine.quant import formats


@functools.lru_cache(maxsize=1)
def triton_kernels_available() -> bool:
    try:
        import engine.quant.triton_kernels  # noqa: F401
    except Exception:  # ImportError, or a triton that cannot find a driver
        return False
    return True


def _use_triton(x: torch.Tensor) -> bool:
    # INFILL_QUANT_KERNEL=torch forces the torch path (A/B on a GPU); =triton forces the
    # kernels even for CPU tensors, which only works under TRITON_INTERPRET=1 (tests).
    choice = os.environ.get("INFILL_QUANT_KERNEL", "").lower()
    if choice == "torch":
        return False
    return (x.is_cuda or choice == "triton") and triton_kernels_available()


class Int8Linear(nn.Module):
    """y = x @ (qweight * scales[:, None]).T + bias;  qweight (N, K) int8, scales (N,) fp32."""

    def __init__(self, in_features: int, out_features: int, bias: bool = False, device: Optional[torch.device] = None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.register_buffer("qweight", torch.zeros(out_features, in_features, dtype=torch.int8, device=device))
        self.register_buffer("scales", torch.ones(out_features, dtype=torch.float32, device=device))
        self.register_buffer("bias", torch.zeros(out_features, device=device) if bias else None)

    @classmethod
    def from_linear(cls, linear: nn.Linear) -> "Int8Linear":
        mod = cls(linear.in_features, linear.out_features, linear.bias is not None, device=linear.weight.device)
        q, s = formats.quantize_int8(linear.weight)
        mod.qweight.copy_(q)
        mod.scales.copy_(s)
        if linear.bias is not None:
            mod.bias.copy_(linear.bias.detach())
        return mod

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if _use_triton(x):
            from engine.quant.triton_kernels import int8_matmul

            y = int8_matmul(x, self.qweight, self.scales)
        else:
            # The scale is per output channel, so it is applied to the (few-row) output
            # instead of the (large) weight: one int8 -> float cast of the weight per call.
            y = F.linear(x, self.qweight.to(x.dtype)) * self.scales.to(x.dtype)
        return y if self.bias is None else y + self.bias.to(y.dtype)

    def dequantized_weight(self) -> torch.Tensor:
        return formats.dequantize_int8(self.qweight, self.scales)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bits=8"


class Int4Linear(nn.Module):
    """Group-wise asymmetric int4 (formats.quantize_int4): qweight (N, Kp/2) uint8,
    scales and mins (N, Kp/G) fp16, with Kp = in_features rounded up to the group size."""

    def __init__(
        self, in_features: int, out_features: int, group_size: int = 64, bias: bool = False, device: Optional[torch.device] = None
    ):
        super().__init__()
        formats.check_group_size(group_size)
        self.in_features, self.out_features, self.group_size = in_features, out_features, group_size
        kp = formats.padded_k(in_features, group_size)
        self.register_buffer("qweight", torch.zeros(out_features, kp // 2, dtype=torch.uint8, device=device))
        self.register_buffer("scales", torch.ones(out_features, kp // group_size, dtype=torch.float16, device=device))
        self.register_buffer("mins", torch.zeros(out_features, kp // group_size, dtype=torch.float16, device=device))
        self.register_buffer("bias", torch.zeros(out_features, device=device) if bias else None)
        self._codes: Optional[torch.Tensor] = None  # the unpacked codes (`_unpacked_codes`), not in the state dict
        self._codes_key: Optional[tuple] = None

    @classmethod
    def from_linear(cls, linear: nn.Linear, group_size: int = 64) -> "Int4Linear":
        mod = cls(linear.in_features, linear.out_features, group_size, linear.bias is not None, device=linear.weight.device)
        packed, scales, mins = formats.quantize_int4(linear.weight, group_size)
        mod.qweight.copy_(packed)
        mod.scales.copy_(scales)
        mod.mins.copy_(mins)
        if linear.bias is not None:
            mod.bias.copy_(linear.bias.detach())
        return mod

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if _use_triton(x):
            from engine.quant.triton_kernels import int4_matmul

            y = int4_matmul(x, self.qweight, self.scales, self.mins, self.group_size)
        else:
            y = formats.int4_linear_grouped(x, self._unpacked_codes(), self.scales, self.mins, self.group_size)
        return y if self.bias is None else y + self.bias.to(y.dtype)

    def _unpacked_codes(self) -> torch.Tensor:
        """(N, Kp) uint8 codes, unpacked once and kept (not in the state dict).

        Unpacking nibbles on every call made the CPU path ~4x slower than float32; the
        cache costs 1 byte per weight (int4 on CPU then holds 1.5 bytes per weight, still
        well under float32's 4). It is keyed on the packed buffer's identity and version,
        so load_state_dict (an in-place copy) or .to(device) invalidates it.
        """
        key = (self.qweight.data_ptr(), self.qweight._version, self.qweight.device)
        if self._codes is None or self._codes_key != key:
            self._codes = formats.unpack_int4(self.qweight)
            self._codes_key = key
        return self._codes

    def dequantized_weight(self) -> torch.Tensor:
        return formats.dequantize_int4(self.qweight, self.scales, self.mins, self.group_size, self.in_features)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bits=4, group_size={self.group_size}"
