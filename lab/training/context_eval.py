"""How well a model reads retrieved code, one pass: `python -m lab.training.context_eval MODEL...`

Examples of lab/training/context_snippets.py from the corpus's validation files (never
trained on), each made twice with the same line: with its snippets before the prefix and
without them. Per kind of snippets (`held`: the line's own place among them; `near`: a
near line's; `distractors`: other lines only), one forward over the all-masked canvas:

- `logp`: the mean log-probability of the line's tokens (its end of middle included);
- `right`: how often the model's best token is the true one at every position (the line
  right in one pass);
- `next`: with the line's first k tokens revealed (k drawn per example) and the rest
  masked, the log-probability of token k, and `next_right` how often it is the best
  token: the sharper test of copying, since a reader that found the line's place in the
  snippets can read on from the revealed start.

A model that reads the snippets gains on `held` with them over without, and loses
nothing on `distractors`. A learning curve for reading retrieved code that needs no engine
and no benchmark data.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
from dataclasses import replace
from pathlib import Path

import torch

from engine.model import SEG_CANVAS
from engine.modeldir import TOKENIZER_FILE, load_infill_model, read_config
from engine.tokenizer import Tokenizer
from lab.training.context_snippets import KINDS, context_example
from lab.training.corpus import read_split
from lab.training.data import DataConfig, collate


def examples(corpus: Path, tok: Tokenizer, n: int, languages: set[str], kind: str, seed: int = 11) -> list[tuple]:
    """n pairs (with snippets, without) of one kind."""
    docs = [d for d in read_split(corpus, "valid") if d.get("language", "python") in languages]
    rng = random.Random(seed)
    out: list[tuple] = []
    cfg = DataConfig()
    while len(out) < n:
        text, seed = rng.choice(docs)["text"], rng.randrange(1 << 31)
        shown = context_example(text, tok, cfg, random.Random(seed), kind=kind)
        hidden = context_example(text, tok, cfg, random.Random(seed), kind=kind, show=False)
        if shown is not None and hidden is not None:
            out.append((shown, hidden))
    return out


def _line_tokens(ex, tok: Tokenizer) -> int:
    """How many canvas tokens are the line and its end of middle."""
    return next((k + 1 for k, t in enumerate(ex.canvas) if t == tok.eom_id), len(ex.canvas))


@torch.inference_mode()
def measure(model, exs: list, tok: Tokenizer, batch: int = 16) -> dict:
    rng = random.Random(0)
    figures = {}
    for name, which in (("with", 0), ("without", 1)):
        logp_sum = tokens = right = 0
        group_all = [pair[which] for pair in exs]
        for i in range(0, len(group_all), batch):
            group = group_all[i : i + batch]
            b = collate(group, tok, DataConfig(), rng, t_values=[1.0] * len(group), copies=1)  # every canvas position masked
            logp = torch.log_softmax(model.lm_head(model(b.ids, b.positions, b.segments, b.layout)).float(), -1)
            for row, ex in enumerate(group):
                rows = (b.segments[row] == SEG_CANVAS).nonzero().flatten()
                n = _line_tokens(ex, tok)
                truth = torch.tensor(ex.canvas[:n])
                picked = logp[row, rows[:n]].gather(-1, truth[:, None]).squeeze(-1)
                logp_sum += float(picked.sum())
                tokens += n
                right += bool((logp[row, rows[:n]].argmax(-1) == truth).all())
        nxt, nxt_right = _next_token(model, group_all, tok, batch)
        figures[name] = {"logp": round(logp_sum / max(tokens, 1), 4), "right": round(right / max(len(exs), 1), 4),
                         "next": round(nxt, 4), "next_right": round(nxt_right, 4)}
    return figures


def _next_token(model, exs: list, tok: Tokenizer, batch: int) -> tuple[float, float]:
    """Mean log-probability and accuracy of the line's token k given its first k tokens."""
    draw = random.Random(1)
    rows = []
    for ex in exs:
        n = _line_tokens(ex, tok)
        k = draw.randrange(1, n) if n > 1 else 0
        start = ex.canvas[:k] + [tok.mask_id] * (len(ex.canvas) - k)
        rows.append((replace(ex, noisy_canvas=start), k))
    total = right = 0.0
    rng = random.Random(0)
    for i in range(0, len(rows), batch):
        group = rows[i : i + batch]
        b = collate([ex for ex, _ in group], tok, DataConfig(), rng, copies=1)  # copy 0: the start as given
        logp = torch.log_softmax(model.lm_head(model(b.ids, b.positions, b.segments, b.layout)).float(), -1)
        for row, (ex, k) in enumerate(group):
            at = (b.segments[row] == SEG_CANVAS).nonzero().flatten()[k]
            total += float(logp[row, at, ex.canvas[k]])
            right += int(logp[row, at].argmax()) == ex.canvas[k]
    return total / max(len(rows), 1), right / max(len(rows), 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.training.context_eval", description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="+", type=Path)
    parser.add_argument("--corpus", type=Path, default=Path("data/corpus"))
    parser.add_argument("--n", type=int, default=200, help="examples per kind")
    parser.add_argument("--languages", default="python,javascript")
    parser.add_argument("--kinds", default=",".join(KINDS), help="which kinds of snippets (comma-separated)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    tok = Tokenizer.from_file(args.models[0] / TOKENIZER_FILE)
    languages = set(args.languages.split(","))
    sets = {kind: examples(args.corpus, tok, args.n, languages, kind) for kind in args.kinds.split(",")}
    for model_dir in args.models:
        model = load_infill_model(model_dir, read_config(model_dir)).float().eval()
        row = {"model": str(model_dir), **{kind: measure(model, exs, tok) for kind, exs in sets.items()}}
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
