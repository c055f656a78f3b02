"""What users get on their own code: real lines of packages outside the corpus, scored.

    python -m lab.workspace.real_lines --set aside --workspace      # the README's figure
    python -m lab.workspace.real_lines --set tune --workspace --n 50 # tuning packages only
    python -m lab.workspace.real_lines --set aside                   # no workspace index
    python -m lab.workspace.real_lines --set tune --workspace --n 20 --write-batch DIR  # infill batch's input, to time it

Seeded non-trivial lines of the pinned packages in lab/workspace/lines.py (TUNE for tuning,
ASIDE only for reporting); the cursor goes after the line's indentation and the rest of the
line is the middle to write. With --workspace each package gets one copy of its source tree
with every sampled line blanked, passed as the request's workspace (and the request's own
prefix and suffix come from that copy, so no request holds another item's answer); without
it the request sees the original file. One `infill batch` run answers every item; the score
is exact match of the answer's first line (stripped), empty answers and tokens per forward,
per package and overall, beside a model-free baseline: the line that most often follows the
same previous line elsewhere in the blanked workspace.

Prints one JSON object last (the same fields as the tool it replaces, so figures compare);
--dump F writes each item's reference and answer as JSONL for lab/workspace/novelty.py and
lab/workspace/compiled.py. The packages come from PyPI and npm once, into
$REAL_LINES_CACHE (default /tmp/real-lines-cache).
"""
from __future__ import annotations

import argparse
import collections
import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable, Optional

from lab.workspace.lines import ASIDE, CHECK, PACKAGES, TUNE, Item, items

SOURCE_SUFFIXES = (".py", ".js", ".mjs", ".cjs")
SETS = {"tune": TUNE, "aside": ASIDE, "check": CHECK, "all": {**TUNE, **ASIDE}}


@dataclass
class PackageScore:
    n: int = 0
    exact: int = 0
    empty: int = 0
    prev_line_baseline: Optional[int] = None


def first_line(middle: str) -> str:
    """The answer as scored: its first line, stripped ('' for an empty answer)."""
    return middle.split("\n")[0].strip() if middle.strip() else ""


def previous_line_baseline(workspace: Path, picks: list[tuple[Path, int]], references: list[str]) -> int:
    """Model-free: how many picks the line that most often follows the same previous
    non-blank line in the blanked workspace gets right."""
    follows: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for path in sorted(workspace.rglob("*")):
        if path.is_file() and path.suffix in SOURCE_SUFFIXES:
            previous = ""
            for line in path.read_text(errors="replace").split("\n"):
                if line.strip():
                    follows[previous][line.strip()] += 1
                    previous = line.strip()
    hits = 0
    for (relative, i), reference in zip(picks, references):
        seen = (workspace / relative).read_text(errors="replace").split("\n")
        previous = next((line.strip() for line in reversed(seen[:i]) if line.strip()), "")
        counter = follows.get(previous)
        hits += bool(counter) and counter.most_common(1)[0][0] == reference
    return hits


def build_items(names: Iterable[str], n: int, into: Path, workspace: bool) -> tuple[list[Item], dict[str, int]]:
    """The items of each package (lab/workspace/lines.py `items`) and, with a workspace,
    each package's baseline hits."""
    names = list(names)
    found = items(names, n, into, workspace)
    baseline = {}
    for name in names if workspace else ():
        mine = [item for item in found if item.package == name]
        if mine:
            copy = Path(mine[0].workspace)
            picks = [(Path(item.filename).relative_to(copy), item.line) for item in mine]
            baseline[name] = previous_line_baseline(copy, picks, [item.reference for item in mine])
    return found, baseline


def request(item: Item, knobs: Optional[dict] = None) -> dict:
    """The item as one `infill batch` input line (with sampler `knobs`, if any)."""
    line = {"id": item.id, "language": item.language, "prefix": item.prefix, "suffix": item.suffix}
    if item.workspace:
        line["workspace"], line["filename"] = item.workspace, item.filename
    return line | (knobs or {})


def parse_knob(text: str) -> tuple[str, object]:
    """`name=value` of --knob: the value as JSON (true, 0.5, "x"), else as text."""
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"--knob wants name=value, not {text!r}")
    try:
        return name, json.loads(value)
    except json.JSONDecodeError:
        return name, value


def score(items: list[Item], answers: dict[str, dict], baseline: dict[str, int]) -> dict:
    """The summary: overall and per package exact match, empty answers, tokens per forward."""
    per: dict[str, PackageScore] = {}
    tokens = forwards = errors = 0
    for item in items:
        answer = answers.get(item.id, {})
        errors += (not answer) or ("error" in answer)
        middle = answer.get("middle") or ""
        entry = per.setdefault(item.package, PackageScore())
        entry.n += 1
        entry.exact += first_line(middle) == item.reference
        entry.empty += not middle.strip()
        tokens += answer.get("tokens") or 0
        forwards += answer.get("forwards") or 0
    for name, hits in baseline.items():
        per[name].prev_line_baseline = hits
    total = sum(s.n for s in per.values())
    python = [s for name, s in per.items() if PACKAGES[name].language == "python"]
    python_n = sum(s.n for s in python)
    return {"workspace": any(item.workspace for item in items), "n": total, "errors": errors,
            "exact_match": round(sum(s.exact for s in per.values()) / max(total, 1), 4),
            "exact_match_python": round(sum(s.exact for s in python) / max(python_n, 1), 4),
            "empty": sum(s.empty for s in per.values()),
            "tokens_per_forward": round(tokens / max(forwards, 1), 3),
            "per_package": {name: {k: v for k, v in asdict(s).items() if v is not None} for name, s in per.items()}}


