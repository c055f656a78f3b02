"""Family specs: one TOML data file per checkpoint family, parsed into a typed record.

Everything that differs between Dream, LLaDA and Open-dCoder (config key names, tensor
names, special tokens, prompt layout, logit shift) lives in the data files next to this
module, so adding a family is mostly writing a file, not code.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Optional

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 fallback
    import tomli as tomllib  # type: ignore[no-redef]

from engine.types import InfillError

DATA_DIR = Path(__file__).resolve().parent
ARCHITECTURES = ("qwen2", "llama")
TOKEN_ROLES = ("mask", "bos", "eom", "pad", "eos")


@dataclass(frozen=True)
class FamilySpec:
    name: str
    title: str
    model_types: tuple[str, ...]
    architecture: str  # "qwen2" | "llama": which block the weights describe
    shift_logits: bool  # True: hidden state i scores token i+1 (Dream, Open-dCoder)
    licence: str
    examples: tuple[str, ...]
    config_keys: dict[str, tuple[str, ...]]  # internal field -> config.json keys, in order
    defaults: dict[str, Any]
    require: dict[str, Any]  # config.json values the implementation assumes
    tokens: dict[str, tuple[str, ...]]  # role -> token strings, first known one wins
    id_keys: dict[str, str]  # role -> config.json key holding that id
    default_ids: dict[str, int]
    before_prefix: tuple[str, ...]  # roles of tokens put before the prefix
    after_suffix: tuple[str, ...]  # roles of tokens put after the suffix
    pad_is_attended: bool  # False: pad tokens are hidden from attention as keys
    weights: dict[str, str]  # internal parameter name -> checkpoint tensor name ({i} = layer)
    ignore_patterns: tuple[str, ...]
    reference: dict[str, Any]  # shape of the family's reference checkpoint, for the memory table
    requires_mask_token: bool = False
    pretokenize_regex: Optional[str] = None  # for vocab.json + merges.txt directories
    source: Path = field(default=DATA_DIR)

    def matches(self, model_type: str) -> bool:
        return model_type.lower() in self.model_types


def _tuple(value: Any) -> tuple:
    return tuple(value) if isinstance(value, list) else (value,)


def parse_spec(data: dict, source: Path) -> FamilySpec:
    """Build a FamilySpec from a parsed TOML table; a malformed file is an InfillError."""
    try:
        arch = data["architecture"]
        if arch not in ARCHITECTURES:
            raise ValueError(f"architecture {arch!r} is not one of {ARCHITECTURES}")
        layout = data.get("layout", {})
        tokens = {role: tuple(data.get("tokens", {}).get(role, [])) for role in TOKEN_ROLES}
        return FamilySpec(
            name=data["name"],
            title=data.get("title", data["name"]),
            model_types=tuple(t.lower() for t in data["model_types"]),
            architecture=arch,
            shift_logits=bool(data["shift_logits"]),
            licence=data.get("licence", "unknown"),
            examples=tuple(data.get("examples", [])),
            config_keys={k: _tuple(v) for k, v in data["config"].items()},
            defaults=dict(data.get("defaults", {})),
            require=dict(data.get("require", {})),
            tokens=tokens,
            id_keys=dict(data.get("ids", {})),
            default_ids={k: int(v) for k, v in data.get("default_ids", {}).items()},
            before_prefix=tuple(layout.get("before_prefix", [])),
            after_suffix=tuple(layout.get("after_suffix", [])),
            pad_is_attended=bool(layout.get("pad_is_attended", True)),
            weights=dict(data["weights"]),
            ignore_patterns=tuple(data.get("ignore", {}).get("patterns", [])),
            reference=dict(data.get("memory", {})),
            requires_mask_token=bool(data.get("requires_mask_token", False)),
            pretokenize_regex=data.get("tokenizer", {}).get("pretokenize_regex"),
            source=source,
        )
    except (KeyError, ValueError, TypeError) as exc:
        raise InfillError(f"family data file {source} is malformed: {exc}") from exc


@lru_cache(maxsize=None)
def all_families() -> tuple[FamilySpec, ...]:
    """Every family data file shipped with infill, sorted by name."""
    specs = []
    for path in sorted(DATA_DIR.glob("*.toml")):
        with path.open("rb") as fh:
            specs.append(parse_spec(tomllib.load(fh), path))
    return tuple(specs)


def family_for(model_type: str) -> Optional[FamilySpec]:
    for spec in all_families():
        if spec.matches(model_type):
            return spec
    return None


def family_by_name(name: str) -> FamilySpec:
    for spec in all_families():
        if spec.name == name:
            return spec
    raise InfillError(f"no model family named {name!r}; known: {', '.join(s.name for s in all_families())}")
