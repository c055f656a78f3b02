"""`python -m lab eval`: HumanEval single-line infilling and held-out exact match.

    python -m lab eval                      # both suites, full HumanEval (1,033 tasks), both length modes
    python -m lab eval humaneval --limit 100 --modes engine
    python -m lab eval heldout --json
    python -m lab eval humaneval --cursor indent        # the cursor after the line's indentation
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Optional

from lab.progress import report_progress
from engine.healing import heal_cursor
from lab.evaluation.items import exact_match, load_items
from lab.evaluation.execution import run_program
from lab.evaluation.humaneval import LineTask, single_line_tasks


def _spread(items: list, limit: Optional[int]) -> list:
    """`limit` items spread evenly over the list (every problem represented)."""
    if not limit or limit >= len(items):
        return items
    step = len(items) / limit
    return [items[int(i * step)] for i in range(limit)]


def _progress(label: str, done: int, total: int, quiet: bool) -> None:
    if not quiet:
        report_progress(label, done, total)


def at_indent(task: LineTask) -> LineTask:
    """The task with the cursor after the line's indentation (where an editor puts it
    after Enter) rather than at the line start: the indentation moves to the prefix."""
    body = task.middle.lstrip(" \t")
    return replace(task, prefix=task.prefix + task.middle[: len(task.middle) - len(body)], middle=body)


def eval_humaneval(eng, limit: Optional[int], modes: list[str], quiet: bool = False, jobs: int = 4, cursor: str = "line_start") -> dict:
    tasks: list[LineTask] = _spread(list(single_line_tasks()), limit)
    if cursor == "indent":
        tasks = [at_indent(t) for t in tasks]
    report: dict = {"tasks": len(tasks), "cursor": cursor, "heal_cursor": eng.settings.heal_cursor}
    for mode in modes:
        middles, times, forwards, tokens = [], [], 0, 0
        for i, task in enumerate(tasks, 1):
            settings = {}
            if mode == "oracle":
                removed = heal_cursor(task.prefix)[1] if eng.settings.heal_cursor else ""
                n = len(eng.tokenizer.encode(removed + task.middle))  # a healed cursor: the model writes the whitespace too
                settings = {"max_tokens": n, "block_size": n, "allow_end": False}
            result = eng.infill(task.prefix, task.suffix, language="python", **settings)
            middles.append(result.middle)
            times.append(result.ms)
            forwards += result.forwards
            tokens += result.tokens
            _progress(f"humaneval ({mode}) infill", i, len(tasks), quiet)
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            outcomes = list(pool.map(lambda pair: run_program(pair[0].program(pair[1])), zip(tasks, middles)))
        passed = sum(o.passed for o in outcomes)
        report[mode] = {
            "pass_at_1": round(100 * passed / len(tasks), 2),
            "exact_match": round(100 * sum(exact_match(m, t.middle) for m, t in zip(middles, tasks)) / len(tasks), 2),
            "empty": sum(not m.strip() for m in middles),  # every reference is non-empty
            "mean_ms": round(sum(times) / len(times), 1),
            "tokens_per_forward": round(tokens / forwards, 3) if forwards else 0.0,
            "timeouts": sum(o.reason == "timeout" for o in outcomes),
        }
    if "engine" in report and "oracle" in report:
        report["length_gap_points"] = round(report["oracle"]["pass_at_1"] - report["engine"]["pass_at_1"], 2)
    return report


def eval_heldout(eng, limit: Optional[int], quiet: bool = False) -> dict:
    items = _spread(load_items(), limit)
    by_language: dict[str, list[bool]] = {}
    for i, item in enumerate(items, 1):
        result = eng.infill(item["prefix"], item["suffix"], language=item["language"])
        by_language.setdefault(item["language"], []).append(exact_match(result.middle, item["middle"]))
        _progress("held-out exact match", i, len(items), quiet)
    return {lang: {"items": len(v), "exact_match": round(100 * sum(v) / len(v), 2)} for lang, v in by_language.items()}


def main(argv: list[str]) -> int:
    import engine

    parser = argparse.ArgumentParser(prog="python -m lab eval", description="Evaluate a model: HumanEval single-line infilling (pass@1) and held-out exact match.")
    parser.add_argument("suite", nargs="?", choices=["all", "humaneval", "heldout", "next-edit"], default="all")
    parser.add_argument("--model", type=Path, default=None, help="model directory (default: the embedded model)")
    parser.add_argument("--limit", type=int, default=None, help="evaluate this many tasks, spread over the suite")
    parser.add_argument("--modes", default="engine,oracle", help="HumanEval length modes: engine, oracle or both")
    parser.add_argument("--constrained", action=argparse.BooleanOptionalAction, default=None)
    parser.add_argument("--cursor", choices=["line_start", "indent"], default="line_start", help="HumanEval: the cursor at the line start (the middle includes the indentation) or after the indentation")
    parser.add_argument("--heal-cursor", action=argparse.BooleanOptionalAction, default=None, help="token healing at the cursor (engine default: on)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--out", type=Path, default=None, help="also write the report (JSON) here")
    args = parser.parse_args(argv)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not set(modes) <= {"engine", "oracle"}:
        parser.error("--modes takes engine, oracle or engine,oracle")
    eng = engine.load(args.model)
    if args.constrained is not None:
        eng.settings = eng.settings.replace(constrained=args.constrained)
    if args.heal_cursor is not None:
        eng.settings = eng.settings.replace(heal_cursor=args.heal_cursor)
    start = time.time()
    report: dict = {"model": eng.model_name, "training": eng.info.get("training", {}), "constrained": eng.settings.constrained}
    if args.suite in ("all", "humaneval"):
        report["humaneval_single_line"] = eval_humaneval(eng, args.limit, modes, quiet=args.json, cursor=args.cursor)
    if args.suite in ("all", "heldout"):
        report["heldout_exact_match"] = eval_heldout(eng, args.limit, quiet=args.json)
    if args.suite in ("all", "next-edit"):
        from lab.evaluation.next_edit import eval_next_edit

        report["next_edit"] = eval_next_edit(eng, args.limit)
    report["seconds"] = round(time.time() - start, 1)
    text = json.dumps(report, indent=None if args.json else 2)
    print(text)
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0
