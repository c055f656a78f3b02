"""The ladder: where the right answers are lost, rung by rung (issue 24, docs/ladder.md).

    python -m lab.evaluation.ladder --limit 100 --json docs/measurements/ladder.json
    python -m lab.evaluation.ladder --model ../shared/candidates/gpu-continuation-2026-11-30 --limit 100

For one model, on single-line items of two sets (the dev lines, lab/bench_data/
dev_lines.jsonl, and HumanEval's single-line tasks, lab/evaluation/humaneval.py), each
with the cursor in two places:

* `line_start`: the middle is the whole line, its indentation included (the items as
  stored);
* `indent`: the cursor after the line's indentation (where an editor puts it after
  Enter): the indentation moves from the middle to the end of the prefix.

and four rungs, from the most help to the real use:

* `autoregressive`: the same weights writing left to right, one token per pass, stopping
  at the end of the first line (lab/baseline/autoregressive.py; it never sees the suffix);
* `oracle_length`: diffusion with the canvas exactly as long as the true middle and no
  early end (unconstrained);
* `engine_length`: diffusion finding the length itself, unconstrained;
* `default`: the engine's default (the syntax constraint on; Python and JavaScript both
  have one).

Each rung reports exact match (trailing whitespace ignored, lab/evaluation/items.py),
the empty-answer rate (every reference is non-empty), and for HumanEval pass@1 (the
programs run in a limited subprocess, lab/evaluation/execution.py, as `python -m lab eval`
does). `--heal/--no-heal` turns the engine's token healing at the cursor
(engine/window.py) on or off for every rung, so before and after are one flag apart.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from lab.baseline.autoregressive import decode_many
from engine.healing import heal_cursor, unheal_middle
from lab.evaluation.execution import run_program
from lab.evaluation.humaneval import single_line_tasks
from lab.evaluation.items import DEV_FILE, exact_match, load_items
from lab.evaluation.run import _spread

RUNGS = ("autoregressive", "oracle_length", "engine_length", "default")
CURSORS = ("line_start", "indent")
SETS = ("dev", "humaneval")


@dataclass(frozen=True)
class Item:
    prefix: str
    middle: str
    suffix: str
    language: str
    test: str = ""  # HumanEval: the program's tests (pass@1); "" for dev lines
    entry_point: str = ""

    def program(self, middle: str) -> str:
        return f"{self.prefix}{middle}{self.suffix}\n\n{self.test}\n\ncheck({self.entry_point})\n"


def at_cursor(item: Item, cursor: str) -> Item:
    """The item with the cursor at the line start (as stored) or after the indentation."""
    if cursor == "line_start":
        return item
    body = item.middle.lstrip(" \t")
    indent = item.middle[: len(item.middle) - len(body)]
    return Item(item.prefix + indent, body, item.suffix, item.language, item.test, item.entry_point)


def load_set(name: str, limit: Optional[int]) -> list[Item]:
    if name == "dev":
        rows = _spread(load_items(path=DEV_FILE), limit)
        return [Item(r["prefix"], r["middle"], r["suffix"], r["language"]) for r in rows]
    tasks = _spread(list(single_line_tasks()), limit)
    return [Item(t.prefix, t.middle, t.suffix, "python", t.test, t.entry_point) for t in tasks]


def autoregressive_middle(eng, item: Item, heal: bool) -> str:
    """Left to right with the same weights, from the same (healed) prefix window."""
    prefix, removed = heal_cursor(item.prefix) if heal else (item.prefix, "")
    prefix_ids = eng.context_ids(prefix, item.suffix)[0]
    context = eng.model.encode_context(prefix_ids, [])
    result = decode_many(eng.model, eng.tokenizer, [context], [item.suffix], max_tokens=eng.settings.max_tokens)[0]
    return unheal_middle(result.middle, removed)


def rung_middle(eng, rung: str, item: Item, heal: bool) -> str:
    if rung == "autoregressive":
        return autoregressive_middle(eng, item, heal)
    settings: dict = {"heal_cursor": heal}
    if rung == "oracle_length":
        removed = heal_cursor(item.prefix)[1] if heal else ""
        n = max(1, len(eng.tokenizer.encode(removed + item.middle)))  # the healed model writes the whitespace too
        settings.update(max_tokens=n, block_size=min(n, 256), allow_end=False, constrained=False)
    elif rung == "engine_length":
        settings.update(constrained=False)
    return eng.infill(item.prefix, item.suffix, language=item.language, **settings).middle


def score(items: list[Item], middles: list[str], jobs: int) -> dict:
    n = len(items)
    report = {
        "items": n,
        "exact_match": round(100 * sum(exact_match(m, it.middle) for m, it in zip(middles, items)) / n, 2),
        "empty": sum(not m.strip() for m in middles),
    }
    report["empty_rate"] = round(100 * report["empty"] / n, 2)
    if items and items[0].test:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            outcomes = list(pool.map(lambda pair: run_program(pair[0].program(pair[1])), zip(items, middles)))
        report["pass_at_1"] = round(100 * sum(o.passed for o in outcomes) / n, 2)
    return report


def ladder(eng, sets: list[str], cursors: list[str], rungs: list[str], limit: Optional[int], heal: bool, jobs: int = 2, quiet: bool = False) -> dict:
    out: dict = {}
    for set_name in sets:
        base = load_set(set_name, limit)
        for cursor in cursors:
            items = [at_cursor(it, cursor) for it in base]
            for rung in rungs:
                start = time.time()
                middles = [rung_middle(eng, rung, it, heal) for it in items]
                row = score(items, middles, jobs)
                row["seconds"] = round(time.time() - start, 1)
                out.setdefault(set_name, {}).setdefault(cursor, {})[rung] = row
                if not quiet:
                    print(f"{set_name:9} {cursor:10} {rung:14} {json.dumps(row)}", file=sys.stderr, flush=True)
    return out


def markdown(before: dict, after: Optional[dict] = None) -> str:
    """The ladder as a markdown table per set; with `after`, each cell is `before → after`
    (exact match / empty answers / pass@1)."""
    lines = []
    for set_name, cursors in before["ladder"].items():
        he = set_name == "humaneval"
        lines += [f"{set_name} ({before['limit']} items, {before['model_dir']})", "",
                  "| cursor | rung | exact match % | empty |" + (" pass@1 % |" if he else ""),
                  "| --- | --- | ---: | ---: |" + (" ---: |" if he else "")]
        for cursor, rungs in cursors.items():
            for rung, row in rungs.items():
                new = (after or {}).get("ladder", {}).get(set_name, {}).get(cursor, {}).get(rung)
                cell = lambda key: f"{row[key]:g}" + (f" → {new[key]:g}" if new and new[key] != row[key] else "")  # noqa: E731
                lines.append(f"| {cursor} | {rung} | {cell('exact_match')} | {cell('empty')} |" + (f" {cell('pass_at_1')} |" if he else ""))
        lines.append("")
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> int:
    import engine

    parser = argparse.ArgumentParser(prog="python -m lab.evaluation.ladder", description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=None, help="model directory (default: the embedded model)")
    parser.add_argument("--limit", type=int, default=100, help="items per set, spread over it (default 100)")
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--cursors", default=",".join(CURSORS))
    parser.add_argument("--rungs", default=",".join(RUNGS))
    parser.add_argument("--heal", action=argparse.BooleanOptionalAction, default=True, help="token healing at the cursor (the engine's default: on)")
    parser.add_argument("--jobs", type=int, default=2, help="HumanEval programs run at once")
    parser.add_argument("--json", type=Path, default=None, help="write the report (JSON) here")
    parser.add_argument("--render", type=Path, nargs="+", default=None, metavar="JSON", help="print a report (or a before and an after report) as markdown tables, run nothing")
    args = parser.parse_args(argv)
    if args.render:
        reports = [json.loads(path.read_text()) for path in args.render[:2]]
        print(markdown(*reports))
        return 0
    pick = lambda text, known: [x for x in text.split(",") if x] if set(text.split(",")) - {""} <= set(known) else parser.error(f"choose from {', '.join(known)}")  # noqa: E731
    sets, cursors, rungs = pick(args.sets, SETS), pick(args.cursors, CURSORS), pick(args.rungs, RUNGS)
    eng = engine.load(args.model)
    start = time.time()
    report = {"model": eng.model_name, "model_dir": str(args.model or "engine/default_model"), "limit": args.limit, "heal_cursor": args.heal,
              "ladder": ladder(eng, sets, cursors, rungs, args.limit, args.heal, args.jobs)}
    report["seconds"] = round(time.time() - start, 1)
    text = json.dumps(report, indent=2)
    print(text)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
