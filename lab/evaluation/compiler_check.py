"""Constrained middles the language's own compiler rejects (issue 35).

    python -m lab.evaluation.compiler_check --part aside --language javascript --n 300 [--out rows.jsonl]
    python -m lab.evaluation.compiler_check ... --middles rows.jsonl   # judge a run's middles again
    python -m lab.evaluation.compiler_check ... --true   # no model: true middles the final check refuses

tree-sitter's grammars accept code the languages' compilers refuse (a top-level `return`
in an ES module, `break` outside a loop, a statement indented deeper than its block), and
a splice that parses can still leave the file broken. This measures it on the unseen
benchmark's files (lab/syntax_bench/unseen/manifest.json; tune on `tune`, report `aside`):
in each hole the cursor is after a line's indentation and the rest of the line is deleted;
the engine fills it, constrained; the file with the middle spliced in goes to the compiler:
`node --check` (an `.mjs` file where the file has `import`/`export` statements, else `.cjs`)
or CPython's `compile()` (bytecode, so `return` outside a function is caught too; never
run). Holes are chosen by a seeded hash of file and line, so the choice never depends on
results. Prints the holes, the non-empty middles and how many the compiler rejected.
Node is needed only here: the engine never runs it.
"""
from __future__ import annotations

import argparse
import hashlib
import io
import json
import subprocess
import sys
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from lab.syntax_bench.unseen_tasks import SOURCES, manifest

SEED = "compiler-check-2026-12-01"
SUFFIXES = {"python": ".py", "javascript": ".js"}


@dataclass(frozen=True)
class LineHole:
    id: str
    path: str
    line: int  # 1-based
    prefix: str
    suffix: str
    middle: str  # the deleted text: the true middle


def _rank(key: str) -> str:
    return hashlib.sha256(f"{SEED}:{key}".encode()).hexdigest()


def line_holes(text: str, path: str) -> list[LineHole]:
    """Every non-blank line as a hole: the cursor after its indentation, the rest deleted."""
    lines = text.split("\n")
    out = []
    for i, line in enumerate(lines):
        body = line.lstrip(" \t")
        if not body.strip():
            continue
        prefix = "".join(part + "\n" for part in lines[:i]) + line[: len(line) - len(body)]
        suffix = "".join("\n" + part for part in lines[i + 1 :])
        out.append(LineHole(f"{path}:{i + 1}", path, i + 1, prefix, suffix, body))
    return out


def select(language: str, part: str, n: int, skip: int = 0) -> list[LineHole]:
    """`n` holes of the part's files (seeded, by hash of file and line), after the first
    `skip`; files the compiler itself rejects are left out."""
    holes: list[LineHole] = []
    for entry in manifest():
        if entry["language"] != language or entry["part"] != part:
            continue
        text = (SOURCES / entry["path"]).read_text(encoding="utf-8")
        if compiler_error(language, text, is_module(language, text)) is not None:
            continue
        holes.extend(line_holes(text, entry["path"]))
    holes.sort(key=lambda h: _rank(h.id))
    return holes[skip : skip + n]


def is_module(language: str, text: str) -> bool:
    """An ES module: the file has top-level `import`/`export` statements (tree-sitter's view)."""
    if language != "javascript":
        return False
    from grammars import get

    import tree_sitter as ts

    root = ts.Parser(get(language).ts_language()).parse(text.encode("utf-8")).root_node
    return any(child.type in ("import_statement", "export_statement") for child in root.children)


