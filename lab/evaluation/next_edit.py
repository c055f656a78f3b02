"""Next-edit evaluation: held-out synthetic edit tasks (and real ones when given).

    python -m lab.evaluation.next_edit --limit 20            # 20 tasks per kind and language
    python -m lab.evaluation.next_edit --modes auto,replay,model --json
    eval_next_edit(eng, limit)                                  # from `python -m lab eval`

Tasks (lab.training.edits.make_edit_task) are built from the corpus's validation split
(data/corpus/valid.jsonl) when it exists, else from the source files of the held-out
benchmark (lab/bench_data/heldout_lines.jsonl); never from training files. Kinds that
expect an edit: rename, added_argument, repeated; kinds that expect none:
completed_rename, reference_change, no_history. No task edits inside a string or comment,
as the language's grammar tells them (`grammar_text`: a docstring's inner lines too, which
the engine does not replay into). Real release diffs: lab/evaluation/real_edits.py.

Figures: exact match of the resulting document (every expected edit made, nothing else:
the expected edits all lie in the window, so this is the window's exact match); for the
no-edit kinds the share answered with no edit, and the false-edit rate (answered with an
edit); latency p50/p99 over every task, model loading excluded.
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from pathlib import Path
from typing import Any, Callable, Optional

from lab.evaluation.items import BENCH_FILE
from engine.next_edit import next_edit
from engine.next_edit.parse_check import Syntax
from engine.next_edit.replay import _inside_string_or_comment
from lab.progress import report_progress
from lab.training.edits import EDIT_KINDS, NO_EDIT_KINDS, EditTask, make_edit_task, real_edit_tasks

VALID_SPLIT = Path(__file__).resolve().parents[2] / "data" / "corpus" / "valid.jsonl"
LANGUAGES = ("python", "javascript")
DEFAULT_PER_KIND = 30
SEED = 20261129


def held_out_sources() -> list[tuple[str, str]]:
    """(language, text) of held-out files: the validation split, else the benchmark's."""
    if VALID_SPLIT.exists():
        with open(VALID_SPLIT) as fh:
            docs = [json.loads(line) for line in fh]
        return [(d["language"], d["text"]) for d in docs if d["language"] in LANGUAGES]
    seen: dict[str, tuple[str, str]] = {}
    with open(BENCH_FILE) as fh:
        for line in fh:
            item = json.loads(line)
            seen.setdefault(item["source"], (item["language"], item["prefix"] + item["middle"] + item["suffix"]))
    return [v for v in seen.values() if v[0] in LANGUAGES]


def grammar_text(text: str, language: str) -> Callable[[int], bool]:
    """Which offsets of `text` lie in strings and comments, as the engine tells them (the
    language's grammar: a docstring's inner lines too), so no synthetic task renames a word
    of prose; the line-local guess where the grammar does not answer."""
    syntax = Syntax(language, text, (0, len(text)))

    def in_text(offset: int) -> bool:
        found = syntax.in_text(offset)
        return _inside_string_or_comment(text, offset) if found is None else found

    return in_text


def build_tasks(per_kind: int, seed: int = SEED) -> list[EditTask]:
    """Up to `per_kind` tasks of every kind in every language, deterministic."""
    rng = random.Random(seed)
    tasks: list[EditTask] = []
    sources = held_out_sources()
    for language in LANGUAGES:
        texts = [t for lang, t in sources if lang == language]
        for kind in EDIT_KINDS + NO_EDIT_KINDS:
            made = 0
            order = list(range(len(texts)))
            rng.shuffle(order)
            for index in order:
                if made >= per_kind:
                    break
                task = make_edit_task(texts[index], rng, kind, language, grammar_text(texts[index], language))
                if task is not None and (task.expects_edit == (kind in EDIT_KINDS)):
                    tasks.append(task)
                    made += 1
    return tasks


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def run_tasks(eng: Any, tasks: list[EditTask], quiet: bool = True, **limits: Any) -> dict:
    """Score `tasks`; returns the report (by kind, by language, overall, latency)."""
    rows: list[dict] = []
    for i, task in enumerate(tasks, 1):
        result = next_edit(eng, task.current, task.cursor, task.history, language=task.language, **limits)
        produced = result.apply(task.current)
        rows.append({"kind": task.kind, "language": task.language, "expects_edit": task.expects_edit, "edited": bool(result.edits), "exact": produced == task.target, "ms": result.ms})
        if not quiet:
            report_progress("next-edit", i, len(tasks))
    return summarize(rows)


def summarize(rows: list[dict]) -> dict:
    def figures(subset: list[dict]) -> dict:
        out: dict = {"tasks": len(subset)}
        edit = [r for r in subset if r["expects_edit"]]
        quiet = [r for r in subset if not r["expects_edit"]]
        if edit:
            out["exact_match"] = round(100 * sum(r["exact"] for r in edit) / len(edit), 1)
            out["answered_no_edit"] = round(100 * sum(not r["edited"] for r in edit) / len(edit), 1)
        if quiet:
            out["correct_no_edit"] = round(100 * sum(not r["edited"] for r in quiet) / len(quiet), 1)
            out["false_edit_rate"] = round(100 * sum(r["edited"] for r in quiet) / len(quiet), 1)
        return out

    times = [r["ms"] for r in rows]
    report: dict = {"overall": figures(rows)}
    report["by_kind"] = {k: figures([r for r in rows if r["kind"] == k]) for k in dict.fromkeys(r["kind"] for r in rows)}
    report["by_language"] = {lang: figures([r for r in rows if r["language"] == lang]) for lang in dict.fromkeys(r["language"] for r in rows)}
    report["latency_ms"] = {"p50": round(_percentile(times, 0.5), 1), "p99": round(_percentile(times, 0.99), 1), "mean": round(statistics.fmean(times), 1) if times else 0.0}
    return report


def eval_next_edit(eng: Any, limit: Optional[int] = None, quiet: bool = True, real_dirs: Optional[tuple[Path, Path]] = None, **limits: Any) -> dict:
    """The next-edit suite: `limit` tasks per kind and language (default 30)."""
    tasks = build_tasks(limit or DEFAULT_PER_KIND)
    report = run_tasks(eng, tasks, quiet=quiet, **limits)
    if real_dirs is not None:
        real = list(real_edit_tasks(*real_dirs))[: (limit or DEFAULT_PER_KIND) * 4]
        report["real_edits"] = run_tasks(eng, real, quiet=quiet, **limits) if real else {"tasks": 0}
    else:
        report["real_edits"] = "not run: no second version of the corpus packages here (pass real_dirs=(OLD, NEW))"
    return report


def main(argv: Optional[list[str]] = None) -> int:
    import engine

    parser = argparse.ArgumentParser(prog="python -m lab.evaluation.next_edit", description="Evaluate next-edit suggestions.")
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--limit", type=int, default=None, help=f"tasks per kind and language (default {DEFAULT_PER_KIND})")
    parser.add_argument("--modes", default="auto", help="comma-separated: auto, replay, model")
    parser.add_argument("--real", nargs=2, type=Path, metavar=("OLD_DIR", "NEW_DIR"), default=None, help="also score real edits between two versions")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    eng = engine.load(args.model)
    report = {"model": eng.model_name, "training": eng.info.get("training", {}).get("steps")}
    for mode in [m.strip() for m in args.modes.split(",") if m.strip()]:
        report[mode] = eval_next_edit(eng, args.limit, quiet=args.json, real_dirs=tuple(args.real) if args.real else None, mode=mode)
    print(json.dumps(report, indent=None if args.json else 2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
