"""Quantized loading for family checkpoints, delegated to engine.quant.

    bnb8  bitsandbytes 8-bit (engine.quant.bnb, Linear8bitLt)
    nf4   bitsandbytes NF4   (engine.quant.bnb, Linear4bit)
    int8  the engine's own per-channel int8 linears (engine.quant.quantize_model)
    int4  the engine's own group-wise int4 linears

Every linear of the blocks is quantized; the embedding and lm_head stay in the load dtype
(the head of a 150K vocabulary is where quantization error shows most, and the memory
table in docs/families.md counts it in bf16).
"""
from __future__ import annotations

from engine.families.network import BidirectionalDecoder
from engine.types import InfillError

QUANT_MODES = ("bnb8", "nf4", "int8", "int4")


def block_linear_names(net: BidirectionalDecoder) -> list[str]:
    return [name for name, mod in net.named_modules() if type(mod).__name__ == "Linear" and name.startswith("layers.")]


def quantize_network(net: BidirectionalDecoder, mode: str, device: str) -> BidirectionalDecoder:
    """Quantize `net` in place; a missing optional dependency is a one-line InfillError."""
    try:
        if mode in ("bnb8", "nf4"):
            from engine.quant.bnb import quantize_linears

            quantize_linears(net, "int8" if mode == "bnb8" else "nf4", skip=("lm_head",))
        else:
            from engine.quant import quantize_model

            quantize_model(net, bits=8 if mode == "int8" else 4, modules=block_linear_names(net))
    except ImportError as exc:
        raise InfillError(f"quantization {mode!r} needs a package that is not installed: {exc}") from None
    except (RuntimeError, ValueError, TypeError) as exc:
        raise InfillError(f"quantization {mode!r} failed on {device}: {str(exc).splitlines()[0]}") from None
    return net
