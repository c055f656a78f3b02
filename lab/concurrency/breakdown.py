"""Where a concurrency level's CPU time goes: context encoding, forward passes, sampler.

    python -m lab.concurrency.breakdown --concurrency 16 --requests 48 [--json]

Runs the sweep's closed loop (lab/concurrency/sweep.py) once per mode, `sequential` and
`batched`, alternating (--rounds), on the embedded model, with a CPU-time meter around
the parts of a request: the context encoding (prefill; merged into a request's first
canvas pass since 2026-12-01, `encode_with_canvas`, whose few canvas rows count here;
batched, since 2026-12-07, several first passes packed with the other requests' canvases,
`encode_with_canvas_many`, all of which count here), the forward passes (solo
`canvas_logits` or packed `canvas_logits_many`), the sampler's work after each pass (of
which the syntax checks) and the rest (tokenizing, the loop, Python). It prints CPU
seconds per part and mode, the ratio of the totals (what batching gains on this machine),
the model's part (encode + forward) alone, and the bound Amdahl's law puts on the gain:
the sequential total divided by its parts that batching cannot share (the sampler, the
syntax checks, the rest stay per request), i.e. the gain if the model's passes cost
nothing at all. CPU time of this thread, not wall time, so a busy
machine weighs less on the figures (it still slows caches and clocks).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional

PARTS = ("encode", "forward", "sampler", "syntax")


class Meter:
    """CPU seconds per part; nested parts are subtracted from their parents (the syntax
    checks run inside the sampler), so the parts add up to the metered total."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self._stack: list[list[Any]] = []  # [part, started, child seconds]

    @contextmanager
    def part(self, name: str) -> Iterator[None]:
        frame = [name, time.thread_time(), 0.0]
        self._stack.append(frame)
        try:
            yield
        finally:
            self._stack.pop()
            spent = time.thread_time() - frame[1]
            self.seconds[name] += spent - frame[2]
            if self._stack:
                self._stack[-1][2] += spent

    def wrap(self, owner: Any, attribute: str, name: str) -> Callable[[], None]:
        """Meter every call of owner.attribute as `name`; returns the undo."""
        original = getattr(owner, attribute)

        def metered(*args: Any, **kwargs: Any) -> Any:
            with self.part(name):
                return original(*args, **kwargs)

        own = attribute in vars(owner)  # else it comes from the class: undo by deleting ours
        setattr(owner, attribute, metered)
        return (lambda: setattr(owner, attribute, original)) if own else (lambda: delattr(owner, attribute))


