"""Fit the accept rule for workspace drafts (engine/drafts.py) on the tuning packages.

    python -m lab.workspace.fit_drafts [--n 100] [--features FILE] [--engine-answers] [--model DIR] [--knob NAME=VALUE]
                                       [--filled] [--use FEATURE,...]

For each real line of the TUNE packages (lab/workspace/lines.py: the cursor after the
indentation, the package with its sampled lines blanked as the workspace) the engine's own
path runs its first pass (InfillJob with the workspace), the one that judges the drafts:
the drafts the index proposes, the model's log-probabilities of their tokens, their evidence. A draft
is labelled right when it is the line. A logistic regression (a dozen weights, L2) is
fitted on them; leave-one-package-out shows how it does on a package it was not fitted
on. With --engine-answers the engine's own middle (no drafts) is computed per line too,
and each threshold is scored as users get it: the kept draft where one is kept, else the
engine's middle. Prints the weights to paste into engine/drafts.py. Never run it on the
ASIDE packages: they are for reporting only.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from pathlib import Path
from typing import Optional

import numpy as np

from engine.drafts import FEATURES, verify
from lab.workspace.lines import TUNE, items
from lab.workspace.real_lines import parse_knob

THRESHOLDS = (0.0, 0.01, 0.02, 0.05, 0.07, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5)


def first_line(middle: str) -> str:
    return middle.split("\n")[0].strip() if middle.strip() else ""


def collect(n: int, engine_answers: bool, names: list[str] = list(TUNE), model: Optional[str] = None, knobs: Optional[dict] = None, filled: bool = False) -> list[dict]:
    """Per line: its drafts' features and labels, the draft the accept rule keeps today
    (`kept`: its position, or None) and, with `engine_answers`, the engine's own answer.
    `model`: a model directory (default the embedded model); `knobs`: sampler settings
    for every request (e.g. draft_context). `filled`: also a second pass with each draft
    written on the canvas (`filled_features`)."""
    import torch

    import engine
    from engine.workspace import WorkspaceContext, WorkspaceIndex

    torch.set_num_threads(1)
    eng = engine.load(model)  # None: the embedded model
    knobs = knobs or {}
    records, indexes = [], {}
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryDirectory() as cache:
        lines = items(names, n, Path(tmp))
        for number, item in enumerate(lines):
            if item.workspace not in indexes:
                indexes[item.workspace] = WorkspaceIndex(item.workspace, cache_dir=Path(cache))
                indexes[item.workspace].refresh()
            job = eng.job(item.prefix, item.suffix, item.language, filename=item.filename, workspace=WorkspaceContext(indexes[item.workspace]), **knobs)
            record = {"id": item.id, "package": item.package, "reference": item.reference, "drafts": [], "kept": None}
            with eng.lock:
                job.prepare()
                found = job.run.drafts if job.run is not None else None
                ids = job.canvas_ids() if found is not None else None  # None: answered before any pass (an over-indented line)
                if found is not None and ids is not None:  # the request's first pass, as the engine runs it
                    check = verify(job.forward(torch.tensor(ids)), found)
                    record["kept"] = check.kept
                    more = filled_features(eng, job, found) if filled else [{} for _ in found.drafts]
                    for draft, feats, extra in zip(found.drafts, check.features, more):
                        feats = {**feats, **extra}
                        record["drafts"].append({"line": draft.line, "features": feats, "right": draft.line == item.reference})
            if engine_answers:
                record["engine"] = first_line(eng.infill(item.prefix, item.suffix, item.language, filename=item.filename, **knobs).middle)
            records.append(record)
            print(f"\r{number + 1}/{len(lines)} lines", end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)
    return records


def filled_features(eng, job, found) -> list[dict[str, float]]:
    """Per draft, what one more pass says with the draft written on the canvas (the rest
    end of middle) instead of masks: the mean, weakest and end-of-middle log-probabilities
    of its own tokens. (A probe, not the engine's path: it costs a forward of a row per
    draft; measured 2026-12-08, it told the right draft no better than the first pass.)"""
    import torch

    rows = [list(ids) + [eng.tokenizer.eom_id] * (found.width - len(ids)) for ids in found.tokens]
    with torch.inference_mode():
        logp = torch.log_softmax(eng.model.canvas_logits(job.context, torch.tensor(rows)).float(), -1)
    out = []
    for r, ids in enumerate(found.tokens):
        lp = logp[r, torch.arange(len(ids)), torch.tensor(ids)].tolist()
        out.append({"filled_mean": sum(lp) / len(lp), "filled_min": min(lp), "filled_eom": lp[-1]})
    return out


def fit(records: list[dict], l2: float = 1.0, steps: int = 4000, features: tuple[str, ...] = FEATURES) -> tuple[np.ndarray, float]:
    """Logistic regression by gradient descent on standardised features -> (weights, bias)."""
    X = np.array([[d["features"][f] for f in features] for r in records for d in r["drafts"]], dtype=float)
    y = np.array([d["right"] for r in records for d in r["drafts"]], dtype=float)
    mean, scale = X.mean(0), X.std(0) + 1e-6
    Z = (X - mean) / scale
    w, b = np.zeros(Z.shape[1]), 0.0
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(Z @ w + b)))
        w -= 1.0 * (Z.T @ (p - y) + l2 * w) / len(y)
        b -= 1.0 * float((p - y).mean())
    return w / scale, b - float((w / scale) @ mean)


def probability(d: dict, w: np.ndarray, b: float, features: tuple[str, ...] = FEATURES) -> float:
    z = b + sum(wi * d["features"][f] for wi, f in zip(w, features))
    return 1 / (1 + math.exp(-max(-60, min(60, z))))


def score(records: list[dict], w: np.ndarray, b: float, threshold: float, features: tuple[str, ...] = FEATURES) -> dict:
    kept = right = exact = 0
    for r in records:
        best = max(r["drafts"], key=lambda d: probability(d, w, b, features)) if r["drafts"] else None
        if best is not None and probability(best, w, b, features) >= threshold:
            kept += 1
            right += best["right"]
            exact += best["right"]
        else:
            exact += r.get("engine") == r["reference"]
    return {"kept": kept, "kept_right": right, "exact": exact}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.workspace.fit_drafts", description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100, help="lines per tuning package")
    parser.add_argument("--features", type=Path, help="read the collected features from this JSONL (written there when it does not exist)")
    parser.add_argument("--engine-answers", action="store_true", help="also compute the engine's own middle per line (slow)")
    parser.add_argument("--model", default=None, help="model directory (default: the embedded model)")
    parser.add_argument("--filled", action="store_true", help="collect the filled-canvas features too (a second pass per line; filled_features)")
    parser.add_argument("--use", default=",".join(FEATURES), help="the features the rule is fitted on (comma-separated; default: engine/drafts.py FEATURES)")
    parser.add_argument("--knob", type=parse_knob, action="append", default=[], metavar="NAME=VALUE", help="a sampler setting for every request (repeatable), e.g. --knob draft_context=true")
    args = parser.parse_args(argv)
    if args.features is not None and args.features.exists():
        records = [json.loads(line) for line in args.features.read_text().splitlines()]
    else:
        records = collect(args.n, args.engine_answers, model=args.model, knobs=dict(args.knob), filled=args.filled)
        if args.features is not None:
            args.features.write_text("".join(json.dumps(r) + "\n" for r in records))
    use = tuple(args.use.split(","))
    packages = sorted({r["package"] for r in records})
    in_drafts = sum(any(d["right"] for d in r["drafts"]) for r in records)
    engine_right = sum(r.get("engine") == r["reference"] for r in records)
    print(f"{len(records)} lines of {', '.join(packages)}; the line among the drafts: {in_drafts}; the engine alone right: {engine_right}")
    print("leave one package out (fit on the others, score the one left out):")
    for threshold in THRESHOLDS:
        total = {"kept": 0, "kept_right": 0, "exact": 0}
        for package in packages:
            w, b = fit([r for r in records if r["package"] != package], features=use)
            for key, value in score([r for r in records if r["package"] == package], w, b, threshold, use).items():
                total[key] += value
        print(f"  threshold {threshold:.2f}: kept {total['kept']:4d}, right {total['kept_right']:4d}, exact match {total['exact']}/{len(records)} = {total['exact'] / len(records):.1%}")
    w, b = fit(records, features=use)
    print("fitted on all tuning lines; for engine/drafts.py:")
    print(f"WEIGHTS = ({', '.join(f'{x:.4f}' for x in w)},)  # {', '.join(use)}")
    print(f"BIAS = {b:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
