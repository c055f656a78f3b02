"""Where a request's forward passes go: per-item middles, forwards, tokens written and
returned, on the dev or held-out single-line items, each a cold request.

    python -m lab.evaluation.passes --items dev --limit 360 [--forced-before-closing 1]
        [--no-close-on-veto] [--no-replay] [--ending-tokens 24] [--search-tokens 8] [--candidates 3] [--out rows.json]
        [--set confidence_threshold=0.7 ...]

Prints exact match, empty answers, tokens per forward (returned tokens, the context's
encoding counted where it is a pass of its own, as `infill bench`), forwards, and the worst case of forwards - tokens
written (the bound of docs/sampler.md: at most 2) and of forwards - tokens returned.
Knobs are tuned on `--items dev`; the held-out items are for reporting.
"""
from __future__ import annotations

import argparse
import json
from collections import Counter
import sys
import time
from pathlib import Path

from lab.evaluation.items import BENCH_FILE, DEV_FILE, exact_match, load_items, percentile
from lab.evaluation.sweep import edit_similarity


def main(argv: list[str] | None = None) -> int:
    import engine
    import engine.api
    import engine.request
    import engine.ending
    import engine.sampler

    p = argparse.ArgumentParser(prog="python -m lab.evaluation.passes", description=__doc__.splitlines()[0])
    p.add_argument("--items", choices=["dev", "heldout", "dev-midline", "heldout-midline", "dev-midword", "heldout-midword"], default="dev",
                   help="the line items, or their mid-line variants (cursor inside a call's brackets) or mid-word ones (cursor inside the line's first word): lab/evaluation/midline.py")
    p.add_argument("--limit", type=int, default=120, help="the first N items")
    p.add_argument("--model", type=Path, default=None)
    p.add_argument("--forced-before-closing", type=int, default=None)
    p.add_argument("--no-close-on-veto", action="store_true", help="force refused tokens on to max_tokens (the rule before issue 25)")
    p.add_argument("--search-tokens", type=int, default=None)
    p.add_argument("--ending-tokens", type=int, default=None, help="tokens the last-resort candidate tries as a middle's last (engine.ending.ENDING_TOKENS)")
    p.add_argument("--no-replay", action="store_true", help="compute every pass of a later candidate (engine.request.REPLAY_BYTES = 0: the rule before replays)")
    p.add_argument("--candidates", type=int, default=None, help="model candidates per request (engine default 2; 3 adds the unconstrained one)")
    p.add_argument("--out", type=Path, default=None, help="write the per-item rows (JSON) here")
    p.add_argument("--set", dest="knobs", action="append", default=[], metavar="KNOB=VALUE",
                   help="a sampler setting for every request (engine.types.SamplerSettings), e.g. confidence_threshold=0.7; repeatable")
    args = p.parse_args(argv)
    if args.forced_before_closing is not None:
        engine.sampler.FORCED_BEFORE_CLOSING = args.forced_before_closing
    if args.search_tokens is not None:
        engine.sampler.SEARCH_TOKENS = args.search_tokens
    if args.ending_tokens is not None:
        engine.ending.ENDING_TOKENS = args.ending_tokens
    if args.no_replay:
        engine.request.REPLAY_BYTES = 0
    if args.no_close_on_veto:
        engine.request.CLOSE_ON_VETO = False
    eng = engine.load(args.model)
    if args.candidates is not None:
        eng.settings = eng.settings.replace(candidates=args.candidates)
    if args.knobs:
        eng.settings = eng.settings.replace(**{name: json.loads(value) for name, value in (k.split("=", 1) for k in args.knobs)})
    if args.items.endswith(("-midline", "-midword")):
        from lab.evaluation.midline import midline_items, midword_items

        derive = midline_items if args.items.endswith("-midline") else midword_items
        items = derive(load_items(None, DEV_FILE if args.items.startswith("dev") else BENCH_FILE))[: args.limit]
    else:
        items = load_items(args.limit, DEV_FILE if args.items == "dev" else BENCH_FILE)
    eng.infill(items[0]["prefix"], items[0]["suffix"], language=items[0].get("language"))  # warm-up
    rows = []
    started = time.thread_time()
    for item in items:
        eng.forget_context()  # cold requests: every item encodes its context
        r = eng.infill(item["prefix"], item["suffix"], language=item.get("language"))
        rows.append({"middle": r.middle, "tokens": r.tokens, "written": r.written, "forwards": r.forwards, "ms": round(r.ms, 1),
                     "stop": r.stop_reason, "end": r.end_rule, "candidates": r.candidates_tried, "em": exact_match(r.middle, item["middle"]),
                     "similarity": edit_similarity(r.middle, item["middle"])})
    cpu_seconds = time.thread_time() - started  # this thread's CPU time: the machine's other load weighs less
    tokens, forwards = sum(r["tokens"] for r in rows), sum(r["forwards"] for r in rows)
    summary = {
        "model": eng.model_name, "items": len(rows), "set": args.items,
        "exact_match": round(100 * sum(r["em"] for r in rows) / len(rows), 2),
        "edit_similarity": round(100 * sum(r["similarity"] for r in rows) / len(rows), 2),
        "empty": sum(not r["middle"].strip() for r in rows),
        "tpf": round(tokens / forwards, 3) if forwards else 0.0, "forwards": forwards, "tokens": tokens,
        "cpu_s": round(cpu_seconds, 2), "tokens_per_cpu_s": round(tokens / cpu_seconds, 1) if cpu_seconds else 0.0,
        "p50_ms": round(percentile([r["ms"] for r in rows], 0.5), 1), "mean_ms": round(sum(r["ms"] for r in rows) / len(rows), 1),
        "worst_forwards_minus_written": max(r["forwards"] - r["written"] for r in rows),
        "worst_forwards_minus_tokens": max(r["forwards"] - r["tokens"] for r in rows),
        # Work not delivered (issue 34): forward passes beyond the returned middle's tokens.
        "forwards_minus_tokens_p50": percentile([r["forwards"] - r["tokens"] for r in rows], 0.5),
        "forwards_minus_tokens_p95": percentile([r["forwards"] - r["tokens"] for r in rows], 0.95),
        "share_forwards_within_tokens_plus_2": round(sum(r["forwards"] - r["tokens"] <= 2 for r in rows) / len(rows), 3),
        "stops": dict(Counter(r["stop"] for r in rows).most_common()),
        "end_rules": dict(Counter(r["end"] or "none" for r in rows).most_common()),  # engine/ending.py: which rule ended each middle
    }
    if args.out:
        args.out.write_text(json.dumps({"summary": summary, "rows": rows}, indent=1) + "\n")
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
