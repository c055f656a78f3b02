"""Score model directories on one fixed validation set: the check before publishing.

    python -m lab.training.compare engine/default_model runs/v2cont/model --corpus data/corpus

Every model is scored on the same validation batches (held-out files, seeded cuts and
noise; `validation_batches`), built with the data recipe of the first model, so a run
continued with new training code is compared with the published model on equal terms.
Exit status 0 when the last model is better (lower masked-position CE) than the first, 1
when it is not: `compare A B && python -m lab.training.publish B`.

`--dev N` also infills the first N items of the dev set (lab/bench_data/dev_lines.jsonl:
single lines of validation files, never the held-out benchmark's) with each model and
the engine's default settings, and reports exact match and edit similarity: the loss
says how well a model predicts, the dev set what a user would see.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Optional

import torch
from engine.modeldir import TOKENIZER_FILE, load_infill_model, read_config
from engine.tokenizer import Tokenizer

from .data import DataConfig
from .train import evaluate, validation_batches


def score(model_dirs: list[Path], corpus: Path, n_batches: int, languages: str = "") -> list[dict]:
    first = read_config(model_dirs[0])
    data = first.get("training", {}).get("data", {})
    data_cfg = DataConfig(prefix_tokens=data.get("prefix_tokens", DataConfig.prefix_tokens), suffix_tokens=data.get("suffix_tokens", DataConfig.suffix_tokens))
    tok = Tokenizer.from_file(model_dirs[0] / TOKENIZER_FILE)
    batches = validation_batches(tok, data_cfg, corpus, n_batches=n_batches, batch_size=16, languages=languages)
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


def dev_scores(model_dirs: list[Path], limit: int, answers: Optional[list[list]] = None) -> list[dict]:
    """Exact match and edit similarity on the first `limit` dev items, per model;
    `answers`, when given, gets each model's per-item answers (sweep.measure)."""
    import engine
    from lab.evaluation.items import DEV_FILE, load_items
    from lab.evaluation.sweep import measure

    items = load_items(limit, path=DEV_FILE)
    rows = []
    for model_dir in model_dirs:
        mine: list = []
        rows.append({"dev_items": len(items), **measure(engine.load(model_dir), items, answers=mine)})
        if answers is not None:
            answers.append(mine)
    return rows


def dev_diff(first: Path, last: Path, limit: int, answers: Optional[list[list]] = None) -> dict:
    """The dev items one model answers right and the other not, with both answers: where
    a candidate's lost exact matches go (an empty answer, a wrong indentation, an early end).
    `answers`: the two models' per-item answers when `dev_scores` already has them."""
    from lab.evaluation.items import DEV_FILE, load_items

    items = load_items(limit, path=DEV_FILE)
    if answers is None:
        answers = []
        dev_scores([first, last], limit, answers)
    a, b = answers[0], answers[-1]

    def row(i: int) -> dict:
        return {"reference": items[i]["middle"], "first": a[i][1], "last": b[i][1], "last_stop": b[i][2]}

    return {"lost": [row(i) for i in range(len(items)) if a[i][0] and not b[i][0]],
            "won": [row(i) for i in range(len(items)) if b[i][0] and not a[i][0]],
            "empty": [sum(not x[1].strip() for x in model) for model in (a, b)]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lab.training.compare", description=__doc__.splitlines()[0])
    p.add_argument("models", nargs="+", type=Path, help="model directories; the first is the reference")
    p.add_argument("--corpus", type=Path, default=Path("data/corpus"))
    p.add_argument("--batches", type=int, default=24, help="validation batches of 16 examples")
    p.add_argument("--languages", default="", help="only validation files of these languages (comma-separated; default all)")
    p.add_argument("--dev", type=int, default=0, metavar="N", help="also infill the first N dev items with each model (exact match, edit similarity)")
    p.add_argument("--dev-diff", action="store_true", help="with --dev: list the dev items the first and last models disagree on (right for one only)")
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args(argv)
    if len(args.models) < 2:
        p.error("give at least two model directories")
    rows = score(args.models, args.corpus, args.batches, args.languages)
    answers: list[list] = []
    if args.dev > 0:
        for row, dev in zip(rows, dev_scores(args.models, args.dev, answers)):
            row["dev"] = dev
    for r in rows:
        dev = f"  dev EM {r['dev']['exact_match']}% similarity {r['dev']['edit_similarity']}% ({r['dev']['dev_items']} items)" if "dev" in r else ""
        print(f"{r['model']}: masked CE {r['masked_ce']:.4f}  next-token CE {r['ar_loss']:.4f}  (steps {r['steps']}, tokens {r['tokens_seen']}){dev}")
    if args.dev > 0 and args.dev_diff:
        diff = dev_diff(args.models[0], args.models[-1], args.dev, answers)
        print(f"dev items right for {args.models[0]} only: {len(diff['lost'])}; for {args.models[-1]} only: {len(diff['won'])}; empty answers {diff['empty'][0]} -> {diff['empty'][1]}")
        for r in diff["lost"]:
            print(f"  lost ({r['last_stop']}): {r['reference']!r} -> {r['last']!r}")
        rows[-1]["dev_diff"] = diff
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    better = rows[-1]["masked_ce"] < rows[0]["masked_ce"]
    print(f"compare: {rows[-1]['model']} is {'better' if better else 'not better'} than {rows[0]['model']}")
    return 0 if better else 1


if __name__ == "__main__":
    sys.exit(main())
