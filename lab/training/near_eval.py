"""How well a model edits near lines, read off one pass: `python -m lab.training.near_eval MODEL...`

Retrieve-then-edit examples (lab/training/near_lines.py) from the corpus's validation
files (never trained on), the canvas as the engine starts it (the near line, then masks),
one forward each, the model's best token at every canvas position:

- `differ`: at positions where the start's token is wrong, how often the best token is the true one;
- `agree`: at positions where it is right, how often the best token keeps it;
- `lines`: how often every position's best token is the true one (the line right in one pass),
  over the examples whose start is not the line, and over those whose start is the line.

A learning curve for the edit task that needs no engine and no benchmark data.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

import torch

from engine.model import SEG_CANVAS
from engine.modeldir import TOKENIZER_FILE, load_infill_model, read_config
from engine.tokenizer import Tokenizer
from lab.training.corpus import read_split
from lab.training.data import DataConfig, collate
from lab.training.near_lines import near_line_example


def examples(corpus: Path, tok: Tokenizer, n: int, languages: set[str], seed: int = 7) -> list:
    docs = [d for d in read_split(corpus, "valid") if d.get("language", "python") in languages]
    rng = random.Random(seed)
    out = []
    cfg = DataConfig()
    while len(out) < n:
        ex = near_line_example(rng.choice(docs)["text"], tok, cfg, rng)
        if ex is not None:
            out.append(ex)
    return out


@torch.inference_mode()
def measure(model_dir: Path, exs: list, tok: Tokenizer, batch: int = 16) -> dict:
    model = load_infill_model(model_dir, read_config(model_dir)).float().eval()
    differ = differ_right = agree = agree_kept = 0
    edit_lines = edit_right = same_lines = same_right = 0
    rng = random.Random(0)
    for i in range(0, len(exs), batch):
        group = exs[i : i + batch]
        b = collate(group, tok, DataConfig(), rng, copies=1)  # copy 0: the start exactly as the engine sets it
        hidden = model(b.ids, b.positions, b.segments, b.layout)
        best = model.lm_head(hidden).argmax(-1)
        for row, ex in enumerate(group):
            rows = (b.segments[row] == SEG_CANVAS).nonzero().flatten()
            guess = best[row, rows].tolist()
            start, target = ex.noisy_canvas, ex.canvas
            line_ok = True
            wrong_start = sum(s != tok.mask_id and s != t for s, t in zip(start, target))
            for g, s, t in zip(guess, start, target):
                if s == tok.mask_id:
                    line_ok &= g == t
                elif s != t:
                    differ += 1
                    differ_right += g == t
                    line_ok &= g == t
                else:
                    agree += 1
                    agree_kept += g == t
                    line_ok &= g == t
            if not wrong_start:  # the start is the line (its trailing masks aside)
                same_lines += 1
                same_right += line_ok
            else:
                edit_lines += 1
                edit_right += line_ok
    return {"model": str(model_dir), "examples": len(exs), "differ": differ, "differ_right": round(differ_right / max(differ, 1), 4),
            "agree": agree, "agree_kept": round(agree_kept / max(agree, 1), 4),
            "edit_lines": edit_lines, "edit_lines_right": round(edit_right / max(edit_lines, 1), 4),
            "same_lines": same_lines, "same_lines_right": round(same_right / max(same_lines, 1), 4)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lab.training.near_eval", description=__doc__.split("\n\n")[0])
    p.add_argument("models", nargs="+", type=Path)
    p.add_argument("--corpus", type=Path, default=Path("data/corpus"))
    p.add_argument("--n", type=int, default=400)
    p.add_argument("--languages", default="python,javascript")
    args = p.parse_args(argv)
    tok = Tokenizer.from_file(args.models[0] / TOKENIZER_FILE)
    exs = examples(args.corpus, tok, args.n, {x.strip() for x in args.languages.split(",")})
    for model_dir in args.models:
        print(json.dumps(measure(model_dir, exs, tok)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
