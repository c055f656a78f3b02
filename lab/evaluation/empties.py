"""Where constrained answers become empty (docs/ladder.md, "Empty answers under the constraint").

    python -m lab.evaluation.empties --limit 100 [--cursor indent] [--set dev] [--out rows.json]

For each item (tune on `--set dev`; HumanEval lines for reporting), the engine's middle
unconstrained and constrained (the default), the cursor as in lab/evaluation/ladder.py.
Every item whose unconstrained middle is non-empty and whose constrained middle is empty
is put in one class, judged with the same final check the engine uses (accepted_cut):

* `broken`: no non-empty form of the unconstrained middle passes the final check (not
  whole, not cut): the model's own text is broken, an empty answer may be right;
* `cut`: the unconstrained middle fails whole but one of its cuts passes (a line that
  runs on past its statement): the constrained run lost a valid part;
* `false_veto`: the unconstrained middle passes whole, and the constrained run's commits
  were vetoed on the way (the constraint refused text the final check accepts);
* `schedule`: it passes whole, nothing was vetoed, yet the candidates ended empty.

Prints the counts, and the constrained runs' stop reasons per class.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Optional

from lab.evaluation.ladder import at_cursor, load_set

CLASSES = ("broken", "cut", "false_veto", "schedule")


def classify(constraint, prefix: str, suffix: str, free: str, vetoed: int) -> str:
    """The class of an item whose unconstrained middle `free` is non-empty and whose
    constrained answer is empty (`vetoed`: the constrained run's vetoed commits)."""
    from engine.answer import accepted_cut

    polished = constraint.polish(prefix, free, suffix)
    if constraint.accept_final(prefix, polished, suffix):
        return "false_veto" if vetoed else "schedule"
    return "cut" if accepted_cut(constraint, prefix, free, suffix) is not None else "broken"


def main(argv: Optional[list[str]] = None) -> int:
    import engine

    p = argparse.ArgumentParser(prog="python -m lab.evaluation.empties", description=__doc__.splitlines()[0])
    p.add_argument("--set", choices=["dev", "humaneval"], default="dev")
    p.add_argument("--limit", type=int, default=100)
    p.add_argument("--cursor", choices=["indent", "line_start"], default="indent")
    p.add_argument("--model", type=Path, default=None)
    p.add_argument("--out", type=Path, default=None, help="write the per-item rows (JSON) here")
    args = p.parse_args(argv)
    eng = engine.load(args.model)
    items = [at_cursor(it, args.cursor) for it in load_set(args.set, args.limit)]
    rows, classes, stops = [], Counter(), Counter()
    empty_free = empty_constrained = 0
    for i, item in enumerate(items):
        free = eng.infill(item.prefix, item.suffix, language=item.language, constrained=False)
        held = eng.infill(item.prefix, item.suffix, language=item.language)
        empty_free += not free.middle.strip()
        empty_constrained += not held.middle.strip()
        row = {"index": i, "language": item.language, "expected": item.middle, "free": free.middle, "constrained": held.middle,
               "stop": held.stop_reason, "vetoed": held.vetoed, "candidates": held.candidates_tried, "forwards": held.forwards}
        if free.middle.strip() and not held.middle.strip():
            constraint = engine.api.constraint_for(item.language)
            row["class"] = classify(constraint, item.prefix, item.suffix, free.middle, held.vetoed)
            classes[row["class"]] += 1
            stops[(row["class"], held.stop_reason)] += 1
            print(json.dumps(row), file=sys.stderr, flush=True)
        rows.append(row)
    summary = {"set": args.set, "items": len(items), "cursor": args.cursor, "empty_unconstrained": empty_free, "empty_constrained": empty_constrained,
               "classes": {c: classes[c] for c in CLASSES}, "stops": {f"{c}/{s}": n for (c, s), n in sorted(stops.items())}}
    if args.out:
        args.out.write_text(json.dumps({"summary": summary, "rows": rows}, indent=1) + "\n")
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
