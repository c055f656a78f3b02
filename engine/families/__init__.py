"""Open diffusion checkpoints (Dream, LLaDA, Open-dCoder, ...) loaded from a local directory.

`load_family_model(model_dir)` reads config.json, the safetensors weights (sharded too) and
the tokenizer files, runs them with infill's own forward pass (no trust_remote_code) and
returns (DenoisingModel, Tokenizer, info). Family conventions live in the *.toml files here.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Optional, Union

import torch

from engine.families.adapter import CachePolicy, FamilyContext, FamilyModel
from engine.families.arch import ArchConfig, arch_from_config, read_config_json
from engine.families.checkpoint import load_weights, parse_dtype
from engine.families.quantize import QUANT_MODES, quantize_network
from engine.families.spec import FamilySpec, all_families, family_for
from engine.families.tokens import build_tokenizer, load_hf_tokenizer, resolve_special_ids
from engine.tokenizer import Tokenizer
from engine.types import InfillError

# Refresh policy of the approximate context cache; INFILL_FAMILY_CACHE overrides it
# (exact | block | every:K). See docs/families.md for the measurement behind the default.
DEFAULT_CACHE_POLICY = "block"

__all__ = [
    "ArchConfig",
    "CachePolicy",
    "FamilyContext",
    "FamilyModel",
    "FamilySpec",
    "all_families",
    "detect_family",
    "load_family_model",
]


def detect_family(model_dir: Path) -> tuple[FamilySpec, dict]:
    """The family whose data file claims config.json's model_type, and the config."""
    model_dir = Path(model_dir)
    if not model_dir.is_dir():
        raise InfillError(f"model directory {model_dir} does not exist")
    config = read_config_json(model_dir)
    model_type = config.get("model_type")
    if not isinstance(model_type, str):
        raise InfillError(f"{model_dir / 'config.json'} has no model_type: cannot tell which model family it is")
    spec = family_for(model_type)
    if spec is None:
        known = ", ".join(f"{t} ({s.name})" for s in all_families() for t in s.model_types)
        raise InfillError(f"{model_dir / 'config.json'}: model_type {model_type!r} is not a supported family; supported model types: {known}")
    return spec, config


def load_family_model(
    model_dir: Union[str, Path],
    device: str = "cpu",
    dtype: Optional[Union[str, torch.dtype]] = None,
    quantization: Optional[str] = None,
    cache_policy: Optional[str] = None,
) -> tuple[FamilyModel, Tokenizer, dict[str, Any]]:
    """Load a family checkpoint directory. Any problem is a one-line InfillError."""
    model_dir = Path(model_dir)
    spec, config = detect_family(model_dir)
    if quantization is not None and quantization not in QUANT_MODES:
        raise InfillError(f"unknown quantization {quantization!r}; use one of {', '.join(QUANT_MODES)}")
    arch = arch_from_config(spec, config, model_dir / "config.json")
    hf = load_hf_tokenizer(model_dir, spec)
    ids = resolve_special_ids(spec, config, hf, model_dir, arch.vocab_size)
    torch_dtype = parse_dtype(dtype, config, device)
    net = load_weights(model_dir, spec, arch, torch_dtype, device)
    if quantization is not None:
        net = quantize_network(net, quantization, device)
    policy_text = cache_policy or os.environ.get("INFILL_FAMILY_CACHE", DEFAULT_CACHE_POLICY)
    try:
        policy = CachePolicy.parse(policy_text)
    except ValueError as exc:
        raise InfillError(str(exc)) from None
    model = FamilyModel(net, spec, ids, tokenizer_vocab=hf.get_vocab_size(with_added_tokens=True), policy=policy)
    info = {
        "family": spec.name,
        "title": spec.title,
        "model_type": config.get("model_type"),
        "path": str(model_dir),
        "parameters": arch.num_parameters(),
        "layers": arch.num_layers,
        "hidden_size": arch.hidden_size,
        "heads": f"{arch.num_heads}/{arch.num_kv_heads}",
        "vocab_size": arch.vocab_size,
        "dtype": str(torch_dtype).replace("torch.", ""),
        "device": device,
        "quantization": quantization or "none",
        "mask_id": ids.mask,
        "eom_id": ids.eom,
        "shift_logits": spec.shift_logits,
        "cache_policy": policy.describe(),
        "licence": spec.licence,
    }
    return model, build_tokenizer(hf, ids), info
