"""Tokenizer files of a checkpoint directory -> infill's Tokenizer with the family's special ids."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from tokenizers import AddedToken, Regex, decoders, normalizers, pre_tokenizers
from tokenizers import Tokenizer as HFTokenizer
from tokenizers.models import BPE

from engine.families.spec import FamilySpec
from engine.tokenizer import Tokenizer
from engine.types import InfillError

# bos is looked up by token first: Dream's config.json sets bos_token_id to <|endoftext|>,
# while its tokenizer (and DreamOn's infill prompt) starts with <|beginoftext|>.
TOKEN_FIRST_ROLES = frozenset({"bos"})


@dataclass(frozen=True)
class SpecialIds:
    mask: int
    eom: int
    pad: int
    eos: Optional[int]
    bos: Optional[int]


def _read_json(path: Path) -> dict:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InfillError(f"{path} is not valid JSON: {exc}") from exc
    return data if isinstance(data, dict) else {}


def load_hf_tokenizer(model_dir: Path, spec: FamilySpec) -> HFTokenizer:
    """tokenizer.json when present; else a byte-level BPE from vocab.json + merges.txt with
    the family's pre-tokenizer and the added tokens tokenizer_config.json declares."""
    path = model_dir / "tokenizer.json"
    if path.is_file():
        try:
            return HFTokenizer.from_file(str(path))
        except Exception as exc:  # the Rust side raises plain Exception subclasses
            raise InfillError(f"cannot read {path}: {exc}") from exc
    vocab, merges = model_dir / "vocab.json", model_dir / "merges.txt"
    if not (vocab.is_file() and merges.is_file()):
        raise InfillError(f"{model_dir} has no tokenizer.json (nor vocab.json + merges.txt)")
    if spec.pretokenize_regex is None:
        raise InfillError(f"{model_dir} has no tokenizer.json and the {spec.name} family cannot build one from vocab.json + merges.txt")
    try:
        hf = HFTokenizer(BPE.from_file(str(vocab), str(merges)))
    except Exception as exc:
        raise InfillError(f"cannot read {vocab.name} + {merges.name}: {exc}") from exc
    hf.normalizer = normalizers.NFC()
    hf.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(spec.pretokenize_regex), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    hf.decoder = decoders.ByteLevel()
    added = _read_json(model_dir / "tokenizer_config.json").get("added_tokens_decoder", {})
    for key in sorted(added, key=int):
        entry = added[key]
        token = AddedToken(entry["content"], special=bool(entry.get("special", True)), normalized=False)
        hf.add_special_tokens([token]) if entry.get("special", True) else hf.add_tokens([token])
        got = hf.token_to_id(entry["content"])
        if got != int(key):
            raise InfillError(f"{model_dir}/tokenizer_config.json declares {entry['content']!r} as id {key}, but vocab.json puts it at {got}")
    return hf


def _declared_token(model_dir: Path, role: str) -> Optional[str]:
    """A `<role>_token` named by tokenizer_config.json or special_tokens_map.json."""
    for name in ("tokenizer_config.json", "special_tokens_map.json"):
        value = _read_json(model_dir / name).get(f"{role}_token")
        if isinstance(value, dict):
            value = value.get("content")
        if isinstance(value, str):
            return value
    return None


def _config_id(config: dict, key: Optional[str]) -> Optional[int]:
    value = config.get(key) if key else None
    if isinstance(value, list):  # some configs list several eos ids; the first is canonical
        value = value[0] if value else None
    return int(value) if isinstance(value, int) else None


def _find(role: str, spec: FamilySpec, config: dict, hf: HFTokenizer, model_dir: Path) -> Optional[int]:
    by_token = [hf.token_to_id(t) for t in spec.tokens.get(role, ())]
    declared = _declared_token(model_dir, role) if role in ("mask", "bos", "eos", "pad") else None
    token_ids = [i for i in by_token + ([hf.token_to_id(declared)] if declared else []) if i is not None]
    config_id = _config_id(config, spec.id_keys.get(role))
    ordered = (token_ids + [config_id]) if role in TOKEN_FIRST_ROLES else ([config_id] + token_ids)
    for candidate in ordered:
        if candidate is not None:
            return candidate
    return spec.default_ids.get(role)


def resolve_special_ids(spec: FamilySpec, config: dict, hf: HFTokenizer, model_dir: Path, vocab_rows: int) -> SpecialIds:
    mask = _find("mask", spec, config, hf, model_dir)
    if mask is None:
        why = " (a checkpoint of this type without one is an autoregressive model, which cannot fill a masked canvas)" if spec.requires_mask_token else ""
        raise InfillError(f"{model_dir}: no mask token found in config.json or the tokenizer for the {spec.name} family{why}")
    eos = _find("eos", spec, config, hf, model_dir)
    eom = _find("eom", spec, config, hf, model_dir)
    eom = eom if eom is not None else eos
    pad = _find("pad", spec, config, hf, model_dir)
    pad = pad if pad is not None else eos
    if eom is None or pad is None:
        raise InfillError(f"{model_dir}: no end-of-text token found (needed to mark the end of the middle)")
    bos = _find("bos", spec, config, hf, model_dir)
    for role, value in (("mask", mask), ("eom", eom), ("pad", pad), ("eos", eos), ("bos", bos)):
        if value is not None and not 0 <= value < vocab_rows:
            raise InfillError(f"{model_dir}: {role} id {value} is outside the model's {vocab_rows} embedding rows")
    return SpecialIds(mask=mask, eom=eom, pad=pad, eos=eos, bos=bos)


def build_tokenizer(hf: HFTokenizer, ids: SpecialIds) -> Tokenizer:
    return Tokenizer(hf, mask_id=ids.mask, eom_id=ids.eom, pad_id=ids.pad, bos_id=ids.bos)
