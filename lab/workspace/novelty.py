"""Where the right answers come from: real lines the workspace already holds, or new ones.

    python -m lab.workspace.real_lines --set tune --n 100 --workspace --dump answers.jsonl
    python -m lab.workspace.novelty --answers answers.jsonl [--set tune|aside] [--n 100]

For each real line of the packages (lab/workspace/lines.py: the same seeded lines as
real_lines.py, the package with every sampled line blanked as the workspace), count how
often the line (stripped) stands elsewhere in what the workspace index holds: the files
`WorkspaceIndex` indexes in that blanked copy, so exactly the text a request's drafts and
the copy rule's workspace table can draw on. Joined with the answers real_lines.py dumped
(`--dump`), it prints, per package and in all, exact / wrong / empty answers for
lines the workspace holds and for lines it does not: how much of the exact match is
retrieval of an existing line, and how much headroom retrieval has left (lines held but
answered wrongly). The kept-aside set is for reporting only: never tune on it.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Iterable

from lab.workspace.lines import ASIDE, TUNE, Item, items

OUTCOMES = ("exact", "wrong", "empty")


def outcome(reference: str, middle: str) -> str:
    """How real_lines.py scores an answer: the middle's first line, stripped, against the line."""
    first = middle.split("\n")[0].strip() if middle.strip() else ""
    return "empty" if not first else "exact" if first == reference.strip() else "wrong"


def held_lines(files: Iterable[Path]) -> Counter:
    """Stripped non-blank lines of the given files, counted."""
    counts: Counter = Counter()
    for path in files:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        counts.update(line.strip() for line in text.split("\n") if line.strip())
    return counts


def tabulate(lines: list[Item], answers: dict[str, str], held: dict[str, Counter]) -> dict[str, Counter]:
    """Per package (and "all"): Counter of (held elsewhere?, outcome). Lines without an
    answer in `answers` are counted as ("missing", ...) so a mismatched dump shows."""
    table: dict[str, Counter] = {}
    for item in lines:
        if item.id not in answers:
            key: tuple = ("missing",)
        else:
            key = (held[item.workspace][item.reference.strip()] > 0, outcome(item.reference, answers[item.id]))
        for name in (item.package, "all"):
            table.setdefault(name, Counter())[key] += 1
    return table


def render(table: dict[str, Counter]) -> str:
    rows = ["package         | held elsewhere: exact / wrong / empty | not held: exact / wrong / empty | missing"]
    for name in [n for n in table if n != "all"] + ["all"]:
        c = table[name]
        held = " / ".join(str(c[(True, o)]) for o in OUTCOMES)
        new = " / ".join(str(c[(False, o)]) for o in OUTCOMES)
        rows.append(f"{name:<15} | {held:>37} | {new:>31} | {c[('missing',)]}")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.workspace.novelty", description=__doc__.split("\n\n")[0])
    parser.add_argument("--answers", type=Path, required=True, help="real_lines.py's --dump file (run with --workspace)")
    parser.add_argument("--set", choices=("tune", "aside"), default="tune", help="the packages the dump is of (aside: report only)")
    parser.add_argument("--n", type=int, default=100, help="lines per package (as real_lines.py --n)")
    args = parser.parse_args(argv)
    try:
        answers = {row["id"]: row.get("middle") or "" for row in map(json.loads, args.answers.read_text().splitlines()) if row.get("id")}
    except (OSError, ValueError, AttributeError) as error:
        print(f"novelty: cannot read {args.answers}: {error}", file=sys.stderr)
        return 2
    from engine.workspace import WorkspaceIndex

    with tempfile.TemporaryDirectory() as tmp:
        lines = items(list(TUNE if args.set == "tune" else ASIDE), args.n, Path(tmp) / "workspaces")
        held: dict[str, Counter] = {}
        for workspace in dict.fromkeys(item.workspace for item in lines):
            index = WorkspaceIndex(workspace, cache_dir=Path(tmp) / "cache")
            try:
                index.refresh()
                held[workspace] = held_lines(path for path, _ in index.files())
            finally:
                index.close()
        table = tabulate(lines, answers, held)
    print(render(table))
    if table["all"][("missing",)] == len(lines):
        print("novelty: no line of the dump matches these packages' items (another --set or --n?)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
