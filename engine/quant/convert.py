"""Swapping a model's nn.Linear layers for quantized ones, and the config record of it.

The record stored under "quantization" in a quantized directory's config.json:

    {"method": "weight_only", "version": 1, "bits": 8 | 4, "group_size": 64 (int4 only),
     "modules": ["blocks.0.attn.qkv", ..., "lm_head"], "tied_head": true}

`modules` lists exactly the layers that were quantized, so loading never has to guess
which ones a quantizer chose (and a future quantizer may skip some).
"""
from __future__ import annotations

from typing import Any, Iterable, Optional

import torch.nn as nn

from engine.quant.formats import INT4_GROUP_SIZES
from engine.quant.linear import Int4Linear, Int8Linear
from engine.types import InfillError

METHOD, VERSION = "weight_only", 1
DEFAULT_GROUP_SIZE = 64
QuantizedLinear = (Int8Linear, Int4Linear)


def linear_names(model: nn.Module) -> list[str]:
    """Names of every nn.Linear in `model`, in module order."""
    return [name for name, mod in model.named_modules() if isinstance(mod, nn.Linear)]


def _set_submodule(model: nn.Module, name: str, new: nn.Module) -> None:
    parent_name, _, child = name.rpartition(".")
    parent = model.get_submodule(parent_name) if parent_name else model
    setattr(parent, child, new)


def quantize_model(model: nn.Module, bits: int, group_size: int = DEFAULT_GROUP_SIZE, modules: Optional[Iterable[str]] = None) -> dict[str, Any]:
    """Quantize `model`'s linear layers in place (all of them unless `modules` is given).

    A head tied to the embedding is untied: the embedding keeps its float weights (token
    lookup needs them and reads one row per token, so quantizing it saves file size only)
    and the head gets its own quantized copy. Returns the config record.
    """
    names = list(modules) if modules is not None else linear_names(model)
    spec = make_spec(bits, group_size, names)
    tied = False
    for name in names:
        linear = model.get_submodule(name)
        if not isinstance(linear, nn.Linear):
            raise TypeError(f"{name} is {type(linear).__name__}, not nn.Linear")
        tied |= any(linear.weight is p for n, p in model.named_parameters(remove_duplicate=False) if not n.startswith(name + "."))
        new = Int8Linear.from_linear(linear) if bits == 8 else Int4Linear.from_linear(linear, group_size)
        _set_submodule(model, name, new)
    spec["tied_head"] = tied
    return spec


def make_spec(bits: int, group_size: int, modules: list[str]) -> dict[str, Any]:
    spec: dict[str, Any] = {"method": METHOD, "version": VERSION, "bits": bits, "modules": modules}
    if bits == 4:
        spec["group_size"] = group_size
    validate_spec(spec)
    return spec


def validate_spec(spec: Any) -> None:
    """InfillError (one line) unless `spec` is a quantization record this version reads."""
    if not isinstance(spec, dict):
        raise InfillError(f"config.json \"quantization\" must be an object, got {type(spec).__name__}")
    if spec.get("method") != METHOD or spec.get("version") != VERSION:
        raise InfillError(
            f"config.json \"quantization\": unsupported method/version {spec.get('method')!r}/{spec.get('version')!r} "
            f"(this infill reads {METHOD!r}/{VERSION}); re-run `infill quantize` with this version"
        )
    if spec.get("bits") not in (8, 4):
        raise InfillError(f"config.json \"quantization\": bits must be 8 or 4, got {spec.get('bits')!r}")
    if spec["bits"] == 4 and spec.get("group_size") not in INT4_GROUP_SIZES:
        raise InfillError(f"config.json \"quantization\": group_size must be one of {INT4_GROUP_SIZES}, got {spec.get('group_size')!r}")
    mods = spec.get("modules")
    if not isinstance(mods, list) or not all(isinstance(m, str) for m in mods):
        raise InfillError("config.json \"quantization\": \"modules\" must be a list of layer names")


def prepare_for_load(model: nn.Module, quantization: dict) -> None:
    """Swap the layers named in `quantization` for empty quantized modules, in place, so
    that `model.load_state_dict(quantized_weights, strict=True)` succeeds. The new
    buffers are created on the device of the layer they replace."""
    validate_spec(quantization)
    bits = quantization["bits"]
    for name in quantization["modules"]:
        try:
            linear = model.get_submodule(name)
        except AttributeError:
            raise InfillError(f"config.json \"quantization\" names layer {name!r}, which the model does not have") from None
        if isinstance(linear, QuantizedLinear):
            raise InfillError(f"layer {name!r} is already quantized: prepare_for_load was called twice")
        if not isinstance(linear, nn.Linear):
            raise InfillError(f"config.json \"quantization\" names {name!r}, a {type(linear).__name__}, not a linear layer")
        has_bias, device = linear.bias is not None, linear.weight.device
        if bits == 8:
            new: nn.Module = Int8Linear(linear.in_features, linear.out_features, has_bias, device=device)
        else:
            new = Int4Linear(linear.in_features, linear.out_features, quantization["group_size"], has_bias, device=device)
        _set_submodule(model, name, new)
