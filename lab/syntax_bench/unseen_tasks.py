"""The unseen syntax benchmark's tasks: holes cut with tree-sitter from `unseen/sources/`.

Four kinds: `block` (a statement block's body), `condition` (an if/while/for condition),
`arguments` (a call's argument list, inside the parentheses) and `expression` (a
mid-expression hole: the right operand of a binary operator, the value of an assignment
or declaration, a returned expression). Which nodes count is data: `unseen/queries/<language>.scm`
(`@kind.inner` takes the text between the node's first and last child).

Each file belongs to one part, `tune` or `aside` (unseen/manifest.json, a seeded hash of its
path). Tasks are chosen per language by a seeded hash of their id and interleaved by
kind, so `--limit N` keeps every kind and the choice never depends on results.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import tree_sitter as ts

from grammars import get

from .tasks import InfillTask, capture_spans

# The unseen benchmark's data lives in its own folder: `sources/` beside this module is
# the SAFIM benchmark's hand-written files, and `build` rewrites the unseen folder whole.
HERE = Path(__file__).resolve().parent / "unseen"
SOURCES = HERE / "sources"
MANIFEST = HERE / "manifest.json"
QUERIES = HERE / "queries"
KINDS = ("block", "condition", "arguments", "expression")
LANGUAGES = ("python", "javascript", "typescript", "go", "rust")
MAX_MIDDLE_CHARS = 400  # longer middles (whole function bodies) measure the model, not the check
SEED = "infill-syntax-bench-tasks-2026-11-30"


@dataclass(frozen=True)
class Hole:
    """Where a task's middle lies in its file (byte offsets)."""

    path: str  # relative to unseen/sources/
    language: str
    kind: str
    start: int
    end: int

    @property
    def task_id(self) -> str:
        return f"{self.path}:{self.kind}:{self.start}"


QUERY_FILES = {"typescript": "javascript"}  # TypeScript's grammar has JavaScript's node names


@lru_cache(maxsize=None)
def _query(language: str) -> ts.Query:
    name = QUERY_FILES.get(language, language)
    return ts.Query(get(language).ts_language(), (QUERIES / f"{name}.scm").read_text(encoding="utf-8"))


def holes_in(data: bytes, language: str, path: str) -> list[Hole]:
    """Every task hole of one clean file, in file order (duplicates and blank or long
    middles skipped)."""
    tree = ts.Parser(get(language).ts_language()).parse(data)
    if tree.root_node.has_error:
        raise ValueError(f"{path}: does not parse cleanly; tasks need clean code")
    found: dict[tuple[int, int], Hole] = {}
    for kind, start, end in capture_spans(_query(language), tree.root_node, KINDS):
        middle = data[start:end]
        if not middle.strip() or len(middle) > MAX_MIDDLE_CHARS or (start, end) in found:
            continue
        found[(start, end)] = Hole(path, language, kind, start, end)
    return [found[key] for key in sorted(found)]


def manifest() -> list[dict]:
    return json.loads(MANIFEST.read_text(encoding="utf-8"))["files"]


def _rank(text: str) -> str:
    return hashlib.sha256(f"{SEED}:{text}".encode()).hexdigest()


def select(part: str, language: str, limit: int = 0) -> list[Hole]:
    """The tasks of one part and language: seeded order, interleaved by kind, first `limit`."""
    by_kind: dict[str, list[Hole]] = {kind: [] for kind in KINDS}
    for entry in manifest():
        if entry["part"] != part or entry["language"] != language:
            continue
        data = (SOURCES / entry["path"]).read_bytes()
        for hole in holes_in(data, language, entry["path"]):
            by_kind[hole.kind].append(hole)
    groups = [sorted(by_kind[kind], key=lambda h: _rank(h.task_id)) for kind in KINDS if by_kind[kind]]
    interleaved = [g[i] for i in range(max((len(g) for g in groups), default=0)) for g in groups if i < len(g)]
    return interleaved[:limit] if limit else interleaved


def materialize(hole: Hole) -> InfillTask:
    data = (SOURCES / hole.path).read_bytes()
    return InfillTask(
        task_id=hole.task_id,
        language=hole.language,
        kind=hole.kind,
        prefix=data[: hole.start].decode("utf-8"),
        middle=data[hole.start : hole.end].decode("utf-8"),
        suffix=data[hole.end :].decode("utf-8"),
    )
