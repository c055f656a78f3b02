"""Would a commit rule let a pass commit more than its first masked position? Measured.

    python -m lab.evaluation.commit_rule --items dev --limit 120

Runs the engine's contiguous decode on the items (cold contexts, one thread) and records,
for every pass, the positions after the first masked one: the model's top token there, its
confidence, margin, entropy, distance from the first masked position, whether the previous
pass had the same top token (stability across passes, KLASS-style), the first position's
confidence. The label: the decode later wrote that very token there. A commit rule may add
position p+d to the pass's commits only if p+1 .. p+d all would be right, so each pass's
positions are read as a chain, stopped at the first wrong one.

It prints what two rules would add, per pass, with the share of chains that would have
committed a wrong token: the training-free confidence threshold, and a logistic rule on the
features above (Learn2PD-style), fitted on half of the items and scored on the other half.
What was found (2026-12-01, docs/sampler.md "Draft and verify"): the model's top token at
the position after the first masked one is the decode's final token 39% of the time, so no
rule over its marginals commits much more without writing wrong tokens; drafted canvases
verified by the sampler itself (engine/lookahead.py) lose nothing instead.
"""
from __future__ import annotations

import argparse
import json
import math
import random
from typing import Any, Optional

import torch

LOOK = 8  # positions after the first masked one that are recorded
FEATURES = ("conf", "margin", "entropy", "log_distance", "stable", "first_conf")


def trace(eng: Any, items: list[dict]) -> list[list[dict]]:
    """Per pass of each item's first candidate: the chain of records after position p."""
    import engine.sampler as sampler

    passes: list[tuple[Any, list[dict]]] = []
    original = sampler.denoise_pass

    def recording(probs: torch.Tensor, run: Any) -> Any:
        canvas = run.canvas
        masked = canvas.masked_positions()
        if run.settings.order == "contiguous" and masked:
            p = masked[0]
            top = probs.topk(2, dim=-1)
            entropy = -(probs.clamp_min(1e-12).log() * probs).sum(-1)
            previous = getattr(run, "_traced_top", None)
            tops = top.indices[:, 0].tolist()
            chain = []
            for j in range(p + 1, min(canvas.size, p + 1 + LOOK)):
                if canvas.ids[j] != canvas.tok.mask_id or tops[j] in (canvas.tok.eom_id, canvas.tok.mask_id):
                    break
                chain.append({"position": j, "token": tops[j], "conf": float(top.values[j, 0]), "margin": float(top.values[j, 0] - top.values[j, 1]),
                              "entropy": float(entropy[j]), "log_distance": math.log(j - p), "first_conf": float(top.values[p, 0]),
                              "stable": float(previous is not None and j < len(previous) and previous[j] == tops[j])})
            passes.append((run, chain))
            run._traced_top = tops
        return original(probs, run)

    sampler.denoise_pass = recording
    try:
        out: list[list[dict]] = []
        for n, item in enumerate(items):
            del passes[:]
            eng.forget_context()
            eng.infill(item["prefix"], item["suffix"], language=item["language"])
            for run, chain in passes:
                final = run.canvas.ids
                for record in chain:
                    record["right"] = record["position"] < len(final) and final[record["position"]] == record["token"]
                    record["item"] = n
                out.append(chain)
    finally:
        sampler.denoise_pass = original
    return out


def _vector(record: dict) -> list[float]:
    return [record[name] for name in FEATURES]


def added(passes: list[list[dict]], keep) -> tuple[float, int, int]:
    """(commits added per pass, chains that committed a wrong token, commits added)."""
    extra = wrong = 0
    for chain in passes:
        for record in chain:
            if not keep(record):
                break
            extra += 1
            if not record["right"]:
                wrong += 1
                break
    return extra / max(1, len(passes)), wrong, extra


def fit(passes: list[list[dict]]) -> tuple[torch.Tensor, torch.Tensor]:
    """A logistic rule P(right | features), on every record up to each chain's first wrong one."""
    rows = [(r, chain) for chain in passes for r in chain[: next((i + 1 for i, r in enumerate(chain) if not r["right"]), len(chain))]]
    X = torch.tensor([_vector(r) for r, _ in rows])
    Y = torch.tensor([float(r["right"]) for r, _ in rows])
    w, b = torch.zeros(X.shape[1], requires_grad=True), torch.zeros(1, requires_grad=True)
    opt = torch.optim.LBFGS([w, b], max_iter=200)

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(X @ w + b, Y) + 1e-3 * (w**2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    return w.detach(), b.detach()


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", choices=["dev"], default="dev", help="the tuning items (never the held-out or kept-aside sets)")
    parser.add_argument("--limit", type=int, default=120)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    from engine.api import load
    from lab.evaluation.items import DEV_FILE, load_items

    eng = load(None)
    eng.lookahead_width = 0  # the decode as the sampler runs it; drafts change no commit anyway
    items = load_items(path=DEV_FILE)[: args.limit]
    passes = trace(eng, items)
    first = [chain[0] for chain in passes if chain]
    print(f"{len(items)} items, {len(passes)} passes; the top token after the first masked position is the final one in {sum(r['right'] for r in first) / max(1, len(first)):.1%} of passes")
    for threshold in (0.5, 0.7, 0.8, 0.9):
        per_pass, wrong, extra = added(passes, lambda r, t=threshold: r["conf"] >= t)
        print(f"confidence >= {threshold}: +{per_pass:.3f} commits per pass, {wrong} of {extra} chains end in a wrong token")
    order = list(range(len(items)))
    random.Random(0).shuffle(order)
    train_items = set(order[: len(order) // 2])
    w, b = fit([c for c in passes if c and c[0]["item"] in train_items])
    held = [c for c in passes if c and c[0]["item"] not in train_items]
    print("logistic rule", json.dumps({name: round(float(v), 3) for name, v in zip(FEATURES, w)}), f"bias {float(b):.3f} (fitted on half the items, scored on the other half)")
    for threshold in (0.5, 0.7, 0.8, 0.9):
        per_pass, wrong, extra = added(held, lambda r, t=threshold: float(torch.sigmoid(torch.tensor(_vector(r)) @ w + b)) >= t)
        print(f"P(right) >= {threshold}: +{per_pass:.3f} commits per pass, {wrong} of {extra} chains end in a wrong token")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
