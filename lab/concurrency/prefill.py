"""What merging the context's encoding into the first canvas pass saves, per cold request.

    python -m lab.concurrency.prefill [--items 48] [--rounds 4] [--json]

For the held-out requests of the concurrency sweep (lab/concurrency/items.py), each with
its real context window, it times the two ways to get a cold request's first logits:
`encode_context` then `canvas_logits` (two forwards, the rule before 2026-12-01) and
`encode_with_canvas` (one), alternating per round (ABBA), in CPU seconds of this thread
(the machine's other load weighs less), and checks that both give the same logits.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import torch


def measure(eng: Any, items: list[Any], rounds: int) -> dict[str, Any]:
    model, block = eng.model, eng.settings.block_size
    windows = [eng.context_ids(item.prefix, item.suffix) for item in items]
    canvas = torch.full((1, block), eng.tokenizer.mask_id, dtype=torch.long)

    def two_calls() -> list[torch.Tensor]:
        return [model.canvas_logits(model.encode_context(p, s), canvas)[0] for p, s in windows]

    def one_pass() -> list[torch.Tensor]:
        return [model.encode_with_canvas(p, s, canvas)[1][0] for p, s in windows]

    worst = max(float((a - b).abs().max()) for a, b in zip(two_calls(), one_pass()))  # also the warm-up
    seconds = {"two_calls": 0.0, "one_pass": 0.0}
    for r in range(rounds):
        order = [("two_calls", two_calls), ("one_pass", one_pass)]
        for name, run in order if r % 2 == 0 else reversed(order):
            started = time.thread_time()
            run()
            seconds[name] += time.thread_time() - started
    calls = rounds * len(windows)
    per = {name: round(1000 * s / calls, 2) for name, s in seconds.items()}
    return {
        "requests": len(windows), "rounds": rounds, "canvas": block,
        "context_tokens_mean": round(sum(len(p) + len(s) for p, s in windows) / len(windows), 1),
        "ms_per_request": per, "saved": round(1 - per["one_pass"] / per["two_calls"], 3),
        "max_logit_difference": worst,
    }


def main(argv: list[str] | None = None) -> int:
    import engine
    from lab.concurrency.items import load_items

    p = argparse.ArgumentParser(prog="python -m lab.concurrency.prefill", description=__doc__.splitlines()[0])
    p.add_argument("--items", type=int, default=48)
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--model", default=None, help="model directory (default: the embedded model)")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    eng = engine.load(args.model)
    report = measure(eng, load_items()[: args.items], args.rounds)
    if args.json:
        print(json.dumps(report))
    else:
        per = report["ms_per_request"]
        print(f"{report['requests']} cold requests, {report['context_tokens_mean']} context tokens on average, a canvas of {report['canvas']}:")
        print(f"  encode_context + canvas_logits  {per['two_calls']:.2f} CPU ms")
        print(f"  encode_with_canvas              {per['one_pass']:.2f} CPU ms  ({100 * report['saved']:.1f}% less)")
        print(f"  largest logit difference {report['max_logit_difference']:.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