def compiler_error(language: str, text: str, module: bool) -> Optional[str]:
    """The compiler's message for `text`, or None when it compiles."""
    if language == "python":
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # invalid escapes are warnings, not errors
                compile(text, "<splice>", "exec", dont_inherit=True)
        except (SyntaxError, ValueError) as exc:
            return f"{type(exc).__name__}: {exc}"
        return None
    with tempfile.NamedTemporaryFile("w", suffix=".mjs" if module else ".cjs", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        done = subprocess.run(["node", "--check", f.name], capture_output=True, text=True, timeout=60)
    if done.returncode == 0:
        return None
    lines = [line for line in done.stderr.splitlines() if "Error" in line]
    return lines[0] if lines else done.stderr.strip()[-200:]


def run_engine(language: str, holes: list[LineHole], model: Optional[str]) -> dict[str, str]:
    """The constrained middles, by hole id (`infill batch` in this process)."""
    from infill_lsp.batch import run_batch

    stdin = io.StringIO("".join(json.dumps({"id": h.id, "prefix": h.prefix, "suffix": h.suffix, "language": language, "constrained": True}) + "\n" for h in holes))
    stdout = io.StringIO()
    run_batch(stdin, stdout, model_dir=Path(model) if model else None)
    rows = [json.loads(line) for line in stdout.getvalue().splitlines()]
    return {row["id"]: row.get("middle") or "" for row in rows}


def judge(language: str, holes: list[LineHole], middles: dict[str, str]) -> list[dict]:
    rows = []
    modules: dict[str, bool] = {}
    for hole in holes:
        middle = middles.get(hole.id, "")
        if hole.path not in modules:
            modules[hole.path] = is_module(language, hole.prefix + hole.suffix)
        error = compiler_error(language, hole.prefix + middle + hole.suffix, modules[hole.path]) if middle.strip() else None
        rows.append({"id": hole.id, "path": hole.path, "line": hole.line, "middle": middle, "error": error})
    return rows


def true_refused(language: str, holes: list[LineHole]) -> list[LineHole]:
    """The holes whose true middle the final check refuses (no model: a check that refuses
    the file's own text is too strict)."""
    from grammars import constraint_for

    constraint = constraint_for(language)
    assert constraint is not None
    return [h for h in holes if not constraint.accept_final(h.prefix, h.middle, h.suffix)]


def summary(language: str, part: str, rows: list[dict]) -> dict:
    shown = [r for r in rows if r["middle"].strip()]
    rejected = [r for r in shown if r["error"]]
    return {"language": language, "part": part, "holes": len(rows), "shown": len(shown), "rejected": len(rejected),
            "rate": round(len(rejected) / len(shown), 4) if shown else 0.0}


def main(argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lab.evaluation.compiler_check", description=__doc__.splitlines()[0])
    p.add_argument("--language", choices=sorted(SUFFIXES), default="javascript")
    p.add_argument("--part", choices=["tune", "aside"], default="tune")
    p.add_argument("--n", type=int, default=300)
    p.add_argument("--skip", type=int, default=0, help="leave out the first SKIP holes (more holes without the ones already seen)")
    p.add_argument("--model", default=None, help="model directory (default: the embedded model)")
    p.add_argument("--middles", type=Path, default=None, help="judge the middles of an earlier --out instead of running the engine")
    p.add_argument("--out", type=Path, default=None, help="write one row per hole (JSON lines)")
    p.add_argument("--true", action="store_true", help="no model: count the true middles the final check refuses")
    args = p.parse_args(argv)
    holes = select(args.language, args.part, args.n, args.skip)
    if args.true:
        refused = true_refused(args.language, holes)
        for h in refused:
            print(f"{h.id}: {h.middle!r}", file=sys.stderr)
        print(json.dumps({"language": args.language, "part": args.part, "holes": len(holes), "true_refused": len(refused)}))
        return 0
    if args.middles:
        middles = {r["id"]: r["middle"] for r in map(json.loads, args.middles.read_text().splitlines())}
    else:
        middles = run_engine(args.language, holes, args.model)
    rows = judge(args.language, holes, middles)
    if args.out:
        args.out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    for r in rows:
        if r["error"]:
            print(f"{r['id']}: {r['middle']!r}: {r['error']}", file=sys.stderr)
    print(json.dumps(summary(args.language, args.part, rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
