"""Weight-only quantization (int8 per channel, int4 group-wise) for the infill model.

    prepare_for_load(model, config["quantization"])  # used by engine.modeldir when loading
    quantize_model(model, bits=8)                     # in place; returns that config record
    python -m engine.quant.quantized_dir MODEL_DIR OUT_DIR --bits 4   # `infill quantize ...`

Triton kernels (CUDA) live in engine.quant.triton_kernels and are imported lazily, so
this package imports without triton. bitsandbytes loading for other checkpoints:
engine.quant.bnb.
"""
from engine.quant.convert import prepare_for_load, quantize_model, validate_spec
from engine.quant.linear import Int4Linear, Int8Linear

__all__ = ["prepare_for_load", "quantize_model", "validate_spec", "Int8Linear", "Int4Linear"]
