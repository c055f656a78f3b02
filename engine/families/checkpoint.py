"""Reading safetensors checkpoints (single file or sharded) into a BidirectionalDecoder.

Every failure is an InfillError whose one line names the file or tensor at fault: a shard
the index names but the directory lacks, a truncated or corrupt file, a tensor whose shape
disagrees with config.json, a tensor missing or unexpected for the family.
"""
from __future__ import annotations

import fnmatch
import json
from pathlib import Path
from typing import Optional

import torch
from safetensors import SafetensorError, safe_open

from engine.families.arch import ArchConfig
from engine.families.network import BidirectionalDecoder
from engine.families.spec import FamilySpec
from engine.types import InfillError

INDEX_NAME = "model.safetensors.index.json"
SINGLE_NAME = "model.safetensors"


def tensor_locations(model_dir: Path) -> dict[str, Path]:
    """Checkpoint tensor name -> the safetensors file that holds it."""
    index = model_dir / INDEX_NAME
    if index.is_file():
        try:
            weight_map = json.loads(index.read_text())["weight_map"]
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as exc:
            raise InfillError(f"{index} is not a valid safetensors index (needs a weight_map): {exc}") from exc
        shards = sorted(set(weight_map.values()))
        missing = [s for s in shards if not (model_dir / s).is_file()]
        if missing:
            raise InfillError(f"{model_dir}: shard {missing[0]} named in {INDEX_NAME} is missing" + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""))
        return {name: model_dir / shard for name, shard in weight_map.items()}
    files = [model_dir / SINGLE_NAME] if (model_dir / SINGLE_NAME).is_file() else sorted(model_dir.glob("*.safetensors"))
    if not files:
        bins = sorted(p.name for p in model_dir.glob("*.bin"))
        hint = f" (found {bins[0]}: convert PyTorch .bin weights to safetensors first)" if bins else ""
        raise InfillError(f"{model_dir} has no *.safetensors weights{hint}")
    if len(files) > 1:
        raise InfillError(f"{model_dir} has {len(files)} safetensors files but no {INDEX_NAME} saying which tensor is where")
    return {name: files[0] for name in _keys(files[0])}


def _keys(path: Path) -> list[str]:
    try:
        with safe_open(str(path), framework="pt") as fh:
            return list(fh.keys())
    except (SafetensorError, OSError) as exc:
        raise InfillError(f"cannot read {path.name}: truncated or corrupt safetensors file ({exc})") from exc


def expected_names(spec: FamilySpec, arch: ArchConfig, model: BidirectionalDecoder) -> dict[str, str]:
    """Internal parameter name -> checkpoint tensor name, for the parameters `model` has."""
    params = dict(model.named_parameters())
    mapping: dict[str, str] = {}
    for internal, ckpt in spec.weights.items():
        indices = range(arch.num_layers) if "{i}" in internal else [None]
        for i in indices:
            name = internal.format(i=i) if i is not None else internal
            if name in params:
                mapping[name] = ckpt.format(i=i) if i is not None else ckpt
    unmapped = sorted(set(params) - set(mapping))
    if unmapped:
        raise InfillError(f"family data file {spec.source.name} maps no checkpoint tensor to parameter {unmapped[0]}")
    return mapping


def load_weights(
    model_dir: Path,
    spec: FamilySpec,
    arch: ArchConfig,
    dtype: torch.dtype,
    device: str,
) -> BidirectionalDecoder:
    """Build the network without allocating it, then fill it straight from the files."""
    with torch.device("meta"):
        model = BidirectionalDecoder(arch)
    mapping = expected_names(spec, arch, model)
    shapes = {name: tuple(p.shape) for name, p in model.named_parameters()}
    where = tensor_locations(model_dir)
    missing = [ckpt for ckpt in mapping.values() if ckpt not in where]
    if missing:
        raise InfillError(f"{model_dir}: tensor {missing[0]} is missing from the checkpoint" + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""))
    used = set(mapping.values())
    if arch.tie_embeddings and "lm_head.weight" in spec.weights:
        used.add(spec.weights["lm_head.weight"])  # some tied checkpoints still store a head copy
    unexpected = sorted(n for n in where if n not in used and not any(fnmatch.fnmatch(n, f"*{p}*") for p in spec.ignore_patterns))
    if unexpected:
        raise InfillError(f"{model_dir}: checkpoint tensor {unexpected[0]} has no place in the {spec.name} family's model" + (f" (and {len(unexpected) - 1} more)" if len(unexpected) > 1 else "") + "; wrong family or an unsupported variant")

    by_file: dict[Path, list[str]] = {}
    for internal, ckpt in mapping.items():
        by_file.setdefault(where[ckpt], []).append(internal)
    state: dict[str, torch.Tensor] = {}
    load_device = "cpu" if device == "cpu" else device
    for path, internals in by_file.items():
        try:
            with safe_open(str(path), framework="pt", device=load_device) as fh:
                for internal in internals:
                    ckpt = mapping[internal]
                    shape = tuple(fh.get_slice(ckpt).get_shape())
                    if shape != shapes[internal]:
                        raise InfillError(f"{path.name}: tensor {ckpt} has shape {list(shape)} but config.json implies {list(shapes[internal])}")
                    state[internal] = fh.get_tensor(ckpt).to(dtype)
        except (SafetensorError, OSError) as exc:
            raise InfillError(f"cannot read {path.name}: truncated or corrupt safetensors file ({exc})") from exc
    model.load_state_dict(state, strict=True, assign=True)
    model.requires_grad_(False)  # inference only; assign=True made them trainable leaves
    return model.eval()


def parse_dtype(name: Optional[object], config: dict, device: str) -> torch.dtype:
    """The compute dtype: an explicit choice, else bf16 on accelerators and fp32 on CPU
    (CPU bf16 matmuls are slow and fp32 makes the reference checks exact)."""
    if isinstance(name, torch.dtype):
        return name
    table = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16, "bf16": torch.bfloat16, "float16": torch.float16, "fp16": torch.float16}
    if name is None:
        return torch.float32 if device == "cpu" else table.get(str(config.get("torch_dtype", "bfloat16")), torch.bfloat16)
    if str(name) not in table:
        raise InfillError(f"unknown dtype {name!r}; use one of {', '.join(sorted(table))}")
    return table[str(name)]
