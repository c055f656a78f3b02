"""The dtype a model directory of infill's own computes in, and what bf16 needs on a CPU.

bf16 on a CPU with native bf16 matrix multiplies (AVX512-BF16, AMX) reads half the bytes
of weights per pass, and a pass of the embedded model is memory-bound there: on the 2-core
dev machine a canvas pass went from ~10 ms to ~7 ms and the dev lines' CPU time fell by a
quarter, with 22 of 1,393 dev and HumanEval middles different and the same exact match
(docs/sampler.md, "Compute precision"). Elsewhere bf16 is emulated and slower, so `auto`
keeps fp32; a GPU keeps fp32 until it is measured there.

torch multiplies bf16 on a CPU through oneDNN, which keeps a compiled kernel and a packed
copy of the weight for every new number of rows it sees (~1.8 MB a request on the dev
lines, 300 -> 730 MB over 240 requests: a server would grow to the cache's capacity,
1,024 kernels). `bucket_rows` rounds every linear layer's rows up to a few sizes, so the
kernels are a bounded few; a row's result does not depend on the rows beside it
(tests/test_batch_independence.py hashes every pass's logits, solo against packed, in
both dtypes), so the padding changes no logit.
"""
from __future__ import annotations

import os
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

from engine.types import InfillError

DTYPES = {"fp32": torch.float32, "float32": torch.float32, "bf16": torch.bfloat16, "bfloat16": torch.bfloat16}


def native_bf16_cpu() -> bool:
    """Whether this CPU multiplies bf16 matrices in hardware (AVX512-BF16 or AMX)."""
    probes = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(bool(getattr(torch.cpu, name, lambda: False)()) for name in probes)


def compute_dtype(requested: Optional[str], device: str = "cpu") -> torch.dtype:
    """`requested` ("fp32" | "bf16" | "auto"), else the INFILL_DTYPE environment variable,
    else auto: bf16 on a CPU with native bf16 matrix multiplies, fp32 elsewhere. A bad
    value is a clear error."""
    source = "dtype" if requested else "INFILL_DTYPE"
    text = (requested or os.environ.get("INFILL_DTYPE", "") or "auto").strip().lower()
    if text == "auto":
        return torch.bfloat16 if str(device).startswith("cpu") and native_bf16_cpu() else torch.float32
    if text not in DTYPES:
        raise InfillError(f"{source} must be one of auto, fp32, bf16, not {text!r}")
    return DTYPES[text]


def row_bucket(rows: int) -> int:
    """The number of rows a linear layer computes for `rows`: a power of two up to 8 (an
    autoregressive step is one row), a multiple of 8 up to 64 (canvases are multiples of
    8), of 32 up to 512 (a context's encoding), of 128 beyond: under ~60 sizes for any
    request or batch up to ~4,000 rows, each at most 1/4 (1/8 past 64 rows) more rows."""
    if rows <= 8:
        return 1 << max(0, rows - 1).bit_length()
    step = 8 if rows <= 64 else 32 if rows <= 512 else 128
    return -(-rows // step) * step


class RowBucketedLinear(nn.Linear):
    """nn.Linear that pads its input's rows to `row_bucket` and drops the padding after:
    the same parameters, the same results row for row, a bounded set of oneDNN kernels."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.numel() // x.shape[-1] if x.shape[-1] else 0
        padded = row_bucket(rows) if rows else 0
        if padded == rows:
            return F.linear(x, self.weight, self.bias)
        flat = torch.cat([x.reshape(rows, x.shape[-1]), x.new_zeros(padded - rows, x.shape[-1])])
        return F.linear(flat, self.weight, self.bias)[:rows].reshape(*x.shape[:-1], self.out_features)


def bucket_rows(model: nn.Module) -> int:
    """Every plain nn.Linear of `model` becomes a RowBucketedLinear (its class swapped, its
    parameters and their ties kept); the number swapped."""
    swapped = 0
    for module in model.modules():
        if type(module) is nn.Linear:
            module.__class__ = RowBucketedLinear
            swapped += 1
    return swapped
