"""Next-edit suggestions on real edits: release diffs of packages outside the corpus.

    python -m lab.evaluation.real_edits --set tune                  # tuning packages
    python -m lab.evaluation.real_edits --set aside --json          # kept aside: report only
    python -m lab.evaluation.real_edits --set tune --n 40 --modes auto,replay --dump F

The packages are the reserved unseen ones of lab/workspace/lines.py (TUNE for tuning the
rules, ASIDE only for reporting), in neither the training corpus nor its tuning. For each,
a few pairs of consecutive released versions (PAIRS, pinned) are fetched from PyPI or npm
once into $REAL_EDITS_CACHE (default /tmp/real-edits-cache), and every changed source file
(the package's globs in lines.py) is replayed hunk by hunk in the file's order
(lab.training.edits.real_edit_tasks): the applied hunks are the history, the cursor where
the last one ends; the task is the next hunk when it lies in the 30-line window around the
cursor, else "no edit due" (the next hunk is further away, or the last hunk was the
file's last). Per package, N tasks are drawn (seeded), half with an edit due where there
are enough.

Figures, per mode and per package:
* exact: the document after the suggested edits is the document after the real next hunk
  (% of the tasks with an edit due); `right_with_later` also counts suggestions that make
  the next hunk and, besides it, only changes the release makes in later hunks;
* false edits: an edit suggested where none is due (% of those tasks);
* breaks parse: suggestions that turn a parseable document (or window) unparseable,
  judged by the tree-sitter check the engine uses (engine/next_edit/parse_check.py), a
  count; `dropped` counts the edits the engine's own check removed before answering;
* latency p50/p99 (model loading excluded);
* by kind of the real next edit (`classify`): a repeat of a change in the history
  (rename, added or deleted token, substitution, rewrite with a captured group, an
  inserted or deleted line), a new change to existing lines, a new line, a deletion.
"""
from __future__ import annotations

import argparse
import difflib
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

from engine.next_edit import HistoryEntry, next_edit
from engine.next_edit.suggest import changed_lines
from engine.next_edit.parse_check import breaks_parse
from engine.next_edit.replay import changed_region
from infill_lsp.edit_history import changed_line_range
from lab.progress import report_progress
from lab.training.edits import EditTask, real_edit_tasks
from lab.workspace.lines import ASIDE, CHECK, PACKAGES, TUNE

CACHE = Path(os.environ.get("REAL_EDITS_CACHE", "/tmp/real-edits-cache"))
SETS = {"tune": TUNE, "aside": ASIDE, "check": CHECK}
# Consecutive released versions, pinned. Chosen by size only (enough hunks for ~50 tasks
# with an edit due per package, never by results): the pinned version of lines.py and the
# releases before it with changes to the package's sources.
PAIRS: dict[str, tuple[tuple[str, str], ...]] = {
    "toolz": (("0.10.0", "0.11.0"), ("0.11.0", "0.11.1"), ("0.11.1", "0.11.2"), ("0.11.2", "0.12.0"),
              ("0.12.0", "0.12.1"), ("0.12.1", "1.0.0"), ("1.0.0", "1.1.0"), ("1.1.0", "1.2.0")),
    "marshmallow": (("3.26.1", "4.0.0"), ("4.3.1", "4.4.0")),
    "semver": (("7.3.8", "7.4.0"), ("7.4.0", "7.5.0"), ("7.5.1", "7.5.2"), ("7.5.2", "7.5.3"), ("7.5.4", "7.6.0")),
    "knex": (("2.4.1", "2.4.2"), ("2.4.2", "2.5.0"), ("2.5.0", "2.5.1"), ("3.0.1", "3.1.0")),
    "boltons": (("26.0.0", "26.1.0"), ("26.1.0", "26.2.0")),
    "more-itertools": (("11.0.1", "11.0.2"), ("11.0.2", "11.1.0"), ("11.1.0", "11.2.0")),
    "qs": (("6.10.1", "6.10.2"), ("6.10.5", "6.11.0"), ("6.11.2", "6.12.0"), ("6.12.3", "6.13.0"),
           ("6.13.0", "6.13.1"), ("6.13.1", "6.14.0")),
    "ws": (("8.15.0", "8.15.1"), ("8.17.1", "8.18.0")),
    "humanize": (("4.12.3", "4.13.0"), ("4.13.0", "4.14.0"), ("4.14.0", "4.15.0"), ("4.15.0", "4.16.0"), ("4.16.0", "4.17.0")),
    "tomlkit": (("0.13.0", "0.13.1"), ("0.13.1", "0.13.2"), ("0.13.2", "0.13.3"), ("0.13.3", "0.14.0"), ("0.14.0", "0.15.0"),
                ("0.15.0", "0.15.1"), ("0.15.1", "0.15.2")),
    "body-parser": (("2.0.0", "2.0.1"), ("2.0.1", "2.0.2"), ("2.0.2", "2.1.0"), ("2.1.0", "2.2.0")),
    "debug": (("4.3.4", "4.3.5"), ("4.3.5", "4.3.6"), ("4.3.6", "4.3.7"), ("4.3.7", "4.4.0"), ("4.4.0", "4.4.1")),
}
DEFAULT_PER_PACKAGE = 100  # four packages a set: ~400 tasks
MAX_HUNKS = 100  # a file changed in more places than this between two releases was rewritten, not edited
SEED = 20261207


