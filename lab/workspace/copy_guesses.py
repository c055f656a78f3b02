"""How often the copy rule's guess is the real line's next token, teacher-forced.

    python -m lab.workspace.copy_guesses [--set tune|aside] [--n 100]

For each real line of the packages (lab/workspace/lines.py: the tuning set, or the one kept
aside, which is for reporting only), the cursor after its indentation and the workspace the
package's source with every sampled line blanked: walk the line's tokens, and at each one
ask the copy rule (engine/copying.py CopyIndex) what follows the text so far, the way
rule 6 asks at the first masked position. Three rules over the same tokens:

* `latest`: the token after the run's latest occurrence in the prefix (or the suffix);
* `own majority`: a run whose continuations in the prefix and suffix agree first
  (NgramTable), then `latest`;
* `workspace majority`: the workspace's table first (engine/workspace/ngrams.py), then
  `own majority`.

Prints guesses right and wrong per rule (a wrong guess is mixed in with weight
`copy_weight` as a right one is). docs/workspace.md has the figures.
"""
from __future__ import annotations

import argparse
import tempfile
from collections import Counter
from pathlib import Path

from engine.job import COPY_SUFFIX_CHARS
from engine.context_window import prefix_tail
from engine.copying import CopyIndex
from engine.workspace import WorkspaceContext, WorkspaceIndex
from lab.workspace.lines import ASIDE, TUNE, items

RULES = ("latest", "own majority", "workspace majority")


def score(n: int, names: list[str]) -> Counter:
    import engine

    tok = engine.load().tokenizer
    counts: Counter = Counter()
    with tempfile.TemporaryDirectory() as tmp:
        contexts: dict[str, WorkspaceContext] = {}
        for item in items(names, n, Path(tmp) / "workspaces"):
            if item.workspace not in contexts:
                index = WorkspaceIndex(item.workspace, cache_dir=Path(tmp) / "cache")
                index.refresh()
                contexts[item.workspace] = WorkspaceContext(index, wait_for_tables=True)
            table = contexts[item.workspace].ngrams(tok)
            prefix_ids = tok.encode(prefix_tail(item.prefix, 2048))[-2048:]
            suffix_ids = tok.encode(item.suffix[:COPY_SUFFIX_CHARS])
            latest = CopyIndex(prefix_ids, tok.special_ids, suffix_ids)
            latest.tables = []
            rules = {"latest": latest, "own majority": CopyIndex(prefix_ids, tok.special_ids, suffix_ids),
                     "workspace majority": CopyIndex(prefix_ids, tok.special_ids, suffix_ids, workspace=table)}
            # the line's tokens as the prefix and the line tokenize together (the indentation may merge)
            whole, alone = tok.encode(item.prefix + item.reference), tok.encode(item.prefix)
            shared = next((i for i, (a, b) in enumerate(zip(whole, alone)) if a != b), min(len(whole), len(alone)))
            left = whole[:shared]
            for token in whole[shared:]:
                counts["tokens"] += 1
                for name, index in rules.items():
                    guess = index.guess(left[-4:])
                    counts[name, "right"] += guess == token
                    counts[name, "wrong"] += guess is not None and guess != token
                left.append(token)
        for context in contexts.values():
            assert context.index is not None
            context.index.close()
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.workspace.copy_guesses", description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", choices=("tune", "aside"), default="tune", help="the tuning packages, or those kept aside (report only)")
    parser.add_argument("--n", type=int, default=100, help="lines per package")
    args = parser.parse_args()
    counts = score(args.n, list(TUNE if args.set == "tune" else ASIDE))
    print(f"{counts['tokens']} tokens of real lines ({args.set} packages, {args.n} lines each)")
    print(f"{'rule':<20} {'right':>7} {'wrong':>7} {'right share of guesses':>24}")
    for rule in RULES:
        right, wrong = counts[rule, "right"], counts[rule, "wrong"]
        print(f"{rule:<20} {right:>7} {wrong:>7} {right / max(right + wrong, 1):>24.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
