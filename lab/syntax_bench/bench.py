"""Syntax-aware infilling benchmark: the same tasks with the syntax constraint on and off.

Tasks are SAFIM's three kinds (statement block, control-flow condition, call arguments),
cut with tree-sitter from `lab/syntax_bench/sources/` (code written for this project, not in the
training corpus). For each setting it reports, side by side:

- parse-valid: the share of spliced files that tree-sitter parses without an error
  (the files are clean before the cut, so any error is the completion's);
- exact match: the middle equals the original (ignoring surrounding whitespace);
- ms per infill, and for "on" the part spent inside the constraint and its share.

    python -m lab bench --syntax [--model DIR] [--limit N] [--json]
    python -m lab.syntax_bench.bench   (same options)
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

import tree_sitter as ts

from grammars import constraint_for
from grammars.registry import get
from lab.syntax_bench.tasks import InfillTask, bench_tasks


@dataclass
class SettingResult:
    name: str
    tasks: int = 0
    parse_valid: int = 0
    exact: int = 0
    ms_total: float = 0.0
    constraint_ms_total: float = 0.0
    vetoed: int = 0
    suggested: int = 0  # tasks answered with a non-empty middle (an empty one is "no suggestion")
    suggested_valid: int = 0
    by_kind: dict = field(default_factory=dict)
    invalid: list = field(default_factory=list)  # (task_id, middle) of splices that do not parse: where to look

    def add(self, task: InfillTask, valid: bool, exact: bool, ms: float, constraint_ms: float, vetoed: int, suggested: bool = True, middle: str = "") -> None:
        self.tasks += 1
        self.parse_valid += valid
        self.suggested += suggested
        self.suggested_valid += suggested and valid
        self.exact += exact
        self.ms_total += ms
        self.constraint_ms_total += constraint_ms
        self.vetoed += vetoed
        kind = self.by_kind.setdefault(f"{task.language}/{task.kind}", {"tasks": 0, "parse_valid": 0, "exact": 0})
        kind["tasks"] += 1
        kind["parse_valid"] += valid
        kind["exact"] += exact
        if not valid:
            self.invalid.append({"task": task.task_id, "middle": middle})

    def figures(self) -> dict:
        n = max(1, self.tasks)
        ms = self.ms_total / n
        constraint_ms = self.constraint_ms_total / n
        return {
            "setting": self.name,
            "tasks": self.tasks,
            "parse_valid_rate": round(self.parse_valid / n, 4),
            # What a user sees: of the suggestions actually shown, how many keep the file parsing.
            "suggestion_rate": round(self.suggested / n, 4),
            "parse_valid_of_suggestions": round(self.suggested_valid / max(1, self.suggested), 4),
            "exact_match_rate": round(self.exact / n, 4),
            "ms_per_infill": round(ms, 2),
            "constraint_ms_per_infill": round(constraint_ms, 3),
            "constraint_share": round(constraint_ms / ms, 4) if ms else 0.0,
            "vetoed_commits": self.vetoed,
            "by_kind": self.by_kind,
            "invalid": self.invalid[:50],
        }


def splice_parses(task: InfillTask, middle: str) -> bool:
    """Whether prefix + middle + suffix parses with no ERROR or MISSING node."""
    parser = ts.Parser(get(task.language).ts_language())
    tree = parser.parse((task.prefix + middle + task.suffix).encode("utf-8"))
    return not tree.root_node.has_error


def run_setting(engine: Any, tasks: Sequence[InfillTask], constrained: bool, **settings: Any) -> SettingResult:
    """Run every task once through `engine.infill` with the constraint on or off."""
    result = SettingResult("on" if constrained else "off")
    for task in tasks:
        constraint = constraint_for(task.language)
        if constraint is not None:
            constraint.stats.reset()
        started = time.perf_counter()
        out = engine.infill(task.prefix, task.suffix, language=task.language, constrained=constrained, **settings)
        ms = getattr(out, "ms", None) or 1000 * (time.perf_counter() - started)
        constraint_ms = 1000 * constraint.stats.seconds if constraint is not None and constrained else 0.0
        middle = out.middle
        result.add(
            task,
            valid=splice_parses(task, middle),
            exact=middle.strip() == task.middle.strip(),
            ms=ms,
            constraint_ms=constraint_ms,
            vetoed=getattr(out, "vetoed", 0),
            suggested=bool(middle.strip()),
            middle=middle,
        )
    return result


def format_table(on: dict, off: dict) -> str:
    rows = [
        ("parse-valid splices", f"{100 * on['parse_valid_rate']:.1f}%", f"{100 * off['parse_valid_rate']:.1f}%"),
        ("tasks with a suggestion", f"{100 * on['suggestion_rate']:.1f}%", f"{100 * off['suggestion_rate']:.1f}%"),
        ("parse-valid suggestions", f"{100 * on['parse_valid_of_suggestions']:.1f}%", f"{100 * off['parse_valid_of_suggestions']:.1f}%"),
        ("exact match", f"{100 * on['exact_match_rate']:.1f}%", f"{100 * off['exact_match_rate']:.1f}%"),
        ("ms per infill", f"{on['ms_per_infill']:.1f}", f"{off['ms_per_infill']:.1f}"),
        (
            "constraint ms per infill",
            f"{on['constraint_ms_per_infill']:.2f} ({100 * on['constraint_share']:.1f}%)",
            "-",
        ),
        ("commits vetoed", str(on["vetoed_commits"]), str(off["vetoed_commits"])),
    ]
    added = on["ms_per_infill"] - off["ms_per_infill"]
    share = added / off["ms_per_infill"] if off["ms_per_infill"] else 0.0
    rows.append(("added ms per infill (on - off)", f"{added:+.1f} ({100 * share:+.1f}%)", ""))
    width = max(len(r[0]) for r in rows)
    lines = [f"{'':{width}}  {'constrained':>22}  {'unconstrained':>14}", f"{'tasks':{width}}  {on['tasks']:>22}  {off['tasks']:>14}"]
    lines += [f"{name:{width}}  {a:>22}  {b:>14}" for name, a, b in rows]
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab bench --syntax", description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=None, help="model directory (default: the embedded model)")
    parser.add_argument("--limit", type=int, default=0, help="run only the first N tasks (0 = all)")
    parser.add_argument("--languages", default="python,javascript", help="comma-separated languages")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)

    import engine  # imported here so that `grammars` never needs the engine to load

    try:
        eng = engine.load(model_dir=args.model)
    except engine.InfillError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    tasks = bench_tasks(tuple(name.strip() for name in args.languages.split(",") if name.strip()))
    if args.limit:
        tasks = tasks[: args.limit]
    if tasks:  # one warm-up so that neither setting pays for first-call costs
        eng.infill(tasks[0].prefix, tasks[0].suffix, language=tasks[0].language)
    off = run_setting(eng, tasks, constrained=False).figures()
    on = run_setting(eng, tasks, constrained=True).figures()
    if args.json:
        print(json.dumps({"on": on, "off": off}, indent=2))
    else:
        print(format_table(on, off))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
