"""Architecture hyper-parameters read from a checkpoint's config.json through a family spec."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.families.spec import FamilySpec
from engine.types import InfillError

_MISSING = object()


@dataclass(frozen=True)
class ArchConfig:
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    ffn_hidden: int
    vocab_size: int  # embedding / lm-head rows (may exceed the tokenizer's vocabulary)
    norm_eps: float
    rope_theta: float
    tie_embeddings: bool
    qkv_bias: bool

    @property
    def kv_groups(self) -> int:
        return self.num_heads // self.num_kv_heads

    def num_parameters(self) -> int:
        h, d = self.hidden_size, self.head_dim
        attn = h * self.num_heads * d * 2 + h * self.num_kv_heads * d * 2
        if self.qkv_bias:
            attn += self.num_heads * d + 2 * self.num_kv_heads * d
        per_layer = attn + 3 * h * self.ffn_hidden + 2 * h
        head = 0 if self.tie_embeddings else self.vocab_size * h
        return self.num_layers * per_layer + self.vocab_size * h + head + h


def read_config_json(model_dir: Path) -> dict:
    path = model_dir / "config.json"
    if not path.is_file():
        raise InfillError(f"{model_dir} has no config.json: not a model directory")
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InfillError(f"{path} is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise InfillError(f"{path} must hold a JSON object")
    return data


def _get(config: dict, key: str) -> Any:
    """config[key], where a dotted key ("rope_parameters.rope_theta") walks nested tables."""
    value: Any = config
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def _lookup(config: dict, keys: tuple[str, ...]) -> Any:
    for key in keys:
        value = _get(config, key)
        if value is not None:
            return value
    return _MISSING


def check_requirements(spec: FamilySpec, config: dict, path: Path) -> None:
    """Refuse, by key name, config values this implementation does not reproduce."""
    for key, wanted in spec.require.items():
        value = _get(config, key)
        if wanted == "none":
            ok = value in (None, {}, "none", "default") or (isinstance(value, dict) and value.get("rope_type", value.get("type")) == "default")
        elif value is None:
            ok = True  # absent keys take the implementation's (matching) default
        else:
            ok = value == wanted
        if not ok:
            raise InfillError(f"{path}: {key}={value!r} is not supported for the {spec.name} family (need {wanted!r})")


def arch_from_config(spec: FamilySpec, config: dict, path: Path) -> ArchConfig:
    check_requirements(spec, config, path)
    values: dict[str, Any] = {}
    for field in ("hidden_size", "num_layers", "num_heads", "num_kv_heads", "head_dim", "ffn_hidden", "vocab_size", "norm_eps", "rope_theta", "tie_embeddings", "qkv_bias"):
        value = _lookup(config, spec.config_keys.get(field, ()))
        if value is _MISSING:
            value = spec.defaults.get(field, _MISSING)
        values[field] = value
    if values["head_dim"] is _MISSING and values["hidden_size"] is not _MISSING and values["num_heads"] is not _MISSING:
        values["head_dim"] = int(values["hidden_size"]) // int(values["num_heads"])
    missing = [f for f, v in values.items() if v is _MISSING]
    if missing:
        keys = ", ".join("/".join(spec.config_keys.get(f, (f,))) or f for f in missing)
        raise InfillError(f"{path} lacks {keys} (needed for the {spec.name} family)")
    try:
        arch = ArchConfig(
            hidden_size=int(values["hidden_size"]),
            num_layers=int(values["num_layers"]),
            num_heads=int(values["num_heads"]),
            num_kv_heads=int(values["num_kv_heads"]),
            head_dim=int(values["head_dim"]),
            ffn_hidden=int(values["ffn_hidden"]),
            vocab_size=int(values["vocab_size"]),
            norm_eps=float(values["norm_eps"]),
            rope_theta=float(values["rope_theta"]),
            tie_embeddings=bool(values["tie_embeddings"]),
            qkv_bias=bool(values["qkv_bias"]),
        )
    except (TypeError, ValueError) as exc:
        raise InfillError(f"{path} has a non-numeric architecture value: {exc}") from exc
    if min(arch.hidden_size, arch.num_layers, arch.num_heads, arch.num_kv_heads, arch.head_dim, arch.ffn_hidden, arch.vocab_size) <= 0:
        raise InfillError(f"{path} has a non-positive size in {arch}")
    if arch.num_heads % arch.num_kv_heads:
        raise InfillError(f"{path}: {arch.num_heads} attention heads are not a multiple of {arch.num_kv_heads} key/value heads")
    if arch.head_dim % 2:
        raise InfillError(f"{path}: head_dim {arch.head_dim} is odd; rotary embeddings need it even")
    return arch
