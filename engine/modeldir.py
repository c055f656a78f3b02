"""Model directories: `config.json` + `tokenizer.json` + `model.safetensors`.

config.json of infill's own models:
    {"format": "infill", "model": {ModelConfig fields}, "training": {...}, "quantization": {...}?}
Every problem with a directory becomes one InfillError line that names the file and the fix.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from engine.model import InfillTransformer, ModelConfig
from engine.tokenizer import Tokenizer
from engine.types import InfillError

CONFIG_FILE, TOKENIZER_FILE, WEIGHTS_FILE = "config.json", "tokenizer.json", "model.safetensors"


def read_config(model_dir: Path) -> dict[str, Any]:
    if not model_dir.exists():
        raise InfillError(f"model directory {model_dir} does not exist")
    if not model_dir.is_dir():
        raise InfillError(f"{model_dir} is not a directory (expected a model directory with {CONFIG_FILE})")
    path = model_dir / CONFIG_FILE
    if not path.exists():
        raise InfillError(f"{model_dir} has no {CONFIG_FILE}: not a model directory")
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InfillError(f"{path} is not valid JSON ({exc}); the model directory is corrupt") from None
    if not isinstance(config, dict):
        raise InfillError(f"{path} must hold a JSON object")
    return config


def load_tokenizer(model_dir: Path) -> Tokenizer:
    path = model_dir / TOKENIZER_FILE
    if not path.exists():
        raise InfillError(f"{model_dir} has no {TOKENIZER_FILE}")
    try:
        return Tokenizer.from_file(path)
    except Exception as exc:  # tokenizers raises plain Exceptions for bad files
        raise InfillError(f"{path} could not be read as a tokenizer: {str(exc).splitlines()[0][:200]}") from None


def load_infill_model(model_dir: Path, config: dict[str, Any], device: str = "cpu") -> InfillTransformer:
    try:
        model_cfg = ModelConfig.from_dict(config["model"])
    except (KeyError, TypeError, ValueError) as exc:
        raise InfillError(f"{model_dir / CONFIG_FILE}: bad \"model\" section ({exc})") from None
    model = InfillTransformer(model_cfg)
    quantization = config.get("quantization")
    if quantization:
        from engine import quant  # imported only for quantized directories

        quant.prepare_for_load(model, quantization)
    weights_path = model_dir / WEIGHTS_FILE
    if not weights_path.exists():
        raise InfillError(f"{model_dir} has no {WEIGHTS_FILE}")
    try:
        state = load_file(str(weights_path), device=device)
    except (SafetensorError, OSError, ValueError) as exc:
        raise InfillError(f"{weights_path} is corrupt or truncated ({str(exc).splitlines()[0][:200]})") from None
    if model_cfg.tie_embeddings:
        state.setdefault("lm_head.weight", state.get("embed.weight"))
    expected = model.state_dict()
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    if missing or unexpected:
        raise InfillError(f"{weights_path} does not match config.json: missing {missing[:3]}, unexpected {unexpected[:3]}")
    for name, tensor in state.items():
        if tensor.shape != expected[name].shape:
            raise InfillError(f"{weights_path}: tensor {name} has shape {tuple(tensor.shape)}, config.json implies {tuple(expected[name].shape)}")
    model.load_state_dict(state, strict=True)
    return model.to(device).eval()


def save_model_dir(model: InfillTransformer, tokenizer_file: Path, out_dir: Path, extra: Optional[dict[str, Any]] = None, dtype: torch.dtype = torch.float32) -> None:
    """Write a model directory atomically enough for a training loop: files are written to
    temporary names and renamed, so a crash never leaves a half-written weights file."""
    out_dir.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().to(dtype).contiguous() for k, v in model.state_dict().items()}
    if model.cfg.tie_embeddings:
        state.pop("lm_head.weight", None)
    config = {"format": "infill", "model": model.cfg.to_dict()}
    config.update(extra or {})
    tmp_weights = out_dir / (WEIGHTS_FILE + ".tmp")
    save_file(state, str(tmp_weights), metadata={"format": "pt"})
    tmp_weights.replace(out_dir / WEIGHTS_FILE)
    (out_dir / (CONFIG_FILE + ".tmp")).write_text(json.dumps(config, indent=2) + "\n")
    (out_dir / (CONFIG_FILE + ".tmp")).replace(out_dir / CONFIG_FILE)
    if tokenizer_file.resolve() != (out_dir / TOKENIZER_FILE).resolve():
        (out_dir / TOKENIZER_FILE).write_bytes(tokenizer_file.read_bytes())
