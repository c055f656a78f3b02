"""Publish a trained model directory as the embedded default model (engine/default_model).

    python -m lab.training.publish runs/main/model

Weights are stored in bf16 (half the size; inference upcasts to fp32 on load, and the
bench's exact match is unchanged by it), config and tokenizer are copied as they are.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

from engine.api import DEFAULT_MODEL_DIR
from engine.modeldir import TOKENIZER_FILE, load_infill_model, read_config, save_model_dir


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.training.publish", description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path, help="a model directory written by python -m lab train (<run>/model)")
    parser.add_argument("--out", type=Path, default=DEFAULT_MODEL_DIR)
    args = parser.parse_args(argv)
    config = read_config(args.source)
    model = load_infill_model(args.source, config)
    extra = {k: v for k, v in config.items() if k not in ("format", "model")}
    extra["name"] = "infill-default"
    save_model_dir(model, args.source / TOKENIZER_FILE, args.out, extra, dtype=torch.bfloat16)
    size = sum(f.stat().st_size for f in args.out.iterdir()) / 1e6
    print(f"published {args.source} -> {args.out} ({size:.1f} MB): {json.dumps(config.get('training', {}).get('last_validation'))}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
