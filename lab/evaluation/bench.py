"""`python -m lab bench`: infill's sampler against the reference sampler, same model, same inputs.

The reference is the LLaDA-style baseline: a fixed canvas of REFERENCE_CANVAS masks,
one top-confidence commit per step (so steps = canvas length), and no cache (every
step runs the whole [suffix | prefix | canvas] sequence). Both run in this process, one
after the other on each item, so machine noise hits both alike; the figures that matter
are ratios measured in one run.

Items are single-line middles cut from held-out files (lab/bench_data/), never seen
in training. Exact match compares middles with trailing whitespace stripped.

With --syntax, --concurrency or --real-lines it runs the other benchmarks instead
(lab/syntax_bench, lab/concurrency/sweep.py, lab/concurrency/real_lines_speed.py: right
characters per second per user on real lines with their workspace, docs/speed-per-user.md).
"""
from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import torch

from engine.model import SEG_CANVAS, SEG_PREFIX, SEG_SUFFIX, InfillTransformer
from lab.progress import report_progress
from lab.evaluation.items import exact_match, load_items, percentile

REFERENCE_CANVAS = 32


@torch.no_grad()
def uncached_canvas_logits(model: InfillTransformer, prefix_ids: list[int], suffix_ids: list[int], canvas: list[int]) -> torch.Tensor:
    """Canvas logits from one full forward of the whole sequence (no cache). (N, V)"""
    S, P, N = len(suffix_ids), len(prefix_ids), len(canvas)
    ids = torch.tensor([suffix_ids + prefix_ids + canvas], dtype=torch.long)
    positions = torch.tensor([list(range(P + N, P + N + S)) + list(range(P)) + list(range(P, P + N))], dtype=torch.long)
    segments = torch.tensor([[SEG_SUFFIX] * S + [SEG_PREFIX] * P + [SEG_CANVAS] * N], dtype=torch.long)
    hidden = model(ids, positions, segments)
    return model.logits(hidden[0, S + P :])


@dataclass
class ReferenceResult:
    middle: str
    tokens: int
    forwards: int
    ms: float


def reference_infill(eng, prefix: str, suffix: str, canvas_size: int = REFERENCE_CANVAS) -> ReferenceResult:
    """LLaDA-style low-confidence remasking: one commit per step, no cache."""
    tok = eng.tokenizer
    start = time.perf_counter()
    prefix_ids, suffix_ids = eng.context_ids(prefix, suffix)
    canvas = [tok.mask_id] * canvas_size
    for _ in range(canvas_size):
        logits = uncached_canvas_logits(eng.model, prefix_ids, suffix_ids, canvas)
        probs = torch.softmax(logits, dim=-1)
        probs[:, tok.mask_id] = 0
        conf, pred = probs.max(dim=-1)
        masked = torch.tensor([t == tok.mask_id for t in canvas])
        conf[~masked] = -1
        pos = int(conf.argmax())
        canvas[pos] = int(pred[pos])
    end = canvas.index(tok.eom_id) if tok.eom_id in canvas else len(canvas)
    middle_ids = canvas[:end]
    return ReferenceResult(tok.decode(middle_ids), len(middle_ids), canvas_size, (time.perf_counter() - start) * 1000)


def run_bench(model_dir: Optional[Path] = None, limit: Optional[int] = None, as_json: bool = False, progress=None) -> int:
    import sys

    import engine

    eng = engine.load(model_dir)
    if not isinstance(eng.model, InfillTransformer):
        raise engine.InfillError("python -m lab bench's reference sampler needs an infill model directory")
    items = load_items(limit or 60)
    ours_ms, ours_tokens, ours_forwards, ours_em = [], 0, 0, 0
    # The bound of docs/sampler.md, forwards <= tokens written + 2, per item: its worst case
    # (never above 2), and the same against the tokens returned (what a user gets).
    worst_written, worst_returned = None, None
    ref_ms, ref_tokens, ref_em = [], 0, 0
    eng.infill(items[0]["prefix"], items[0]["suffix"], language=items[0].get("language"))  # warm-up
    for i, item in enumerate(items, 1):
        eng.forget_context()  # each item is a cold request: no cache carried over
        r = eng.infill(item["prefix"], item["suffix"], language=item.get("language"))
        ours_ms.append(r.ms)
        ours_tokens += r.tokens
        ours_forwards += r.forwards
        ours_em += exact_match(r.middle, item["middle"])
        worst_written = max(r.forwards - r.written, worst_written if worst_written is not None else r.forwards - r.written)
        worst_returned = max(r.forwards - r.tokens, worst_returned if worst_returned is not None else r.forwards - r.tokens)
        ref = reference_infill(eng, item["prefix"], item["suffix"])
        ref_ms.append(ref.ms)
        ref_tokens += ref.tokens
        ref_em += exact_match(ref.middle, item["middle"])
        if not as_json:
            report_progress("bench", i, len(items))
    ours_tps = ours_tokens / (sum(ours_ms) / 1000)
    ref_tps = ref_tokens / (sum(ref_ms) / 1000) if ref_tokens else 0.0
    report = {
        "model": eng.model_name,
        "items": len(items),
        "speedup": round(ours_tps / ref_tps, 2) if ref_tps else None,
        "latency_speedup": round(sum(ref_ms) / sum(ours_ms), 2),
        "tokens_per_s": round(ours_tps, 1),
        "reference_tokens_per_s": round(ref_tps, 1),
        "tpf": round(ours_tokens / ours_forwards, 3) if ours_forwards else 0.0,
        "reference_tpf": round(ref_tokens / (REFERENCE_CANVAS * len(items)), 3),
        "p50_ms": round(percentile(ours_ms, 0.5), 2),
        "p90_ms": round(percentile(ours_ms, 0.9), 2),
        "reference_p50_ms": round(percentile(ref_ms, 0.5), 2),
        "exact_match": round(ours_em / len(items), 4),
        "reference_exact_match": round(ref_em / len(items), 4),
        "worst_forwards_minus_written": worst_written,
        "worst_forwards_minus_tokens": worst_returned,
        "threads": torch.get_num_threads(),
    }
    if as_json:
        print(json.dumps(report))
    else:
        print(f"model {report['model']} · {len(items)} held-out single-line infills · {report['threads']} thread(s)")
        print(f"{'':22}{'infill':>12}{'reference':>12}")
        print(f"{'tokens/s':22}{report['tokens_per_s']:>12}{report['reference_tokens_per_s']:>12}")
        print(f"{'tokens per forward':22}{report['tpf']:>12}{report['reference_tpf']:>12}")
        print(f"{'p50 ms':22}{report['p50_ms']:>12}{report['reference_p50_ms']:>12}")
        print(f"{'p90 ms':22}{report['p90_ms']:>12}")
        print(f"{'exact match':22}{report['exact_match']:>12.1%}{report['reference_exact_match']:>12.1%}")
        print(f"forwards - tokens written, worst item: {worst_written} (bound: 2) · forwards - tokens returned: {worst_returned}")
        print(f"speedup (tokens/s): {report['speedup']}x · latency ratio: {report['latency_speedup']}x")
    return 0