def split_kinds(found: list[Item], into: Path) -> dict[str, str]:
    """Each item's kind: "held" (the same line stands elsewhere in its workspace), "near"
    (another line at normalized Levenshtein similarity >= 0.8) or "far"."""
    from lab.workspace.near_probe import classify_items

    return {line.item.id: line.kind for line in classify_items(found, into / "split-cache")}


def split_scores(found: list[Item], answers: dict[str, dict], kinds: dict[str, str]) -> dict:
    """Exact match and empty answers per kind of line (`split_kinds`)."""
    out: dict[str, dict] = {}
    for item in found:
        entry = out.setdefault(kinds.get(item.id, "far"), {"n": 0, "exact": 0, "empty": 0})
        middle = answers.get(item.id, {}).get("middle") or ""
        entry["n"] += 1
        entry["exact"] += first_line(middle) == item.reference
        entry["empty"] += not middle.strip()
    return {kind: out[kind] for kind in ("held", "near", "far") if kind in out}


def run_batch(command: list[str], items: list[Item], knobs: Optional[dict] = None) -> tuple[dict[str, dict], str]:
    """Every item through one `infill batch` process (`command`): (answers by id, its stderr)."""
    stdin = "".join(json.dumps(request(item, knobs)) + "\n" for item in items)
    done = subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=7200)
    answers = {}
    for line in done.stdout.splitlines():
        try:
            answer = json.loads(line)
        except json.JSONDecodeError:
            continue
        answers[answer.get("id")] = answer
    return answers, done.stderr


def write_batch(names: list[str], n: int, folder: Path, workspace: bool) -> int:
    """The items as one `infill batch` input file, DIR/batch.jsonl, for timing the batch
    itself (docs/batching.md: `infill batch` against `--max-batch 1`)."""
    folder.mkdir(parents=True, exist_ok=True)
    if any(folder.iterdir()):
        print(f"-- {folder} is not empty: give a new folder", file=sys.stderr)
        return 2
    found, _ = build_items(names, n, folder, workspace)
    (folder / "batch.jsonl").write_text("".join(json.dumps(request(item)) + "\n" for item in found))
    print(f"-- {len(found)} lines in {folder / 'batch.jsonl'}", file=sys.stderr)
    return 0


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.workspace.real_lines", description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", choices=sorted(SETS), default="aside", help="which packages (default: the kept-aside ones)")
    parser.add_argument("--package", action="append", default=None, choices=sorted(PACKAGES), help="only these packages (repeatable)")
    parser.add_argument("--n", type=int, default=100, help="lines a package (default 100)")
    parser.add_argument("--workspace", action="store_true", help="each package, its sampled lines blanked, as the workspace")
    parser.add_argument("--infill", default=str(Path(sys.executable).with_name("infill")), help="the infill command (default: beside this Python)")
    parser.add_argument("--model", default=None, help="model directory passed to infill batch")
    parser.add_argument("--knob", type=parse_knob, action="append", default=[], metavar="NAME=VALUE",
                        help="a sampler setting for every line (repeatable), e.g. --knob edit_drafts=true")
    parser.add_argument("--split", action="store_true",
                        help="with --workspace: exact match and empty answers on the held / near / far lines (lab/workspace/near_probe.py)")
    parser.add_argument("--dump", type=Path, default=None, help="write each item's reference and answer (JSONL)")
    parser.add_argument("--write-batch", type=Path, default=None, metavar="DIR",
                        help="only write the items as `infill batch` input, DIR/batch.jsonl (with --workspace, the blanked copies stay in DIR), and stop")
    args = parser.parse_args(argv)
    if args.n < 1:
        parser.error("--n must be at least 1")
    names = args.package or list(SETS[args.set])
    if args.write_batch is not None:
        return write_batch(names, args.n, args.write_batch, args.workspace)
    command = [args.infill, "batch"] + (["--model", args.model] if args.model else [])
    into = Path(tempfile.mkdtemp(prefix="real-lines-"))
    try:
        print(f"-- sampling {args.n} lines of {', '.join(names)}", file=sys.stderr, flush=True)
        items, baseline = build_items(names, args.n, into, args.workspace)
        print(f"-- answering {len(items)} lines with `{' '.join(command)}`", file=sys.stderr, flush=True)
        answers, stderr = run_batch(command, items, dict(args.knob))
        kinds = split_kinds(items, into) if args.split and args.workspace else {}
    finally:
        shutil.rmtree(into, ignore_errors=True)
    summary = score(items, answers, baseline)
    if kinds:
        summary["split"] = split_scores(items, answers, kinds)
    if args.knob:
        summary["knobs"] = dict(args.knob)
    if summary["errors"]:
        summary["stderr_tail"] = stderr[-300:]
    if args.dump:
        with args.dump.open("w") as out:
            for item in items:
                answer = answers.get(item.id, {})
                out.write(json.dumps({"id": item.id, "reference": item.reference, "middle": answer.get("middle") or "",
                                      "stop_reason": answer.get("stop_reason"), "forwards": answer.get("forwards"), "draft": answer.get("draft") or "",
                                      "source": answer.get("source"), "origin": answer.get("origin"),
                                      "error": answer.get("error")}) + "\n")
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
