"""`infill quantize MODEL_DIR OUT_DIR --bits 8|4`: write a quantized model directory.

OUT_DIR gets every file of MODEL_DIR (tokenizer.json and anything else) plus a new
model.safetensors with the quantized layers and a config.json with a "quantization"
record (engine.quant.convert), which engine.load reads directly. config.json is written
last, so an interrupted run never leaves a directory that looks loadable.
"""
from __future__ import annotations

import argparse
import copy
import json
import shutil
import sys
from pathlib import Path
from typing import Optional

import torch
from safetensors import safe_open
from safetensors.torch import save_file

from engine.modeldir import CONFIG_FILE, WEIGHTS_FILE, load_infill_model, read_config
from engine.quant.convert import DEFAULT_GROUP_SIZE, quantize_model
from engine.quant.formats import INT4_GROUP_SIZES
from engine.types import InfillError


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="infill quantize", description="Write a weight-only quantized copy of a model directory.")
    p.add_argument("model_dir", type=Path, help="float model directory (config.json, tokenizer.json, model.safetensors)")
    p.add_argument("out_dir", type=Path, help="new directory to write (must not exist, or be empty)")
    p.add_argument("--bits", type=int, choices=(8, 4), required=True, help="8: int8 per output channel; 4: int4 group-wise")
    p.add_argument("--group-size", type=int, choices=INT4_GROUP_SIZES, default=DEFAULT_GROUP_SIZE, help="int4 group size along the input dimension")
    return p


def _stored_float_dtype(weights: Path) -> torch.dtype:
    """The dtype of the first floating-point tensor in a safetensors file (fp32 if none)."""
    with safe_open(str(weights), framework="pt") as f:
        for key in f.keys():
            dtype = f.get_slice(key).get_dtype()
            if dtype in _SAFETENSORS_FLOATS:
                return _SAFETENSORS_FLOATS[dtype]
    return torch.float32


_SAFETENSORS_FLOATS = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16}


def _dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


@torch.no_grad()
def _logit_error(ref: torch.nn.Module, quant: torch.nn.Module, vocab: int) -> float:
    """Max |logit difference| / max |logit| on a random context and canvas: a sanity
    figure printed for the user, not a quality measurement."""
    g = torch.Generator().manual_seed(0)
    prefix = torch.randint(0, vocab, (24,), generator=g).tolist()
    suffix = torch.randint(0, vocab, (8,), generator=g).tolist()
    canvas = torch.randint(0, vocab, (1, 16), generator=g)
    a = ref.canvas_logits(ref.encode_context(prefix, suffix), canvas)
    b = quant.canvas_logits(quant.encode_context(prefix, suffix), canvas)
    return float((a - b).abs().max() / a.abs().max())


def quantize_dir(model_dir: Path, out_dir: Path, bits: int, group_size: int = DEFAULT_GROUP_SIZE) -> str:
    """Do the work; returns the summary line. Raises InfillError for bad input."""
    config = read_config(model_dir)
    if config.get("quantization"):
        raise InfillError(f"{model_dir} is already quantized ({json.dumps(config['quantization'])[:80]}); quantize the float model instead")
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise InfillError(f"output {out_dir} already exists and is not an empty directory; choose a new path")
    if out_dir.resolve().is_relative_to(model_dir.resolve()):
        raise InfillError(f"output {out_dir} must not be MODEL_DIR or inside it")
    ref = load_infill_model(model_dir, config)
    model = load_infill_model(model_dir, config)
    spec = quantize_model(model, bits, group_size)
    created = not out_dir.exists()
    try:
        _write(model_dir, out_dir, config, model, spec)
    except BaseException:
        if created:  # leave nothing half-written behind (a rerun would refuse a non-empty OUT_DIR)
            shutil.rmtree(out_dir, ignore_errors=True)
        raise

    # Read back through the real loader: catches any mismatch with engine.load now.
    reloaded = load_infill_model(out_dir, read_config(out_dir))
    err = _logit_error(ref, reloaded, ref.cfg.vocab_size)
    before, after = (model_dir / WEIGHTS_FILE).stat().st_size, (out_dir / WEIGHTS_FILE).stat().st_size
    kind = "int8 per-channel" if bits == 8 else f"int4 group {group_size}"
    return (
        f"wrote {out_dir} ({kind}, {len(spec['modules'])} layers): weights {before / 1e6:.2f} MB -> {after / 1e6:.2f} MB, "
        f"directory {_dir_bytes(out_dir) / 1e6:.2f} MB; max logit error {err:.2%} of max |logit| on a random canvas"
    )


def _write(model_dir: Path, out_dir: Path, config: dict, model: torch.nn.Module, spec: dict) -> None:
    """Copy the other files, then weights, then config.json (last: the commit point)."""
    new_config = copy.deepcopy(config)
    if spec["tied_head"]:
        # The head now has its own (quantized) weights, so the directory describes an
        # untied model: loaders must not re-tie lm_head to the float embedding.
        new_config["model"]["tie_embeddings"] = False
    new_config["quantization"] = spec

    out_dir.mkdir(parents=True, exist_ok=True)
    for item in model_dir.iterdir():
        if item.name in (CONFIG_FILE, WEIGHTS_FILE) or item.name.endswith(".tmp"):
            continue
        if item.is_dir():
            shutil.copytree(item, out_dir / item.name)
        else:
            shutil.copy2(item, out_dir / item.name)
    # Float tensors that stay float (embedding, norms) keep the source file's precision:
    # a bf16 checkpoint must not grow an fp32 embedding. Codes and scales keep theirs.
    float_dtype = _stored_float_dtype(model_dir / WEIGHTS_FILE)
    quantized = tuple(name + "." for name in spec["modules"])
    state = {
        k: (v.detach().to(float_dtype) if v.is_floating_point() and not k.startswith(quantized) else v.detach()).contiguous()
        for k, v in model.state_dict().items()
    }
    tmp = out_dir / (WEIGHTS_FILE + ".tmp")
    save_file(state, str(tmp), metadata={"format": "pt", "quantization": json.dumps(spec)})
    tmp.replace(out_dir / WEIGHTS_FILE)
    (out_dir / (CONFIG_FILE + ".tmp")).write_text(json.dumps(new_config, indent=2) + "\n")
    (out_dir / (CONFIG_FILE + ".tmp")).replace(out_dir / CONFIG_FILE)


def main(argv: Optional[list[str]] = None) -> int:
    args_in = list(sys.argv[1:] if argv is None else argv)
    if args_in[:1] == ["quantize"] and not Path("quantize").exists():
        args_in = args_in[1:]  # tolerate being handed the subcommand name too
    try:
        args = _parser().parse_args(args_in)
    except SystemExit as exc:  # argparse has printed its usage line
        return int(exc.code or 0)
    try:
        print(quantize_dir(args.model_dir, args.out_dir, args.bits, args.group_size))
    except InfillError as exc:
        print(f"infill quantize: error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # unwritable OUT_DIR, full disk: say which file, no traceback
        print(f"infill quantize: error: {exc.strerror or exc}{f': {exc.filename}' if exc.filename else ''}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
