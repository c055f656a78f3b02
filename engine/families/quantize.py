"""Quantized loading for family checkpoints, delegated to engine.quant.

bitsandbytes 8-bit / NF4 and the engine's own int8 / int4 linears are implemented in
engine.quant (another part of the engine); this module only routes a family network's
nn.Linear layers there and turns a missing piece into a clear InfillError.
"""
from __future__ import annotations

import importlib

from engine.families.network import BidirectionalDecoder
from engine.types import InfillError

# name users pass -> (engine.quant module, mode string that module understands)
QUANT_MODES: dict[str, tuple[str, str]] = {
    "bnb8": ("engine.quant.bnb", "int8"),
    "nf4": ("engine.quant.bnb", "nf4"),
    "int8": ("engine.quant", "int8"),
    "int4": ("engine.quant", "int4"),
}


def quantize_network(net: BidirectionalDecoder, mode: str, device: str) -> BidirectionalDecoder:
    module_name, inner = QUANT_MODES[mode]
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise InfillError(f"quantization {mode!r} needs {module_name}, which is not available ({exc})") from None
    fn = getattr(module, "quantize_linears", None)
    if fn is None:
        raise InfillError(f"quantization {mode!r}: {module_name} has no quantize_linears() yet")
    try:
        out = fn(net, inner)
    except (RuntimeError, ValueError, ImportError) as exc:
        raise InfillError(f"quantization {mode!r} failed on {device}: {str(exc).splitlines()[0]}") from None
    return out if isinstance(out, BidirectionalDecoder) else net
