"""`python -m lab COMMAND ...`: the lab's commands, run from a source checkout.

The lab (training, evaluation, benchmarks) is not part of the installed package, and the
`infill` command imports none of it: `python -m lab train` and the like only point here.

    python -m lab corpus ...      build the training corpus from pinned sources
    python -m lab tokenizer ...   train the BPE tokenizer on the corpus
    python -m lab train ...       train or resume the embedded model
    python -m lab eval ...        HumanEval single-line infilling, held-out exact match
    python -m lab bench ...       speed and exact match vs the reference sampler
                                  (--syntax, --concurrency: the other benchmarks)

User mistakes print one line on stderr and exit 2, as `infill` does.
"""
from __future__ import annotations

import importlib
import sys
from typing import Optional

# name -> (module whose main(argv) runs it, help)
COMMANDS: dict[str, tuple[str, str]] = {
    "corpus": ("lab.training.corpus", "build the training corpus from pinned sources"),
    "tokenizer": ("lab.training.tokenizer_train", "train the BPE tokenizer on the corpus"),
    "train": ("lab.training.train", "train or resume the embedded model"),
    "eval": ("lab.evaluation.run", "evaluate a model: HumanEval single-line infilling, held-out exact match"),
    "bench": ("lab.evaluation.bench", "speed and exact match vs the reference (LLaDA-style) sampler; --syntax, --concurrency"),
}


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = [f"  {name:<{width}}  {help_text}" for name, (_, help_text) in COMMANDS.items()]
    return "usage: python -m lab COMMAND [ARGS...]\n\ncommands:\n" + "\n".join(lines) + "\n"


def main(argv: Optional[list[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        (sys.stdout if argv else sys.stderr).write(usage())
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command not in COMMANDS:
        print(f"python -m lab: unknown command {command!r} (one of: {', '.join(COMMANDS)})", file=sys.stderr)
        return 2
    from engine.types import InfillError

    try:
        return int(importlib.import_module(COMMANDS[command][0]).main(rest) or 0)
    except InfillError as exc:
        print(f"python -m lab {command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
