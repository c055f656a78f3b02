"""Where committed tokens came from: each draft source's share.

    python -m lab.evaluation.drafted ANSWERS.jsonl [ANSWERS.jsonl ...] [--json]

ANSWERS are JSON lines with an engine result's figures: the output of `infill batch`, or
a snapshot (`python -m lab.evaluation.snapshot record`, grouped by its "suite"). To get
them for real lines of a package (`python -m lab.workspace.real_lines`, whose --dump keeps
only the middle), give real_lines a command that copies infill batch's output on its way:

    printf '#!/bin/sh\\n.venv/bin/infill "$@" | tee -a answers.jsonl\\n' > tee-infill
    chmod +x tee-infill
    python -m lab.workspace.real_lines --set aside --workspace --infill ./tee-infill
    python -m lab.evaluation.drafted answers.jsonl

Two ways a drafted token is committed without a forward of its own:

- **replayed passes** (engine/lookahead.py): a drafted canvas computed beside a pass was
  the canvas the sampler asked for next; the tokens that pass committed count for the
  draft's source (`copy`, `workspace`, `model`; result.lookahead). Their share is of
  `written` (every token the sampler wrote, all candidates), as the snapshot reports it.
- **whole-line drafts verified in the first pass** (engine/drafts.py; result.draft): the
  answer is a workspace line the model agreed with. Their share is of the tokens returned.

The rest was committed by passes the request computed for its own canvas.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Iterable, Iterator, Optional


def shares(rows: Iterable[dict]) -> dict:
    """The figures of one group of answers (see the module's docstring)."""
    rows = list(rows)
    written = sum(r.get("written") or 0 for r in rows)
    returned = sum(r.get("tokens") or 0 for r in rows)
    forwards = sum(r.get("forwards") or 0 for r in rows)
    replayed: Counter = Counter()
    for r in rows:
        replayed.update(r.get("lookahead") or {})
    whole_line: Counter = Counter()
    whole_line_answers: Counter = Counter()
    for r in rows:
        if r.get("draft"):
            whole_line[r["draft"]] += r.get("tokens") or 0
            whole_line_answers[r["draft"]] += 1
    return {
        "answers": len(rows),
        "tokens_returned": returned,
        "forwards": forwards,
        "tokens_per_forward": round(returned / forwards, 3) if forwards else 0.0,
        "written": written,
        "replayed_passes": sum(r.get("lookahead_passes") or 0 for r in rows),
        "replayed_by_source": {s: {"tokens": n, "of_written": round(n / written, 3) if written else 0.0} for s, n in sorted(replayed.items())},
        "replayed_of_written": round(sum(replayed.values()) / written, 3) if written else 0.0,
        "whole_line_by_source": {s: {"answers": whole_line_answers[s], "tokens": n, "of_returned": round(n / returned, 3) if returned else 0.0}
                                 for s, n in sorted(whole_line.items())},
    }


def json_lines(path: Path) -> Iterator[tuple[int, dict]]:
    """(line number, object) for each non-blank line of a JSONL file; ValueError naming the
    file and line where one is not a JSON object (the snapshot reader uses this too)."""
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{number}: not a JSON line ({exc.msg})") from None
        if not isinstance(row, dict):
            raise ValueError(f"{path}:{number}: not a JSON object")
        yield number, row


def read_rows(paths: list[Path]) -> dict[str, list[dict]]:
    """Rows by group: the file's name, and a snapshot's suite (the suite alone when one
    file is read). A line that is not a JSON object is a ValueError naming its file and line."""
    groups: dict[str, list[dict]] = {}
    for path in paths:
        for _, row in json_lines(path):
            if row.get("error"):
                continue  # infill batch's line for a request it refused: no figures
            suite = row.get("suite")
            name = path.name if not suite else str(suite) if len(paths) == 1 else f"{path.name} {suite}"
            groups.setdefault(name, []).append(row)
    return groups


def format_text(name: str, s: dict) -> str:
    lines = [f"{name}: {s['answers']} answers, {s['tokens_returned']} tokens returned in {s['forwards']} forwards "
             f"({s['tokens_per_forward']} per forward), {s['written']} written"]
    lines.append(f"  replayed passes: {s['replayed_passes']}, committing {s['replayed_of_written']:.1%} of written")
    for source, v in s["replayed_by_source"].items():
        lines.append(f"    {source:<10} {v['tokens']:>6} tokens  {v['of_written']:.1%} of written")
    for source, v in s["whole_line_by_source"].items():
        lines.append(f"  whole-line drafts ({source}): {v['answers']} answers, {v['tokens']} tokens, {v['of_returned']:.1%} of returned")
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.evaluation.drafted", description=__doc__.split("\n\n")[0])
    parser.add_argument("answers", nargs="+", type=Path, help="infill batch output or snapshot JSONL")
    parser.add_argument("--json", action="store_true", help="print one JSON object: group -> figures")
    args = parser.parse_args(argv)
    try:
        groups = read_rows(args.answers)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        print(f"lab.evaluation.drafted: {exc}", file=sys.stderr)
        return 2
    figures = {name: shares(rows) for name, rows in groups.items()}
    if args.json:
        print(json.dumps(figures))
    else:
        print("\n".join(format_text(name, s) for name, s in figures.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