def metered_level(eng, mode: str, items, concurrency: int, requests: int) -> dict[str, Any]:
    """One closed-loop run of `mode` with the meter on; CPU seconds per part."""
    from engine.sampler import Denoising
    from grammars.constraint import TreeSitterConstraint
    from lab.concurrency.sweep import run_level

    meter = Meter()
    model = eng.model
    undo = [
        meter.wrap(model, "encode_context", "encode"),
        meter.wrap(model, "encode_with_canvas", "encode"),  # the encoding merged into a first pass: its canvas rows too
        meter.wrap(model, "canvas_logits", "forward"),
        meter.wrap(Denoising, "advance", "sampler"),
        meter.wrap(TreeSitterConstraint, "allows", "syntax"),
        meter.wrap(TreeSitterConstraint, "accept_final", "syntax"),
    ]
    if hasattr(model, "canvas_logits_many"):
        undo.append(meter.wrap(model, "canvas_logits_many", "forward"))
    if hasattr(model, "encode_with_canvas_many"):  # several first passes packed, other requests' canvases beside them
        undo.append(meter.wrap(model, "encode_with_canvas_many", "encode"))
    try:
        started = time.thread_time()
        records, wall = run_level(eng, mode, items, concurrency, requests)
        total = time.thread_time() - started
    finally:
        for restore in reversed(undo):
            restore()
    parts = {name: round(meter.seconds[name], 3) for name in PARTS}
    parts["other"] = round(total - sum(meter.seconds[name] for name in PARTS), 3)
    return {
        "mode": mode,
        "cpu_s": round(total, 3),
        "wall_s": round(wall, 3),
        "tokens": sum(r.finished.tokens for r in records),
        "parts_cpu_s": parts,
        "middles": [r.finished.middle for r in sorted(records, key=lambda r: r.finished.key)],
    }


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Pool the rounds per mode; the gain and its Amdahl bound."""
    pooled: dict[str, dict[str, Any]] = {}
    for run in runs:
        entry = pooled.setdefault(run["mode"], {"cpu_s": 0.0, "tokens": 0, "parts_cpu_s": defaultdict(float)})
        entry["cpu_s"] += run["cpu_s"]
        entry["tokens"] += run["tokens"]
        for name, seconds in run["parts_cpu_s"].items():
            entry["parts_cpu_s"][name] += seconds
    for entry in pooled.values():
        entry["cpu_s"] = round(entry["cpu_s"], 2)
        entry["parts_cpu_s"] = {k: round(v, 2) for k, v in entry["parts_cpu_s"].items()}
        entry["tokens_per_cpu_s"] = round(entry["tokens"] / entry["cpu_s"], 2) if entry["cpu_s"] else None
    report: dict[str, Any] = {"modes": pooled}
    seq, bat = pooled.get("sequential"), pooled.get("batched")
    if seq and bat and seq["tokens_per_cpu_s"] and bat["tokens_per_cpu_s"]:
        report["batched_gain"] = round(bat["tokens_per_cpu_s"] / seq["tokens_per_cpu_s"], 2)
        unshared = seq["cpu_s"] - seq["parts_cpu_s"]["forward"]
        report["gain_bound_if_forward_were_free"] = round(seq["cpu_s"] / unshared, 2) if unshared > 0 else None
        report["forward_gain"] = round(seq["parts_cpu_s"]["forward"] / bat["parts_cpu_s"]["forward"], 2) if bat["parts_cpu_s"]["forward"] else None
        # A batched pass that encodes new contexts also carries the other requests' canvases
        # (InfillTransformer.encode_with_canvas_many, metered as "encode"): the model's whole
        # part is encode + forward, and only the sampler, the syntax checks and the rest are
        # what no packing can share.
        model = {name: entry["parts_cpu_s"]["encode"] + entry["parts_cpu_s"]["forward"] for name, entry in (("sequential", seq), ("batched", bat))}
        report["model_gain"] = round(model["sequential"] / model["batched"], 2) if model["batched"] else None
        per_request = seq["cpu_s"] - model["sequential"]
        report["gain_bound_if_model_were_free"] = round(seq["cpu_s"] / per_request, 2) if per_request > 0 else None
    return report


def main(argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lab.concurrency.breakdown", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--requests", type=int, default=48, help="requests per run (default 48)")
    p.add_argument("--rounds", type=int, default=2, help="runs per mode, alternating sequential/batched (default 2)")
    p.add_argument("--model", default=None, help="model directory (default: the embedded model)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--json", action="store_true", help="the last line of output is the JSON report")
    args = p.parse_args(argv)
    if args.concurrency < 1 or args.requests < 1 or args.rounds < 1:
        p.error("--concurrency, --requests and --rounds must be at least 1")

    from lab.concurrency.items import load_items
    from lab.concurrency.sweep import load_engine, run_level

    eng = load_engine(args.model, "cpu", None, args.threads)
    items = load_items()
    run_level(eng, "batched", items[-8:], 2, 4)  # warm-up (first-call costs) on other items
    runs = []
    for round_ in range(args.rounds):
        order = ("sequential", "batched") if round_ % 2 == 0 else ("batched", "sequential")
        for mode in order:
            run = metered_level(eng, mode, items, args.concurrency, args.requests)
            print(f"round {round_ + 1} {mode:<10} cpu {run['cpu_s']:6.2f} s  " + "  ".join(f"{k} {v:.2f}" for k, v in run["parts_cpu_s"].items()), file=sys.stderr, flush=True)
            runs.append(run)
    report = summarize(runs)
    by_mode = {mode: [r["middles"] for r in runs if r["mode"] == mode] for mode in ("sequential", "batched")}
    pairs = [(a, b) for xs, ys in zip(by_mode["sequential"], by_mode["batched"]) for a, b in zip(xs, ys)]
    report["identical_middles"] = f"{sum(a == b for a, b in pairs)}/{len(pairs)}"
    report.update(concurrency=args.concurrency, requests=args.requests, rounds=args.rounds)
    if args.json:
        print(json.dumps(report))
    else:
        for mode, entry in report["modes"].items():
            print(f"{mode:<10} {entry['cpu_s']:7.2f} CPU s  {entry['tokens_per_cpu_s']} tokens/CPU s  " + ", ".join(f"{k} {v}" for k, v in entry["parts_cpu_s"].items()))
        print(f"batched gain {report.get('batched_gain')}x (the model's passes, encode + forward, {report.get('model_gain')}x); "
              f"bound if they were free: {report.get('gain_bound_if_model_were_free')}x; identical middles {report['identical_middles']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
