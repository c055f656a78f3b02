"""What each tuning rule and constant of the request path is worth, measured one at a time.

    python -m lab.evaluation.prune --out prune.jsonl [--limit 300] [--only NAME ...] [--suites dev,humaneval,syntax] [--markdown prune.jsonl]

For every entry of `VARIANTS` (a constant set to the value that turns its rule off, or a
rule's function made a no-op), the engine answers the tuning items with that one change —
the dev lines (360) and HumanEval's single-line tasks (`--limit` of them, spread; the
tuning sets, never the kept-aside ones) — and the run is compared item by item with the
same items answered by the unchanged engine (`--suites syntax`: the unseen syntax
benchmark's tune part, `--syntax-limit` multi-line holes per language of Python,
JavaScript and TypeScript, where the polish steps act): items whose middle changes, exact matches
gained and lost (against the item's reference line), empty answers and forward passes. A
rule that moves 0-2 items earns no place on the request path.

One engine in one process: each variant patches the named attributes in every loaded
module of engine/ and grammars/ that holds them (a constant imported by name is patched
where it was imported too), forgets the cached context, answers the items, and is undone.
Each variant's figures are appended to `--out` as one JSON line as soon as they are
measured; a rerun skips the variants already there (resumable after any stop).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

from lab.evaluation.items import exact_match
from lab.evaluation.snapshot import suite_items
from lab.progress import report_progress


@dataclass(frozen=True)
class Variant:
    name: str  # what is turned off
    patches: tuple[tuple[str, Any], ...]  # (attribute name, value) set in every engine/grammars module holding it; "module:name" in that module only; "module:Class.name" on that class
    rule: str  # what the rule does, in a few words


def _none(*_args: Any, **_kwargs: Any) -> None:
    return None


def _same_middle(prefix: str, middle: str, suffix: str) -> str:
    return middle


VARIANTS: tuple[Variant, ...] = (
    Variant("CLOSE_ON_VETO=False", (("CLOSE_ON_VETO", False),), "close a candidate where the constraint refuses every token searched"),
    Variant("WASTE_BOUND=inf", (("WASTE_BOUND", 10**6),), "the work bound: at most 12 forwards beyond the tokens returned"),
    Variant("LAST_RESORT_PASSES=inf", (("LAST_RESORT_PASSES", 10**6),), "the last resort's own passes capped at 1"),
    Variant("REPLAY_BYTES=0", (("REPLAY_BYTES", 0),), "a later candidate replays an earlier one's passes"),
    Variant("MAX_WORD_CUTS=inf", (("MAX_WORD_CUTS", 0),), "mid-line cuts tried at only the first line's last 16 word ends (0 slices all of them)"),
    Variant("no word cuts", (("engine.answer:word_ends", lambda text: []),), "the final check tries cuts at the first line's word ends"),
    Variant("no line so far", (("engine.answer:Answers.line_so_far", lambda self, text: None),), "the work bound's best may be a line still being written, cut after a word"),
    Variant("FALLBACK_TOKENS=0", (("FALLBACK_TOKENS", 0),), "next-best tokens tried for a vetoed commit"),
    Variant("SEARCH_TOKENS=1", (("SEARCH_TOKENS", 1),), "tokens searched per position when a whole pass is vetoed"),
    Variant("FORCED_BEFORE_CLOSING=0", (("FORCED_BEFORE_CLOSING", 0),), "refused tokens forced before a close on veto"),
    Variant("ENDING_TOKENS=4", (("ENDING_TOKENS", 4),), "tokens the `valid` end rule tries as a middle's last"),
    Variant("HEALED_WORD_TOKENS=0", (("HEALED_WORD_TOKENS", 0),), "a word's last tokens healed at the cursor"),
    Variant("COPY_SUFFIX_CHARS=0", (("COPY_SUFFIX_CHARS", 0),), "the copy rule also looks in the suffix"),
    Variant("MIN_SEEN=1", (("MIN_SEEN", 1),), "a copy majority needs a run seen twice"),
    Variant("MIN_SHARE=0.5", (("MIN_SHARE", 0.5),), "a copy majority needs a 70% share"),
    Variant("MAX_TRIM_TRIES=0", (("MAX_TRIM_TRIES", 0),), "polish trims a middle's tail to pass the check"),
    Variant("no header candidate", (("engine.draft_sources:HEADER_WORDS", {}),), "a block header's keyword seeds a candidate where the line must open a block"),
    Variant("no degenerate check", (("degenerate", _none),), "a middle that repeats itself is answered empty"),
    Variant("no seams", (("tidy_middle", _same_middle),), "no doubled newline, no ghost () after a closer"),
    Variant("polish: no drop_loop", (("grammars.polish:drop_loop", lambda *a: a[-1]),), "polish drops a middle's repeated block of lines"),
    Variant("polish: no fix_indentation", (("grammars.polish:fix_indentation", lambda *a: a[-1]),), "polish re-indents a middle's lines to the block"),
    Variant("polish: no drop_repeated_suffix", (("grammars.polish:drop_repeated_suffix", lambda *a: a[-1]),), "polish drops a middle's tail that the suffix repeats"),
    Variant("polish: no dedupe_closers", (("grammars.polish:dedupe_closers", lambda *a: a[-1]),), "polish drops closers the suffix already has"),
    Variant("polish: no close_header", (("grammars.polish:close_header", lambda *a: a[-1]),), "polish completes a block header's colon or brace"),
    Variant("LOOKAHEAD off", (("MODEL_GUESSES", 0), ("CHAIN", 0)), "drafted canvases ride in each forward (forwards only)"),
)


def _modules() -> list[Any]:
    return [m for name, m in sorted(sys.modules.items()) if m is not None and name.split(".")[0] in ("engine", "grammars")]


class Patched:
    """Set each (name, value) in every loaded engine/grammars module that has the name; undo on exit."""

    def __init__(self, patches: tuple[tuple[str, Any], ...]) -> None:
        self.patches = patches
        self.undo: list[tuple[Any, str, Any]] = []

    def __enter__(self) -> "Patched":
        for target, value in self.patches:
            where, _, name = target.rpartition(":")
            if "." in name:  # a class attribute: "module:Class.name"
                owner_name, name = name.split(".", 1)
                owner = getattr(sys.modules[where], owner_name)
                self.undo.append((owner, name, vars(owner)[name]))
                setattr(owner, name, value)
                continue
            holders = [m for m in _modules() if name in vars(m) and (not where or m.__name__ == where) and not isinstance(vars(m)[name], type(sys))]
            if not holders:
                raise SystemExit(f"prune: no engine or grammars module holds {target!r}")
            for module in holders:
                self.undo.append((module, name, vars(module)[name]))
                setattr(module, name, value)
        return self

    def __exit__(self, *exc: Any) -> None:
        for module, name, value in reversed(self.undo):
            setattr(module, name, value)


def answers(eng: Any, items: list[dict]) -> Iterator[dict]:
    eng.forget_context()
    for item in items:
        result = eng.infill(item["prefix"], item["suffix"], language=item["language"])
        yield {"middle": result.middle, "forwards": result.forwards, "tokens": result.tokens}


def compare(base: list[dict], new: list[dict], items: list[dict]) -> dict:
    exact = lambda rows: [exact_match(r["middle"], it["reference"]) for r, it in zip(rows, items)]
    eb, en = exact(base), exact(new)
    return {
        "changed": sum(a["middle"] != b["middle"] for a, b in zip(base, new)),
        "exact_base": sum(eb), "exact": sum(en),
        "gained": sum(n and not b for b, n in zip(eb, en)), "lost": sum(b and not n for b, n in zip(eb, en)),
        "empty_base": sum(not r["middle"].strip() for r in base), "empty": sum(not r["middle"].strip() for r in new),
        "forwards_base": sum(r["forwards"] for r in base), "forwards": sum(r["forwards"] for r in new),
    }


def tuning_items(limit: Optional[int], suites: tuple[str, ...] = ("dev", "humaneval"), syntax_limit: int = 40) -> dict[str, list[dict]]:
    """The tuning items with their reference lines: the dev lines, HumanEval's single-line
    tasks (`limit` of them), and the syntax benchmark's tune holes (`syntax_limit` a language)."""
    out: dict[str, list[dict]] = {}
    if "dev" in suites:
        from lab.evaluation.items import DEV_FILE, load_items

        out["dev"] = [{"prefix": it["prefix"], "suffix": it["suffix"], "language": it["language"], "reference": it["middle"]} for it in load_items(path=DEV_FILE)]
    if "humaneval" in suites:
        from lab.evaluation.humaneval import single_line_tasks

        tasks = {f"{t.task_id}#{t.line_index}": t.middle for t in single_line_tasks()}
        out["humaneval"] = [{**it, "reference": tasks[it["id"]]} for it in suite_items("humaneval", limit)]
    if "syntax" in suites:
        from lab.syntax_bench.unseen_tasks import materialize, select

        out["syntax"] = [{"prefix": t.prefix, "suffix": t.suffix, "language": t.language, "reference": t.middle}
                         for language in ("python", "javascript", "typescript") for t in map(materialize, select("tune", language, syntax_limit))]
    return out