# ------------------------------------------------------------------------ fetching
def project_name(name: str) -> str:
    """The registry name of a package of lines.py (its pinned spec's name part)."""
    spec = PACKAGES[name].spec
    return spec.split("==")[0] if PACKAGES[name].registry == "pypi" else spec.rsplit("@", 1)[0]


def release_dir(name: str, version: str, cache: Path = CACHE) -> Path:
    """The package's source folder at `version`, fetched from its registry once."""
    pkg = PACKAGES[name]
    folder = cache / f"{name}-{version}"
    if not folder.exists():
        tmp = Path(tempfile.mkdtemp())
        if pkg.registry == "pypi":
            subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:", "-d", tmp,
                            f"{project_name(name)}=={version}"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            archive = next(tmp.glob("*.tar.gz"))
        else:
            subprocess.run(["npm", "pack", "--silent", f"{project_name(name)}@{version}"], cwd=tmp, check=True, stdout=subprocess.DEVNULL)
            archive = next(tmp.glob("*.tgz"))
        partial = cache / f".{name}-{version}.partial"
        partial.mkdir(parents=True, exist_ok=True)
        with tarfile.open(archive) as tar:
            tar.extractall(partial, filter="data")
        partial.rename(folder)  # a fetch cut short never looks finished
    top = next(p for p in folder.iterdir() if p.is_dir())
    return (top / pkg.source).resolve()


# --------------------------------------------------------------------------- tasks
@dataclass
class RealTask:
    package: str
    versions: str  # "OLD..NEW"
    task: EditTask
    kind: str = ""  # classify(): repeat | new_change | new_line | deletion | none
    detail: str = ""  # for repeats: what is repeated


def package_tasks(name: str, pairs: Optional[Sequence[tuple[str, str]]] = None, cache: Path = CACHE) -> list[RealTask]:
    """Every task of the package's version pairs, edit due or not, in a fixed order."""
    out: list[RealTask] = []
    for old, new in pairs if pairs is not None else PAIRS[name]:
        tasks = real_edit_tasks(release_dir(name, old, cache), release_dir(name, new, cache), MAX_HUNKS, no_edit=True, globs=PACKAGES[name].globs)
        out.extend(RealTask(name, f"{old}..{new}", t) for t in tasks)
    return out


