"""Do the answers shown on real lines compile in the real file? Each non-empty middle of a
real-lines dump (`python -m lab.workspace.real_lines ... --dump F`) is spliced into
the package's original, unbroken file at its line (after the line's indentation, as the
request's cursor was) and the file goes to the language's compiler (CPython `compile()`,
`node --check`: lab/evaluation/compiler_check.py). The benchmark's buffers have their
other sampled lines blanked, so the final syntax check judges each middle in a broken
file; this says how often what it let through breaks the file the user really has.

    python -m lab.workspace.compiled DUMP.jsonl [DUMP.jsonl ...] [--show N]

Prints, per dump and package, the middles shown and how many the compiler rejects.
"""
from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Optional

from lab.evaluation.compiler_check import compiler_error, is_module
from lab.workspace.lines import PACKAGES, source_dir


def spliced(original: str, line: int, middle: str) -> str:
    """`original` with its `line` (0-based) replaced by its indentation + `middle`."""
    lines = original.split("\n")
    indentation = lines[line][: len(lines[line]) - len(lines[line].lstrip())]
    return "\n".join(lines[:line] + [indentation + middle.rstrip("\n")] + lines[line + 1 :])


def judge_dump(path: Path) -> tuple[Counter, Counter, list[tuple[str, str, str]]]:
    """(shown per package, rejected per package, [(id, middle, compiler message)])."""
    shown: Counter = Counter()
    rejected: Counter = Counter()
    found: list[tuple[str, str, str]] = []
    for row in map(json.loads, path.read_text().splitlines()):
        middle = row.get("middle") or ""
        if not middle.strip():
            continue
        name, relative, number = row["id"].rsplit(":", 2)
        language = PACKAGES[name].language
        text = spliced((source_dir(name) / relative).read_text(errors="replace"), int(number) - 1, middle)
        shown[name] += 1
        error = compiler_error(language, text, is_module(language, text))
        if error is not None:
            rejected[name] += 1
            found.append((row["id"], middle, error))
    return shown, rejected, found


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.workspace.compiled", description=__doc__.split("\n\n")[0])
    parser.add_argument("dumps", nargs="+", type=Path, help="--dump files of python -m lab.workspace.real_lines")
    parser.add_argument("--show", type=int, default=0, help="list this many rejected middles per dump")
    args = parser.parse_args(argv)
    for path in args.dumps:
        shown, rejected, found = judge_dump(path)
        per = ", ".join(f"{name} {rejected[name]}/{shown[name]}" for name in sorted(shown))
        print(f"{path}: {sum(rejected.values())} of {sum(shown.values())} shown middles rejected by the compiler ({per})")
        for item_id, middle, error in found[: args.show]:
            print(f"  {item_id}: {middle.strip()[:60]!r}: {error[:100]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