def run(out: Path, limit: Optional[int], only: list[str], log: Callable[[str], None], suites: tuple[str, ...] = ("dev", "humaneval"), syntax_limit: int = 40) -> None:
    import engine

    done = {json.loads(line)["variant"] for line in out.read_text().splitlines() if line.strip()} if out.exists() else set()
    todo = [v for v in VARIANTS if (not only or v.name in only) and v.name not in done]
    if not todo:
        log("prune: every variant is measured already")
        return
    eng = engine.load()
    items_of = tuning_items(limit, suites, syntax_limit)
    base = {name: list(answers(eng, items)) for name, items in items_of.items()}
    for i, variant in enumerate(todo, 1):
        start = time.time()
        with Patched(variant.patches):
            figures = {name: compare(base[name], list(answers(eng, items)), items) for name, items in items_of.items()}
        row = {"variant": variant.name, "rule": variant.rule, **figures, "seconds": round(time.time() - start, 1)}
        with open(out, "a") as fh:
            fh.write(json.dumps(row) + "\n")
        report_progress("prune", i, len(todo))


def markdown(path: Path) -> str:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    suites = [s for s in ("dev", "humaneval", "syntax") if any(s in r for r in rows)]
    out = ["| turned off | rule | " + " | ".join(f"{s}: changed, exact +/-, empty, forwards" for s in suites) + " |", "| --- | --- |" + " --- |" * len(suites)]
    for r in rows:
        cells = []
        for suite in suites:
            f = r.get(suite)
            cells.append(f"{f['changed']}, +{f['gained']}/-{f['lost']}, {f['empty_base']}->{f['empty']}, {f['forwards_base']}->{f['forwards']}" if f else "")
        out.append(f"| `{r['variant']}` | {r['rule']} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.evaluation.prune", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="figures, one JSON line per variant (appended; measured variants are skipped)")
    parser.add_argument("--limit", type=int, default=300, help="HumanEval single-line tasks, spread (default 300)")
    parser.add_argument("--only", action="append", default=[], help="only this variant (repeatable)")
    parser.add_argument("--markdown", type=Path, help="print the figures of this file as a table and exit")
    parser.add_argument("--suites", default="dev,humaneval", help="item sets, of dev, humaneval, syntax (default dev,humaneval)")
    parser.add_argument("--syntax-limit", type=int, default=40, help="syntax benchmark tune holes per language (default 40)")
    args = parser.parse_args(argv)
    if args.markdown:
        print(markdown(args.markdown))
        return 0
    if args.out is None:
        parser.error("--out is required")
    unknown = [name for name in args.only if name not in {v.name for v in VARIANTS}]
    if unknown:
        parser.error(f"unknown variant(s): {', '.join(unknown)}")
    suites = tuple(name.strip() for name in args.suites.split(",") if name.strip())
    if not suites or any(name not in ("dev", "humaneval", "syntax") for name in suites):
        parser.error("--suites: a comma-separated subset of dev, humaneval, syntax")
    run(args.out, args.limit, args.only, lambda m: print(m, file=sys.stderr), suites, args.syntax_limit)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
