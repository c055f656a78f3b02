"""Checkpoint averaging: the mean of the last few snapshots of a run, kept only if better.

    python -m lab.training.average --run runs/main [--last 4] [--write]

`python -m lab train --snapshots N` keeps the model weights of the last N checkpoints (every
`--checkpoint-minutes`) in <run>/snapshots/. Late in a decaying learning-rate schedule the
weights wander around a minimum; their mean usually sits closer to it than any one of
them. This script measures that instead of assuming it: it scores the run's latest
weights and the average of the last N snapshots on the same fixed validation batches
(more of them than training logs, so the comparison is less noisy), prints both, and with
`--write` replaces <run>/model's weights by the average only if its masked CE is lower.
config.json then records which steps were averaged.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

from engine.model import InfillTransformer, ModelConfig
from engine.modeldir import TOKENIZER_FILE, read_config, save_model_dir
from engine.tokenizer import Tokenizer
from lab.training.data import DataConfig
from lab.training.snapshots import SNAPSHOT_DIR, snapshot_paths
from lab.training.train import evaluate, validation_batches
from lab.training.checkpoint import load_verified

def average_states(paths: list[Path]) -> tuple[dict[str, torch.Tensor], list[int]]:
    """Element-wise mean of the snapshots' weights (in float32) and the steps averaged."""
    total: dict[str, torch.Tensor] = {}
    steps = []
    for path in paths:
        snap = load_verified(path)
        steps.append(int(snap["step"]))
        for name, tensor in snap["model"].items():
            total[name] = total.get(name, 0) + tensor.float()
    return {name: tensor / len(paths) for name, tensor in total.items()}, steps


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.training.average", description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, default=Path("runs/main"))
    parser.add_argument("--corpus", type=Path, default=Path("data/corpus"))
    parser.add_argument("--last", type=int, default=4, help="snapshots to average (newest)")
    parser.add_argument("--batches", type=int, default=24, help="validation batches of 16 examples")
    parser.add_argument("--write", action="store_true", help="replace <run>/model's weights by the average if it scores better")
    args = parser.parse_args(argv)
    model_dir = args.run / "model"
    paths = snapshot_paths(args.run)[-args.last :]
    if len(paths) < 2:
        print(f"error: {args.run / SNAPSHOT_DIR} holds {len(paths)} snapshot(s); averaging needs at least 2 (python -m lab train --snapshots N)", file=sys.stderr)
        return 2
    config = read_config(model_dir)
    cfg = ModelConfig.from_dict(config["model"])
    tok = Tokenizer.from_file(model_dir / TOKENIZER_FILE)
    data = config.get("training", {}).get("data", {})
    data_cfg = DataConfig(prefix_tokens=data.get("prefix_tokens", DataConfig.prefix_tokens), suffix_tokens=data.get("suffix_tokens", DataConfig.suffix_tokens))
    batches = validation_batches(tok, data_cfg, args.corpus, n_batches=args.batches, batch_size=16)
    device = torch.device("cpu")

    def score(state: dict[str, torch.Tensor]) -> dict[str, float]:
        model = InfillTransformer(cfg)
        model.load_state_dict(state)
        return evaluate(model.to(device), batches, device, lambda: torch.autocast("cpu", dtype=torch.bfloat16))

    latest = load_verified(paths[-1])
    averaged, steps = average_states(paths)
    scores = {"latest": score(latest["model"]), "average": score(averaged)}
    report = {"steps_averaged": steps, **{k: {m: round(v, 4) for m, v in s.items()} for k, s in scores.items()}}
    better = scores["average"]["masked_ce"] < scores["latest"]["masked_ce"]
    report["average_is_better"] = better
    print(json.dumps(report, indent=2))
    if args.write and better:
        model = InfillTransformer(cfg)
        model.load_state_dict(averaged)
        training = dict(config.get("training", {}))
        training["averaged_steps"] = steps
        training["averaged_validation"] = {"average": report["average"], "latest": report["latest"], "batches": args.batches}
        extra = {k: v for k, v in config.items() if k not in ("format", "model")} | {"training": training}
        save_model_dir(model, model_dir / TOKENIZER_FILE, model_dir, extra)
        print(f"wrote the average of steps {steps} to {model_dir}")
    elif args.write:
        print(f"kept {model_dir}: the average was not better")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
