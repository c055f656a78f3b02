"""Measures the commit check without a model: false vetoes on true canvases, caught corruptions.

A canvas made of the *true* middle's pieces with any positions masked can always be
repaired (the true text repairs it), so every veto on one is a false rejection. A canvas
with one wrong bracket spliced between committed pieces usually cannot, so the share of
those vetoed measures what the check catches. Run:

    python -m lab.syntax_bench.commit_eval [--limit N] [--seed S]
"""
from __future__ import annotations

import argparse
import random
import re
import statistics
import time
from dataclasses import dataclass, field
from typing import Optional, Sequence

from grammars.constraint import TreeSitterConstraint
from grammars.registry import get
from lab.syntax_bench.tasks import InfillTask, bench_tasks

# Roughly BPE-sized pieces: a word with its leading space, a run of spaces, one symbol.
_PIECE = re.compile(r" ?[A-Za-z_0-9]+|\n|[ \t]+|[^\sA-Za-z_0-9]")
CORRUPTIONS = (")", "]", "}", ":", "==")


def pieces_of(text: str) -> list[str]:
    pieces = _PIECE.findall(text)
    assert "".join(pieces) == text, "the piece pattern must cover every character"
    return pieces


def masked(pieces: Sequence[str], rate: float, rng: random.Random) -> list[Optional[str]]:
    return [None if rng.random() < rate else piece for piece in pieces]


@dataclass
class CommitEval:
    canvases: int = 0
    false_vetoes: int = 0
    corrupted: int = 0
    caught: int = 0
    ms: list[float] = field(default_factory=list)
    examples: list[str] = field(default_factory=list)

    def summary(self) -> str:
        ms = sorted(self.ms) or [0.0]
        return (
            f"true canvases {self.canvases}: false vetoes {self.false_vetoes} "
            f"({100 * self.false_vetoes / max(1, self.canvases):.2f}%); "
            f"corrupted canvases {self.corrupted}: vetoed {self.caught} "
            f"({100 * self.caught / max(1, self.corrupted):.1f}%); "
            f"allows() median {statistics.median(ms):.3f} ms, p95 {ms[int(0.95 * (len(ms) - 1))]:.3f} ms"
        )


def evaluate(tasks: Sequence[InfillTask], seed: int = 0, rates: Sequence[float] = (0.0, 0.3, 0.7)) -> CommitEval:
    rng = random.Random(seed)
    result = CommitEval()
    constraints: dict[str, TreeSitterConstraint] = {}
    for task in tasks:
        constraint = constraints.setdefault(task.language, TreeSitterConstraint(get(task.language)))
        truth = pieces_of(task.middle)
        for rate in rates:
            canvas = masked(truth, rate, rng)
            started = time.perf_counter()
            ok = constraint.allows(task.prefix, canvas, task.suffix)
            result.ms.append(1000 * (time.perf_counter() - started))
            result.canvases += 1
            if not ok:
                result.false_vetoes += 1
                if len(result.examples) < 5:
                    result.examples.append(f"{task.task_id} rate={rate} canvas={canvas!r}")
            # One corruption between two committed neighbours, none of them a hole.
            spots = [i for i in range(1, len(canvas)) if canvas[i - 1] is not None and canvas[i] is not None]
            if spots:
                spot = rng.choice(spots)
                bad = canvas[:spot] + [rng.choice(CORRUPTIONS)] + canvas[spot:]
                result.corrupted += 1
                result.caught += 0 if constraint.allows(task.prefix, bad, task.suffix) else 1
    return result


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.syntax_bench.commit_eval", description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=0, help="use only the first N tasks (0 = all)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    tasks = bench_tasks()
    if args.limit:
        tasks = tasks[: args.limit]
    result = evaluate(tasks, args.seed)
    print(result.summary())
    for example in result.examples:
        print("  false veto:", example)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
