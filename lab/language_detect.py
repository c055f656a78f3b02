"""How often language detection (grammars/detect.py) names the right language.

    python -m lab.language_detect                 # the report: held-out and set-aside items
    python -m lab.language_detect --part tune     # the items the knobs were chosen on
    python -m lab.language_detect --sweep         # the knob grid, scored on the tune items only

Items are real cursors with their prefix and suffix, the middle removed:
- `heldout` / `dev`: lab/bench_data (Python and JavaScript, one line removed, up to 3,000
  characters before and 1,500 after);
- `aside` / `tune`: the unseen syntax benchmark (lab/syntax_bench/unseen: Python, JavaScript,
  TypeScript, Go, Rust; a block, condition, argument list or expression removed, the
  whole file around it), up to --per-language items per language in the benchmark's
  seeded order.
`dev` and `tune` are where the knobs were chosen; `heldout` and `aside` were only measured.
An answer is right, wrong, or none (not confident: the request runs unconstrained).
"""
from __future__ import annotations

import argparse
import itertools
import json
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from grammars import languages
from grammars.detect import Params, cue_votes, decide, detect, parse_figures, split_pieces, window_text

BENCH_DATA = Path(__file__).resolve().parent / "bench_data"
REPORT_PARTS = ("heldout", "aside")
TUNE_PARTS = ("dev", "tune")


@dataclass(frozen=True)
class Item:
    part: str
    language: str
    prefix: str
    suffix: str


def items(parts: tuple[str, ...], per_language: int) -> Iterator[Item]:
    for part, name in (("heldout", "heldout_lines"), ("dev", "dev_lines")):
        if part in parts:
            with open(BENCH_DATA / f"{name}.jsonl", encoding="utf-8") as handle:
                for line in handle:
                    row = json.loads(line)
                    yield Item(part, row["language"], row["prefix"], row["suffix"])
    unseen = [part for part in ("tune", "aside") if part in parts]
    if unseen:
        from lab.syntax_bench import unseen_tasks

        for part in unseen:
            for language in unseen_tasks.LANGUAGES:
                for hole in unseen_tasks.select(part, language, per_language):
                    task = unseen_tasks.materialize(hole)
                    yield Item(part, language, task.prefix, task.suffix)


def tally(answers: list[tuple[Item, str | None]]) -> dict[str, dict[str, dict]]:
    """{part: {language: {"n", "right", "wrong", "none", "accuracy", "wrong_as"}}}."""
    out: dict[str, dict[str, dict]] = defaultdict(dict)
    groups: dict[tuple[str, str], list[str | None]] = defaultdict(list)
    for item, answer in answers:
        groups[(item.part, item.language)].append(answer)
    for (part, language), got in sorted(groups.items()):
        right = sum(1 for g in got if g == language)
        none = sum(1 for g in got if g is None)
        out[part][language] = {"n": len(got), "right": right, "wrong": len(got) - right - none, "none": none,
                               "accuracy": round(right / len(got), 3),
                               "wrong_as": dict(Counter(g for g in got if g not in (None, language)))}
    return dict(out)


def sweep(parts: tuple[str, ...], per_language: int) -> list[dict]:
    """Every knob setting of a small grid on the given items: the parses are done once per
    item and byte_share, the thresholds are then cheap to vary."""
    specs = languages()
    grid = {"byte_share": (0.25, 0.5, 0.75), "cue_weight": (0.1, 0.2, 0.3, 0.4, 0.5), "min_score": (0.3, 0.4, 0.5),
            "margin": (0.05, 0.1, 0.15)}
    prepared = []
    for item in items(parts, per_language):
        text = window_text(item.prefix, item.suffix)
        pieces = [p.encode("utf-8", "surrogatepass") for p in split_pieces(text)]
        prepared.append((item, {s.name: parse_figures(s, pieces) for s in specs}, cue_votes(specs, text)))
    rows = []
    for byte_share, cue_weight, min_score, margin in itertools.product(*grid.values()):
        params = Params(cue_weight=cue_weight, min_score=min_score, margin=margin, byte_share=byte_share)
        answers = []
        for item, figures, cues in prepared:
            scores = {n: byte_share * figures[n][0] + (1 - byte_share) * figures[n][1] + cue_weight * cues[n]
                      for n in cues}
            answers.append((item, decide(specs, scores, params).language))
        table = tally(answers)
        cells = [cell for by_language in table.values() for cell in by_language.values()]
        rows.append({"params": params.__dict__, "mean_accuracy": round(sum(c["accuracy"] for c in cells) / len(cells), 4),
                     "worst_accuracy": min(c["accuracy"] for c in cells), "wrong": sum(c["wrong"] for c in cells)})
    return sorted(rows, key=lambda r: (-r["mean_accuracy"], r["wrong"]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.language_detect", description=__doc__.split("\n")[0])
    parser.add_argument("--part", action="append", choices=REPORT_PARTS + TUNE_PARTS,
                        help="item sets (default: heldout and aside; --sweep: dev and tune)")
    parser.add_argument("--per-language", type=int, default=200, help="unseen items per language and part (0: all)")
    parser.add_argument("--sweep", action="store_true", help="score a grid of knob settings (tune on dev/tune only)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.sweep:
        rows = sweep(tuple(args.part or TUNE_PARTS), args.per_language)
        for row in rows[:15]:
            print(json.dumps(row))
        return 0
    parts = tuple(args.part or REPORT_PARTS)
    answers, times = [], []
    for item in items(parts, args.per_language):
        started = time.perf_counter()
        answers.append((item, detect(item.prefix, item.suffix).language))
        times.append((time.perf_counter() - started) * 1000)
    table = tally(answers)
    times.sort()
    ms = {"median": round(times[len(times) // 2], 1), "p95": round(times[int(len(times) * 0.95)], 1)}
    if args.json:
        print(json.dumps({"parts": table, "items": len(answers), "defaults": Params().__dict__, "detect_ms": ms}))
        return 0
    print(f"{len(answers)} items; detection {ms['median']} ms median, {ms['p95']} ms p95 (one thread); "
          f"knobs {Params().__dict__}")
    print(f"{'part':8} {'language':11} {'n':>4} {'right':>6} {'none':>5} {'wrong':>6} {'accuracy':>9}  wrong as")
    for part, by_language in table.items():
        for language, cell in by_language.items():
            print(f"{part:8} {language:11} {cell['n']:4} {cell['right']:6} {cell['none']:5} {cell['wrong']:6} "
                  f"{cell['accuracy']:9.1%}  {cell['wrong_as'] or ''}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
