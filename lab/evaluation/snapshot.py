"""Behaviour snapshots: what the engine answers, item by item, and the diff of two of them.

    python -m lab.evaluation.snapshot record --out base.jsonl [--suite dev|humaneval|all] [--limit N]
    python -m lab.evaluation.snapshot compare base.jsonl new.jsonl [--show 10]

For a change that must not change behaviour (a refactor of engine/sampler.py or
engine/api.py): record on the commit before, record on the commit after, compare.

`record` runs the engine with its default settings, as `python -m lab eval` does (the
same items, the same calls, one engine in one process, items in the same order), on the
dev items (lab/bench_data/dev_lines.jsonl) and the HumanEval single-line tasks (the
cursor at the line start, eval's default). It writes one JSON line per item: its suite
and id, the middle, and the figures that describe how it was made (no timings: they vary
from run to run). The same code writes the same file, byte for byte.

The engine keeps the last request's context (its cache), as it does in `lab eval`, so an
item's figures may depend on the item before it (consecutive HumanEval lines share their
prompt): compare recordings made with the same --suite and --limit. `--cold` forgets the
context before every item instead (each item on its own, as lab/evaluation/sweep.py does).

`compare` reports: how many items differ in middle, forwards, stop_reason and tokens,
the stop_reason (and end_rule) counts of both files, and the first differing items. It
reports and does not judge: exit code 0 whatever the differences, 2 when a file cannot be
read.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Iterator, Optional

from lab.evaluation.drafted import json_lines, shares
from lab.progress import report_progress

SUITES = ("dev", "humaneval")
# The result's fields a snapshot keeps (InfillResult); timings (ms, work_ms) are left out.
RESULT_FIELDS = ("middle", "tokens", "forwards", "stop_reason", "candidates_tried", "vetoed", "edits", "written", "replayed", "draft")
OPTIONAL_FIELDS = ("end_rule",)  # recorded as null while the result has no such attribute
# Recorded, printed in the work figures, never compared: how many passes drafted canvases
# saved (engine/lookahead.py) is the point of a change to them, not a difference in behaviour.
WORK_FIELDS = ("lookahead", "lookahead_passes")
HEADLINE_FIELDS = ("middle", "forwards", "stop_reason", "tokens")  # compare counts these separately
REQUIRED_KEYS = ("suite", "id") + RESULT_FIELDS


# ---------------------------------------------------------------------------- items


def _spread(items: list, limit: Optional[int]) -> list:
    """`limit` items spread evenly over the list: lab/evaluation/run.py's _spread, copied so
    that recording imports no more of the code under test than the engine itself."""
    if not limit or limit >= len(items):
        return items
    step = len(items) / limit
    return [items[int(i * step)] for i in range(limit)]


def suite_items(suite: str, limit: Optional[int] = None) -> list[dict]:
    """(id, prefix, suffix, language) of a suite's items, in eval's order; `limit` spreads
    over the suite as `python -m lab eval --limit` does."""
    if suite == "dev":
        from lab.evaluation.items import DEV_FILE, load_items

        items = [{"id": it["id"], "prefix": it["prefix"], "suffix": it["suffix"], "language": it["language"]} for it in load_items(path=DEV_FILE)]
    elif suite == "humaneval":
        from lab.evaluation.humaneval import single_line_tasks

        items = [{"id": f"{t.task_id}#{t.line_index}", "prefix": t.prefix, "suffix": t.suffix, "language": "python"} for t in single_line_tasks()]
    else:
        raise ValueError(f"unknown suite {suite!r} (one of: {', '.join(SUITES)})")
    return _spread(items, limit)


def snapshot_line(suite: str, item_id: str, result) -> dict:
    row = {"suite": suite, "id": item_id}
    for name in RESULT_FIELDS:
        row[name] = getattr(result, name)
    for name in OPTIONAL_FIELDS + WORK_FIELDS:
        row[name] = getattr(result, name, None)
    return row


def record(eng, suites: list[str], limit: Optional[int], cold: bool = False, quiet: bool = False) -> Iterator[dict]:
    for suite in suites:
        items = suite_items(suite, limit)
        for i, item in enumerate(items, 1):
            if cold:
                eng.forget_context()
            result = eng.infill(item["prefix"], item["suffix"], language=item["language"])
            yield snapshot_line(suite, item["id"], result)
            if not quiet:
                report_progress(f"snapshot {suite}", i, len(items))


def cmd_record(args) -> int:
    import engine

    suites = list(SUITES) if args.suite == "all" else [args.suite]
    start = time.time()
    eng = engine.load(args.model)
    out: Path = args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".partial")
    per_suite: Counter = Counter()
    with open(tmp, "w") as fh:  # renamed when complete: a stopped run leaves no file that looks whole
        for row in record(eng, suites, args.limit, cold=args.cold, quiet=args.quiet):
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            per_suite[row["suite"]] += 1
    os.replace(tmp, out)
    counts = ", ".join(f"{s} {per_suite[s]}" for s in suites)
    print(f"snapshot: {sum(per_suite.values())} items ({counts}) written to {out} in {time.time() - start:.1f} s", file=sys.stderr)
    return 0


# ---------------------------------------------------------------------------- compare


class SnapshotError(Exception):
    pass


def read_snapshot(path: Path) -> list[dict]:
    rows, seen = [], set()
    try:
        numbered = list(json_lines(path))
    except (OSError, UnicodeDecodeError) as exc:
        raise SnapshotError(f"cannot read {path}: {exc}") from None
    except ValueError as exc:
        raise SnapshotError(str(exc)) from None
    for n, row in numbered:
        missing = [k for k in REQUIRED_KEYS if k not in row]
        if missing:
            raise SnapshotError(f"{path}:{n}: not a snapshot line (missing {', '.join(missing)})")
        key = (row["suite"], row["id"])
        if key in seen:
            raise SnapshotError(f"{path}:{n}: item {row['suite']} {row['id']} appears twice")
        seen.add(key)
        rows.append(row)
    return rows


def compare_rows(a: list[dict], b: list[dict]) -> dict:
    """The figures `compare` prints, as data: items matched by (suite, id)."""
    b_by_key = {(r["suite"], r["id"]): r for r in b}
    a_keys = {(r["suite"], r["id"]) for r in a}
    pairs = [(ra, b_by_key[(ra["suite"], ra["id"])]) for ra in a if (ra["suite"], ra["id"]) in b_by_key]
    fields = list(RESULT_FIELDS) + [f for f in OPTIONAL_FIELDS if any(r.get(f) is not None for r in a + b)]

    def differs(ra: dict, rb: dict, name: str) -> bool:
        if name in OPTIONAL_FIELDS and (ra.get(name) is None or rb.get(name) is None):
            return False  # one side predates the field: nothing to compare
        return ra.get(name) != rb.get(name)

    by_field = {name: sum(differs(ra, rb, name) for ra, rb in pairs) for name in fields}
    differing = [(ra, rb, [f for f in fields if differs(ra, rb, f)]) for ra, rb in pairs]
    differing = [d for d in differing if d[2]]
    tables = {}
    for name in ("stop_reason",) + OPTIONAL_FIELDS:
        if name == "stop_reason" or name in fields:
            tables[name] = (Counter(str(r.get(name)) for r in a), Counter(str(r.get(name)) for r in b))
    return {
        "a_items": len(a), "b_items": len(b), "compared": len(pairs),
        "only_in_a": len(a_keys - set(b_by_key)), "only_in_b": len(set(b_by_key) - a_keys),
        "by_field": by_field, "differing": differing, "tables": tables,
        "differing_by_suite": Counter(ra["suite"] for ra, _, _ in differing),
        "work": (work_figures(a), work_figures(b)),
    }


def work_figures(rows: list[dict]) -> dict:
    """Per suite: tokens per forward and the forwards beyond the returned middle's tokens
    (p50, p95, worst, the share within tokens + 2: issue 34's work not delivered)."""
    out = {}
    for suite in sorted({r["suite"] for r in rows}):
        rs = [r for r in rows if r["suite"] == suite]
        extra = sorted(r["forwards"] - r["tokens"] for r in rs)
        forwards = sum(r["forwards"] for r in rs)
        out[suite] = {"tokens_per_forward": round(sum(r["tokens"] for r in rs) / forwards, 3) if forwards else 0.0,
                      "extra_p50": extra[len(extra) // 2], "extra_p95": extra[min(len(extra) - 1, int(len(extra) * 0.95))], "extra_worst": extra[-1],
                      "within_2": round(sum(e <= 2 for e in extra) / len(extra), 3)}
        drafted = shares(rs)["replayed_by_source"]
        if drafted:  # tokens the sampler committed in passes replayed from drafted canvases, by source
            out[suite]["drafted"] = {source: f"{v['tokens']} ({v['of_written']:.1%} of written)" for source, v in drafted.items()}
    return out


def _value(v) -> str:
    return json.dumps(v, ensure_ascii=False) if isinstance(v, str) else str(v)


def format_report(a_path, b_path, report: dict, show: int) -> str:
    lines = [f"A: {a_path} ({report['a_items']} items)", f"B: {b_path} ({report['b_items']} items)",
             f"items compared: {report['compared']}" + (f" (only in A: {report['only_in_a']}, only in B: {report['only_in_b']})" if report["only_in_a"] or report["only_in_b"] else "")]
    width = max(len(f) for f in HEADLINE_FIELDS)
    for name in HEADLINE_FIELDS:
        lines.append(f"  differ in {name + ':':<{width + 1}} {report['by_field'][name]}")
    others = {k: v for k, v in report["by_field"].items() if k not in HEADLINE_FIELDS and v}
    lines.append(f"  differ in any field: {len(report['differing'])}" + (" (also: " + ", ".join(f"{k} {v}" for k, v in others.items()) + ")" if others else ""))
    if report["differing_by_suite"]:
        lines.append("  differing items by suite: " + ", ".join(f"{s} {n}" for s, n in sorted(report["differing_by_suite"].items())))
    for name, (ca, cb) in report["tables"].items():
        keys = sorted(set(ca) | set(cb), key=lambda k: (-(ca[k] + cb[k]), k))
        kw = max([len(name)] + [len(k) for k in keys])
        lines += ["", f"{name:<{kw}}  {'A':>6}  {'B':>6}"]
        lines += [f"{k:<{kw}}  {ca[k]:>6}  {cb[k]:>6}" + ("" if ca[k] == cb[k] else f"  ({cb[k] - ca[k]:+d})") for k in keys]
    lines += ["", "work (forwards beyond the middle's tokens)  A | B"]
    for suite in sorted(set(report["work"][0]) | set(report["work"][1])):
        wa, wb = report["work"][0].get(suite, {}), report["work"][1].get(suite, {})
        fmt = lambda w: (f"tokens/forward {w['tokens_per_forward']}, extra p50 {w['extra_p50']} p95 {w['extra_p95']} worst {w['extra_worst']}, "  # noqa: E731
                         f"within +2 {w['within_2']:.1%}") if w else "-"
        lines.append(f"  {suite}: {fmt(wa)} | {fmt(wb)}")
        for side, w in (("A", wa), ("B", wb)):
            if w.get("drafted"):
                lines.append(f"    {side} drafted canvases' tokens: " + ", ".join(f"{k} {v}" for k, v in w["drafted"].items()))
    if report["differing"] and show > 0:
        lines += ["", f"first {min(show, len(report['differing']))} of {len(report['differing'])} differing items:"]
        for ra, rb, fields in report["differing"][:show]:
            lines.append(f"{ra['suite']} {ra['id']}")
            for f in fields:
                lines.append(f"  {f}: A {_value(ra.get(f))}")
                lines.append(f"  {' ' * len(f)}  B {_value(rb.get(f))}")
    return "\n".join(lines)


def cmd_compare(args) -> int:
    try:
        a, b = read_snapshot(args.a), read_snapshot(args.b)
    except SnapshotError as exc:
        print(f"snapshot compare: error: {exc}", file=sys.stderr)
        return 2
    print(format_report(args.a, args.b, compare_rows(a, b), args.show))
    return 0


# ---------------------------------------------------------------------------- command line


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.evaluation.snapshot", description="Record what the engine answers per item, and compare two recordings.")
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="run the engine on the suites and write one JSON line per item")
    rec.add_argument("--out", type=Path, required=True, help="the snapshot file (.jsonl)")
    rec.add_argument("--suite", choices=["dev", "humaneval", "all"], default="all")
    rec.add_argument("--limit", type=int, default=None, help="this many items per suite, spread over it (as lab eval --limit)")
    rec.add_argument("--model", type=Path, default=None, help="model directory (default: the embedded model)")
    rec.add_argument("--cold", action="store_true", help="forget the cached context before every item")
    rec.add_argument("--quiet", action="store_true", help="no progress on stderr")
    cmp_ = sub.add_parser("compare", help="compare two snapshot files (reports; exit 0 whatever differs)")
    cmp_.add_argument("a", type=Path)
    cmp_.add_argument("b", type=Path)
    cmp_.add_argument("--show", type=int, default=10, help="print the first N differing items (default 10)")
    args = parser.parse_args(argv)
    if args.command == "record":
        return cmd_record(args)
    return cmd_compare(args)


if __name__ == "__main__":
    sys.exit(main())
