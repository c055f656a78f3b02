"""Sweep the sampler's knobs on the dev set of single-line infills: how the defaults are chosen.

    python -m lab.evaluation.sweep [--model DIR] [--limit 60] [--out docs/sampler_sweep.json]

The items are lab/bench_data/dev_lines.jsonl: other lines of the validation files than
the held-out benchmark's (scripts/make_bench_data.py excludes those), so the held-out figures
are not tuned on.

For each setting: exact match, tokens per forward pass, p50 milliseconds. One knob is
varied at a time around the current defaults, on the same items in one run.
"""
from __future__ import annotations

import argparse
import difflib
import json
import sys
from pathlib import Path
from typing import Optional

from lab.evaluation.items import DEV_FILE, exact_match, load_items, percentile

GRID = {
    "confidence_threshold": [0.3, 0.5, 0.7, 0.9, 1.0],
    "block_size": [8, 16, 32],
    "max_edit_passes": [0, 1, 2],
    "edit_threshold": [0.7, 0.9, 0.99],
    "constrained": [False, True],
    "copy_weight": [0.0, 0.3, 0.6],
    "order": ["contiguous", "left_to_right", "confidence"],
    "context_tokens": [256, 1024],
    "suffix_tokens": [96, 256],
    "copy_context_tokens": [256, 2048],
}


def edit_similarity(middle: str, expected: str) -> float:
    """difflib's ratio of the stripped texts: partial credit while exact match is still 0."""
    return difflib.SequenceMatcher(None, middle.strip(), expected.strip()).ratio()


def measure(eng, items: list[dict], answers: Optional[list] = None, **settings) -> dict:
    """Exact match, edit similarity, tokens per pass and p50 latency over `items`;
    `answers`, when given, gets each item's (right, middle, stop reason) in order."""
    ms, em, tokens, forwards, similarity = [], 0, 0, 0, 0.0
    for item in items:
        eng.forget_context()
        r = eng.infill(item["prefix"], item["suffix"], language=item["language"], **settings)
        ms.append(r.ms)
        right = exact_match(r.middle, item["middle"])
        if answers is not None:
            answers.append((bool(right), r.middle, r.stop_reason))
        em += right
        similarity += edit_similarity(r.middle, item["middle"])
        tokens += r.tokens
        forwards += r.forwards
    return {"exact_match": round(100 * em / len(items), 1), "edit_similarity": round(100 * similarity / len(items), 1), "tpf": round(tokens / max(1, forwards), 3), "p50_ms": round(percentile(ms, 0.5), 1)}


def markdown(report: dict) -> str:
    """The sweep as a table (docs/sampler.md quotes it)."""
    lines = [f"Model {report['model']}, {report['items']} dev-set single-line items; defaults {report['defaults']}.", "",
             "| knob | value | exact match | edit similarity | tokens/pass | p50 ms |", "| --- | --- | ---: | ---: | ---: | ---: |"]
    for r in report["rows"]:
        mark = " (default)" if report["defaults"].get(r["knob"]) == r["value"] else ""
        lines.append(f"| {r['knob']} | {r['value']}{mark} | {r['exact_match']}% | {r.get('edit_similarity', '-')} | {r['tpf']} | {r['p50_ms']} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    import engine

    parser = argparse.ArgumentParser(prog="python -m lab.evaluation.sweep", description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--limit", type=int, default=60, help="first N dev items (the file holds 360)")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--knobs", default=",".join(GRID), help="comma-separated knobs to sweep (default: all)")
    parser.add_argument("--markdown", type=Path, default=None, help="print an earlier sweep's JSON as a table and exit")
    args = parser.parse_args(argv)
    if args.markdown:
        print(markdown(json.loads(args.markdown.read_text())))
        return 0
    eng = engine.load(args.model)
    items = load_items(args.limit, DEV_FILE)
    rows = []
    knobs = [k.strip() for k in args.knobs.split(",") if k.strip()]
    unknown = sorted(set(knobs) - set(GRID))
    if unknown:
        parser.error(f"unknown knob(s): {', '.join(unknown)}; known: {', '.join(GRID)}")
    for knob in knobs:
        values = GRID[knob]
        for value in values:
            row = {"knob": knob, "value": value, **measure(eng, items, **{knob: value})}
            rows.append(row)
            print(f"{knob:22} {str(value):6} EM {row['exact_match']:5.1f}%  ES {row['edit_similarity']:5.1f}  TPF {row['tpf']:.2f}  p50 {row['p50_ms']:7.1f} ms", flush=True)
    report = {"model": eng.model_name, "items": len(items), "defaults": {k: getattr(eng.settings, k) for k in GRID}, "rows": rows}
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
