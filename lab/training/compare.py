"""Score model directories on one fixed validation set: the check before publishing.

    python -m lab.training.compare engine/default_model runs/v2cont/model --corpus data/corpus

Every model is scored on the same validation batches (held-out files, seeded cuts and
noise; `validation_batches`), built with the data recipe of the first model, so a run
continued with new training code is compared with the published model on equal terms.
Exit status 0 when the last model is better (lower masked-position CE) than the first, 1
when it is not: `compare A B && python -m lab.training.publish B`.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
from engine.modeldir import TOKENIZER_FILE, load_infill_model, read_config
from engine.tokenizer import Tokenizer

from .data import DataConfig
from .train import evaluate, validation_batches


def score(model_dirs: list[Path], corpus: Path, n_batches: int) -> list[dict]:
    first = read_config(model_dirs[0])
    data = first.get("training", {}).get("data", {})
    data_cfg = DataConfig(prefix_tokens=data.get("prefix_tokens", DataConfig.prefix_tokens), suffix_tokens=data.get("suffix_tokens", DataConfig.suffix_tokens))
    tok = Tokenizer.from_file(model_dirs[0] / TOKENIZER_FILE)
    batches = validation_batches(tok, data_cfg, corpus, n_batches=n_batches, batch_size=16)
    rows = []
    for model_dir in model_dirs:
        config = read_config(model_dir)
        if (model_dir / TOKENIZER_FILE).read_bytes() != (model_dirs[0] / TOKENIZER_FILE).read_bytes():
            raise SystemExit(f"error: {model_dir} has another tokenizer than {model_dirs[0]}; their losses are not comparable")
        model = load_infill_model(model_dir, config).float()
        stats = evaluate(model, batches, torch.device("cpu"), lambda: torch.autocast("cpu", dtype=torch.bfloat16))
        training = config.get("training", {})
        rows.append({"model": str(model_dir), "steps": training.get("steps"), "tokens_seen": training.get("tokens_seen"),
                     **{k: round(v, 4) for k, v in stats.items()}})
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lab.training.compare", description=__doc__.splitlines()[0])
    p.add_argument("models", nargs="+", type=Path, help="model directories; the first is the reference")
    p.add_argument("--corpus", type=Path, default=Path("data/corpus"))
    p.add_argument("--batches", type=int, default=24, help="validation batches of 16 examples")
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args(argv)
    if len(args.models) < 2:
        p.error("give at least two model directories")
    rows = score(args.models, args.corpus, args.batches)
    for r in rows:
        print(f"{r['model']}: masked CE {r['masked_ce']:.4f}  next-token CE {r['ar_loss']:.4f}  (steps {r['steps']}, tokens {r['tokens_seen']})")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    better = rows[-1]["masked_ce"] < rows[0]["masked_ce"]
    print(f"compare: {rows[-1]['model']} is {'better' if better else 'not better'} than {rows[0]['model']}")
    return 0 if better else 1


if __name__ == "__main__":
    sys.exit(main())
