"""bitsandbytes 8-bit (LLM.int8 weights, no outlier split) and NF4 loading.

For checkpoints that users bring (engine.families adapters or any loader): build the
float model, load its weights, then

    names = quantize_linears(model, "nf4")   # or "int8"
    model.to("cuda")                         # or stay on CPU

bitsandbytes quantizes a weight when it is moved off the CPU copy it was built from, so
each new module is moved to the device of the layer it replaces right away: the model
is quantized when this function returns, on CPU as well (bitsandbytes >= 0.46 has CPU
implementations; 0.50.2 was verified here, see docs/quantization.md).
"""
from __future__ import annotations

from typing import Iterable, Literal, Optional

import torch
import torch.nn as nn

Mode = Literal["int8", "nf4"]


def _shared(model: nn.Module, name: str, weight: torch.Tensor) -> bool:
    """True when `weight` is also a parameter of another module (a tied head)."""
    return any(p is weight and not n.startswith(name + ".") for n, p in model.named_parameters(remove_duplicate=False))


def quantize_linears(
    model: nn.Module,
    mode: Mode,
    skip: Iterable[str] = ("lm_head",),
    compute_dtype: Optional[torch.dtype] = None,
) -> list[str]:
    """Replace every nn.Linear of `model` (except names in `skip` and weights tied to
    another module, which would be duplicated) by a bitsandbytes module, in place.

    mode "int8": bnb.nn.Linear8bitLt with int8 row-wise weights (threshold 0: no fp16
    outlier columns, so it runs on CPU too). mode "nf4": bnb.nn.Linear4bit, NF4 codes in
    blocks of 64, matmuls in `compute_dtype` (default: the layer's weight dtype).
    Returns the names replaced.
    """
    import bitsandbytes as bnb  # optional dependency: only this function needs it

    if mode not in ("int8", "nf4"):
        raise ValueError(f"mode must be 'int8' or 'nf4', got {mode!r}")
    skipped = set(skip)
    targets = [
        (name, mod)
        for name, mod in model.named_modules()
        if type(mod) is nn.Linear and name not in skipped and not _shared(model, name, mod.weight)
    ]
    replaced: list[str] = []
    for name, linear in targets:
        device, dtype = linear.weight.device, linear.weight.dtype
        # bitsandbytes quantizes on the move from a CPU tensor, so start from a CPU copy.
        weight = linear.weight.detach().to("cpu", copy=True)
        has_bias = linear.bias is not None
        if mode == "int8":
            new: nn.Module = bnb.nn.Linear8bitLt(linear.in_features, linear.out_features, bias=has_bias, has_fp16_weights=False, threshold=0.0)
            new.weight = bnb.nn.Int8Params(weight, requires_grad=False, has_fp16_weights=False)
        else:
            new = bnb.nn.Linear4bit(linear.in_features, linear.out_features, bias=has_bias, compute_dtype=compute_dtype or dtype, quant_type="nf4")
            new.weight = bnb.nn.Params4bit(weight, requires_grad=False, quant_type="nf4")
            if linear.in_features % new.weight.blocksize:
                # bitsandbytes 0.50.2's CPU repacking for AVX512-BF16 (taken in eval mode)
                # reshapes the absmax table as if in_features were a multiple of the
                # block size and raises otherwise; the generic CPU path handles any size.
                new.support_avx512bf16_for_cpu = False
        if has_bias:
            new.bias = nn.Parameter(linear.bias.detach().to("cpu", copy=True), requires_grad=False)
        new = new.to(device)  # this is where bitsandbytes quantizes
        new.train(linear.training)  # a fresh module is in training mode; keep the model's
        parent_name, _, child = name.rpartition(".")
        setattr(model.get_submodule(parent_name) if parent_name else model, child, new)
        replaced.append(name)
    return replaced