def draw(tasks: list[RealTask], n: int, rng: random.Random) -> list[RealTask]:
    """n tasks, half with an edit due where there are enough (the rest from the other
    half), in their original order."""
    due = [i for i, t in enumerate(tasks) if t.task.expects_edit]
    none = [i for i, t in enumerate(tasks) if not t.task.expects_edit]
    want_due = min(len(due), n // 2 + n % 2)
    want_none = min(len(none), n - want_due)
    want_due = min(len(due), n - want_none)
    picked = rng.sample(due, want_due) + rng.sample(none, want_none)
    return [tasks[i] for i in sorted(picked)]


def build(names: Iterable[str], n: int = DEFAULT_PER_PACKAGE, seed: int = SEED, cache: Path = CACHE) -> list[RealTask]:
    out: list[RealTask] = []
    for name in names:
        drawn = draw(package_tasks(name, cache=cache), n, random.Random(f"{seed}-{name}"))
        for t in drawn:
            t.kind, t.detail = classify(t.task)
        out.extend(drawn)
    return out


# ------------------------------------------------------------------ kinds of edits
@dataclass(frozen=True)
class LineChange:
    """An edit as its changed lines: `old` replaced by `new` (either may be empty)."""

    old: tuple[str, ...]
    new: tuple[str, ...]

    @property
    def inserts(self) -> bool:
        return not "".join(self.old).strip() and bool("".join(self.new).strip())

    @property
    def deletes(self) -> bool:
        return not "".join(self.new).strip() and bool("".join(self.old).strip())


def line_change(before: str, after: str) -> LineChange:
    """The lines an edit replaced and the lines it put there (the language server's own
    reduction of an edit to its changed lines, infill_lsp/edit_history.py)."""
    first, last_before, last_after = changed_line_range(before, after)
    b, a = before.split("\n"), after.split("\n")
    return LineChange(tuple(b[first : last_before + 1]), tuple(a[first : last_after + 1]))


WORD = re.compile(r"[A-Za-z_$][\w$]*")


def fragments(change: LineChange) -> list[tuple[str, str]]:
    """The changed text of each changed line (line by line when the line count stays),
    widened to whole words, stripped."""
    pairs = list(zip(change.old, change.new)) if len(change.old) == len(change.new) else [("\n".join(change.old), "\n".join(change.new))]
    out = []
    for old, new in pairs:
        region = changed_region(old, new)
        if region is not None:
            out.append((region.old.strip(), region.new.strip()))
    return out


def signature(old: str, new: str) -> tuple[str, str]:
    """A fragment with the words it keeps replaced by numbered holes: `Optional[int]` ->
    `int | None` and `Optional[str]` -> `str | None` share ("Optional[$0]", "$0 | None")."""
    kept = [w for w in dict.fromkeys(WORD.findall(old)) if re.search(rf"(?<![\w$]){re.escape(w)}(?![\w$])", new)]
    for k, word in enumerate(kept):
        hole = f"\x00{k}"
        old = re.sub(rf"(?<![\w$]){re.escape(word)}(?![\w$])", hole, old)
        new = re.sub(rf"(?<![\w$]){re.escape(word)}(?![\w$])", hole, new)
    return old, new


def _fragment_kind(old: str, new: str) -> str:
    if WORD.fullmatch(old) and WORD.fullmatch(new):
        return "rename"
    if not old:
        return "added_token"
    if not new:
        return "deleted_token"
    return "substitution"


def classify(task: EditTask) -> tuple[str, str]:
    """(kind, detail) of the task's real next edit: "none" where no edit is due; a
    "repeat" of a change in the history (detail: inserted_line, deleted_line, rename,
    added_token, deleted_token, substitution, or rewrite where the change repeats with
    other words in its holes: `signature`); else new_line, deletion or new_change."""
    if not task.expects_edit:
        return "none", ""
    target = line_change(task.current, task.target)
    history = [line_change(e.before, e.after) for e in task.history]
    if target.inserts or target.deletes:
        lines = {line.strip() for line in (target.new if target.inserts else target.old) if line.strip()}
        for past in history:
            if (past.inserts if target.inserts else past.deletes) and lines <= {line.strip() for line in (past.new if target.inserts else past.old)}:
                return "repeat", "inserted_line" if target.inserts else "deleted_line"
        return ("new_line", "") if target.inserts else ("deletion", "")
    mine = fragments(target)
    seen = [f for past in history for f in fragments(past)]
    if mine and all(f in seen for f in mine):
        return "repeat", _fragment_kind(*mine[0])
    shapes = {signature(*f) for f in seen}
    if mine and all(signature(*f) in shapes for f in mine) and all(signature(*f) != f for f in mine):
        return "repeat", "rewrite"
    return "new_change", ""


# ------------------------------------------------------------------------ scoring
def line_hunks(before: str, after: str) -> set[tuple[int, int, tuple[str, ...]]]:
    """The line-level changes from `before` to `after`: (first line, end line in before,
    the new lines)."""
    a, b = before.splitlines(keepends=True), after.splitlines(keepends=True)
    return {(i1, i2, tuple(b[j1:j2])) for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes() if op != "equal"}


def _line_map(before: list[str], after: list[str]) -> dict[int, str]:
    """Each line of `before` that stays one line in `after` (unchanged, or rewritten in a
    block of as many lines), with what it became."""
    out: dict[int, str] = {}
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        if op == "equal" or (op == "replace" and i2 - i1 == j2 - j1):
            out.update({i1 + k: after[j1 + k] for k in range(i2 - i1)})
    return out


def right_ahead(task: EditTask, produced: str) -> bool:
    """The next hunk made exactly, and every other suggested change one the release makes
    later (a rename suggested at the three places the release renames one hunk at a time
    is right, though the strict measure wants the next hunk alone). Line by line where the
    suggestion keeps the line count, else hunk by hunk."""
    if not task.expects_edit or produced == task.current or not task.final:
        return False
    current, made = task.current.split("\n"), produced.split("\n")
    if len(made) != len(current):
        done = line_hunks(task.current, produced)
        return line_hunks(task.current, task.target) <= done <= line_hunks(task.current, task.final)
    final = _line_map(current, task.final.split("\n"))
    target = task.target.split("\n")
    if len(target) != len(current):
        return False  # the next hunk adds or removes lines; the suggestion did not
    changed = [i for i in range(len(current)) if made[i] != current[i]]
    due = [i for i in range(len(current)) if target[i] != current[i]]
    return all(made[i] == target[i] for i in due) and all(final.get(i) == made[i] for i in changed)


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def as_sent(history: Sequence[HistoryEntry], form: str) -> list[HistoryEntry]:
    """The history as a client sends it: "lines", the changed lines of each entry (what the
    LSP server records), or "documents", whole-document snapshots."""
    if form == "documents":
        return list(history)
    return [HistoryEntry(*changed_lines(e.before, e.after)) for e in history]


def run(eng: Any, tasks: list[RealTask], quiet: bool = True, history: str = "lines", **limits: Any) -> list[dict]:
    """One row per task: what the engine suggested and how it scores."""
    rows = []
    for i, real in enumerate(tasks, 1):
        task = real.task
        result = next_edit(eng, task.current, task.cursor, as_sent(task.history, history), language=task.language, **limits)
        produced = result.apply(task.current)
        broke = bool(result.edits) and breaks_parse(task.language, task.current, result.window, result.edits)
        rows.append({"package": real.package, "versions": real.versions, "source": task.source, "language": task.language,
                     "kind": real.kind, "detail": real.detail, "expects_edit": task.expects_edit, "edited": bool(result.edits),
                     "exact": produced == task.target, "ahead": produced == task.target or right_ahead(task, produced), "breaks": broke, "dropped": getattr(result, "unparseable", 0),
                     "ms": result.ms, "edits": [e.to_dict() for e in result.edits]})
        if not quiet:
            report_progress("real-edits", i, len(tasks))
    return rows


def figures(rows: list[dict]) -> dict:
    due = [r for r in rows if r["expects_edit"]]
    none = [r for r in rows if not r["expects_edit"]]
    out: dict = {"tasks": len(rows), "edit_due": len(due), "no_edit_due": len(none)}
    if due:
        out["exact"] = sum(r["exact"] for r in due)
        out["exact_pct"] = round(100 * out["exact"] / len(due), 1)
        out["right_with_later"] = sum(r["ahead"] for r in due)
        out["right_with_later_pct"] = round(100 * out["right_with_later"] / len(due), 1)
    if none:
        out["false_edits"] = sum(r["edited"] for r in none)
        out["false_edit_pct"] = round(100 * out["false_edits"] / len(none), 1)
    out["proposals"] = sum(r["edited"] for r in rows)
    out["wrong_proposals"] = sum(r["edited"] and not r["exact"] for r in rows)
    out["breaks_parse"] = sum(r["breaks"] for r in rows)
    out["dropped_unparseable"] = sum(r["dropped"] for r in rows)
    return out


def summarize(rows: list[dict]) -> dict:
    times = [r["ms"] for r in rows]
    report = {"overall": figures(rows)}
    report["latency_ms"] = {"p50": round(_percentile(times, 0.5), 2), "p99": round(_percentile(times, 0.99), 2),
                            "mean": round(statistics.fmean(times), 2) if times else 0.0}
    report["by_package"] = {p: figures([r for r in rows if r["package"] == p]) for p in dict.fromkeys(r["package"] for r in rows)}
    kinds: dict[str, dict] = {}
    for kind in ("repeat", "new_change", "new_line", "deletion"):
        subset = [r for r in rows if r["kind"] == kind]
        if subset:
            kinds[kind] = {"tasks": len(subset), "exact": sum(r["exact"] for r in subset), "right_with_later": sum(r["ahead"] for r in subset)}
    for detail in sorted({r["detail"] for r in rows if r["kind"] == "repeat"}):
        subset = [r for r in rows if r["kind"] == "repeat" and r["detail"] == detail]
        kinds[f"repeat:{detail}"] = {"tasks": len(subset), "exact": sum(r["exact"] for r in subset), "right_with_later": sum(r["ahead"] for r in subset)}
    report["by_kind"] = kinds
    rules: dict[str, dict] = {}
    for rule in sorted({e["kind"] for r in rows for e in r["edits"]}):
        subset = [r for r in rows if any(e["kind"] == rule for e in r["edits"])]
        rules[rule] = {"answers": len(subset), "exact": sum(r["exact"] for r in subset),
                       "right_with_later": sum(r["ahead"] for r in subset), "no_edit_due": sum(not r["expects_edit"] for r in subset)}
    report["by_rule"] = rules  # answers holding an edit of each rule: how often they were right (the priors' evidence)
    return report


def dump_rows(path: Path, tasks: list[RealTask], rows_by_mode: dict[str, list[dict]]) -> None:
    """One JSON line per task: where it is, the last history entry and the real next
    edit as changed lines, and each mode's answer."""
    with path.open("w") as out:
        for i, real in enumerate(tasks):
            task = real.task
            last = line_change(task.history[-1].before, task.history[-1].after)
            target = line_change(task.current, task.target)
            line = task.current.count("\n", 0, task.cursor)
            out.write(json.dumps({"package": real.package, "versions": real.versions, "source": task.source, "line": line,
                                  "kind": real.kind, "detail": real.detail, "last_edit": [list(last.old), list(last.new)],
                                  "next_edit": [list(target.old), list(target.new)] if task.expects_edit else None,
                                  "answers": {mode: {k: rows[i][k] for k in ("exact", "ahead", "edited", "breaks", "edits")} for mode, rows in rows_by_mode.items()}}) + "\n")


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.evaluation.real_edits", description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", choices=sorted(SETS), default="tune", help="tune (for tuning), aside (report only) or check (a change the aside figures suggested)")
    parser.add_argument("--package", action="append", default=None, choices=sorted(PAIRS), help="only these packages (repeatable)")
    parser.add_argument("--n", type=int, default=DEFAULT_PER_PACKAGE, help=f"tasks a package (default {DEFAULT_PER_PACKAGE})")
    parser.add_argument("--modes", default="auto,replay", help="comma-separated: auto, replay, model")
    parser.add_argument("--model", type=Path, default=None, help="model directory (modes auto and model)")
    parser.add_argument("--limit", action="append", default=[], metavar="NAME=VALUE", help="a next-edit limit for every task (repeatable), e.g. model_weight=1")
    parser.add_argument("--history", choices=("lines", "documents"), default="lines",
                        help="history entries as changed lines (what the LSP server sends; default) or whole-document snapshots")
    parser.add_argument("--cache", type=Path, default=CACHE, help=f"where released versions are kept (default {CACHE})")
    parser.add_argument("--json", action="store_true", help="one line of JSON")
    parser.add_argument("--dump", type=Path, default=None, help="write each task and its answers (JSONL)")
    args = parser.parse_args(argv)
    if args.n < 1:
        parser.error("--n must be at least 1")
    names = args.package or list(SETS[args.set])
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    limits = {k: json.loads(v) if v[:1] in "-0123456789tfn[{" else v for k, v in (item.split("=", 1) for item in args.limit)}
    tasks = build(names, args.n, cache=args.cache)
    eng = None
    if any(m != "replay" for m in modes):
        import engine

        eng = engine.load(args.model)
    report: dict = {"set": args.set, "packages": {n: [f"{a}..{b}" for a, b in PAIRS[n]] for n in names}, "n": args.n,
                    "history": args.history, "limits": limits}
    rows_by_mode = {}
    for mode in modes:
        rows_by_mode[mode] = run(eng, tasks, quiet=args.json, history=args.history, mode=mode, **limits)
        report[mode] = summarize(rows_by_mode[mode])
    if args.dump:
        dump_rows(args.dump, tasks, rows_by_mode)
    print(json.dumps(report, indent=None if args.json else 2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
