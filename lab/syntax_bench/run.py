"""Run the unseen syntax benchmark: constrained vs unconstrained infills, per language.

    python -m lab.syntax_bench.run [--part aside|tune] [--languages python,go] [--limit 200]
                                   [--model DIR] [--json] [--out FILE]

Every task runs once with `constrained=False` and once with `constrained=True` through the
real engine. A splice counts as parse-valid when tree-sitter parses the whole file
(prefix + middle + suffix) without an ERROR or MISSING node; the files are clean before the
cut, so any error is the completion's. An empty (refused) middle is therefore valid only
where the empty hole itself parses (`f()`), never for an empty condition or block.
Figures are reported on the `aside` part unless `--part tune` is asked for; only the tune
part may be looked at while improving the checks.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Optional

from .bench import run_setting
from .unseen_tasks import LANGUAGES, materialize, select

DEFAULT_LIMIT = 200  # tasks per language: ~4 minutes per language on a shared 2-core CPU


def run_language(eng: Any, language: str, part: str, limit: int) -> dict:
    tasks = [materialize(hole) for hole in select(part, language, limit)]
    off = run_setting(eng, tasks, constrained=False).figures()
    on = run_setting(eng, tasks, constrained=True).figures()
    return {"language": language, "part": part, "tasks": len(tasks), "on": on, "off": off}


def table(rows: list[dict]) -> str:
    head = f"{'language':11} {'tasks':>5}  {'parse-valid on':>14} {'off':>7}  {'exact on':>8} {'off':>6}  {'shown on':>8}  {'ms on':>6} {'off':>6}"
    lines = [head]
    for r in rows:
        on, off = r["on"], r["off"]
        lines.append(
            f"{r['language']:11} {r['tasks']:>5}  {100 * on['parse_valid_rate']:>13.2f}% {100 * off['parse_valid_rate']:>6.2f}%"
            f"  {100 * on['exact_match_rate']:>7.2f}% {100 * off['exact_match_rate']:>5.2f}%  {100 * on['suggestion_rate']:>7.1f}%"
            f"  {on['ms_per_infill']:>6.0f} {off['ms_per_infill']:>6.0f}"
        )
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.syntax_bench.run", description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=("aside", "tune"), default="aside")
    parser.add_argument("--languages", default=",".join(LANGUAGES))
    parser.add_argument("--limit", type=int, default=DEFAULT_LIMIT, help="tasks per language (0 = all)")
    parser.add_argument("--model", default=None, help="model directory (default: the embedded model)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON figures here")
    args = parser.parse_args(argv)
    languages = [name.strip() for name in args.languages.split(",") if name.strip()]
    unknown = [name for name in languages if name not in LANGUAGES]
    if unknown:
        print(f"error: unknown language(s) {', '.join(unknown)}; known: {', '.join(LANGUAGES)}", file=sys.stderr)
        return 2

    import engine

    eng = engine.load(model_dir=args.model)
    rows = []
    for language in languages:
        rows.append(run_language(eng, language, args.part, args.limit))
        print(table(rows[-1:]).split("\n")[-1], file=sys.stderr, flush=True)
    report = {"part": args.part, "limit": args.limit, "model": eng.model_name, "languages": rows}
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=1) if args.json else table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
