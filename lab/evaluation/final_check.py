"""The final syntax check without a model: true middles it refuses, broken ones it accepts.

    python -m lab.evaluation.final_check --items dev [--limit N] [--out rows.json]

For every line item (lab/evaluation/items.py) the check (`accept_final`, as the engine
asks it: the whole prefix and suffix) judges the true middle, which it should accept,
and the true middle with a stray closer or operator spliced in before its line end
(`)`, `]`, `}`, `:`, `==`), which it should refuse (a few can be valid code: compare two
runs' lists rather than reading the count as errors). Prints both counts and the items;
tune on `--items dev`, report on `--items heldout`.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from lab.evaluation.items import BENCH_FILE, DEV_FILE, load_items

CORRUPTIONS = (")", "]", "}", ":", "==")


def broken(middle: str, junk: str) -> str:
    """The middle with `junk` before its trailing newline (or at its end)."""
    body = middle.rstrip("\n")
    return body + junk + middle[len(body):]


def main(argv: list[str] | None = None) -> int:
    import engine.api

    p = argparse.ArgumentParser(prog="python -m lab.evaluation.final_check", description=__doc__.splitlines()[0])
    p.add_argument("--items", choices=["dev", "heldout"], default="dev")
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--out", type=Path, default=None, help="write the refused and accepted items (JSON) here")
    args = p.parse_args(argv)
    items = load_items(args.limit, DEV_FILE if args.items == "dev" else BENCH_FILE)
    refused, accepted, judged = [], [], 0
    for index, item in enumerate(items):
        constraint = engine.api.constraint_for(item.get("language") or "python")
        if constraint is None:
            continue
        judged += 1
        if not constraint.accept_final(item["prefix"], item["middle"], item["suffix"]):
            refused.append(index)
        for junk in CORRUPTIONS:
            if constraint.accept_final(item["prefix"], broken(item["middle"], junk), item["suffix"]):
                accepted.append([index, junk])
    report = {"set": args.items, "items": judged, "true_refused": len(refused), "broken_tried": judged * len(CORRUPTIONS),
              "broken_accepted": len(accepted)}
    print(json.dumps(report))
    if args.out:
        args.out.write_text(json.dumps({**report, "refused": refused, "accepted": accepted}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