def main(argv: Optional[list[str]] = None) -> int:
    """`python -m lab bench`: this benchmark, or with --syntax / --concurrency the other two."""
    p = argparse.ArgumentParser(prog="python -m lab bench", description="Speed and exact match vs the reference (LLaDA-style) sampler.")
    p.add_argument("--model", type=Path, default=None)
    p.add_argument("--limit", type=int, default=None, help="number of benchmark items")
    p.add_argument("--json", action="store_true")
    p.add_argument("--syntax", action="store_true", help="run the syntax-constraint on/off benchmark instead")
    p.add_argument("--concurrency", metavar="LEVELS", default=None, help="run the concurrency sweep instead, e.g. 1,2,4,8,16,32,64 (batched vs one at a time vs autoregressive; lab/concurrency)")
    p.add_argument("--plot", type=Path, default=None, help="with --concurrency: write the PNG plot here")
    p.add_argument("--out", type=Path, default=None, help="with --concurrency: also write the JSON report here")
    p.add_argument("--modes", default=None, help="with --concurrency: a subset of batched,sequential,autoregressive")
    p.add_argument("--requests", type=int, default=None, help="with --concurrency: requests per level at least")
    p.add_argument("--device", default=None, help="with --concurrency: torch device (cpu, cuda)")
    p.add_argument("--shapes", type=Path, default=None, help="with --concurrency: ModelConfig JSON, random weights of these shapes (speed only)")
    p.add_argument("--threads", type=int, default=None, help="with --concurrency: torch threads")
    p.add_argument("--dtype", default=None, help="with --concurrency: cast the weights (e.g. bfloat16)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="with --concurrency: a sampler setting for every request")
    p.add_argument("--real-lines", choices=("tune", "aside"), default=None,
                   help="with --concurrency (default 1,4): real lines of these packages with their workspace, right characters per second per user, diffusion vs left to right with the same drafts (lab/concurrency/real_lines_speed.py)")
    p.add_argument("--n", type=int, default=None, help="with --real-lines: lines a package (default 25)")
    args = p.parse_args(argv)
    if args.real_lines:
        from lab.concurrency import real_lines_speed

        forwarded = ["--set", args.real_lines, "--concurrency", args.concurrency or real_lines_speed.DEFAULT_LEVELS] + (["--json"] if args.json else [])
        for flag, value in (("--n", args.n), ("--model", args.model), ("--out", args.out), ("--modes", args.modes), ("--device", args.device), ("--threads", args.threads), ("--dtype", args.dtype)):
            if value is not None:
                forwarded += [flag, str(value)]
        for setting in args.set:
            forwarded += ["--knob", setting]
        return real_lines_speed.main(forwarded)
    if args.concurrency:
        from lab.concurrency import sweep

        forwarded = ["--concurrency", args.concurrency] + (["--json"] if args.json else [])
        for flag, value in (("--model", args.model), ("--plot", args.plot), ("--out", args.out), ("--modes", args.modes), ("--requests", args.requests), ("--device", args.device), ("--shapes", args.shapes), ("--threads", args.threads), ("--dtype", args.dtype)):
            if value is not None:
                forwarded += [flag, str(value)]
        for setting in args.set:
            forwarded += ["--set", setting]
        return sweep.main(forwarded)
    if args.syntax:
        from lab.syntax_bench import bench as syntax_bench

        forwarded = (["--model", str(args.model)] if args.model else []) + (["--json"] if args.json else []) + (["--limit", str(args.limit)] if args.limit else [])
        return syntax_bench.main(forwarded)
    return run_bench(model_dir=args.model, limit=args.limit, as_json=args.json)
