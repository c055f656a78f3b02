"""SAFIM-style infilling tasks cut from source files with tree-sitter.

Three kinds, as in SAFIM: a statement block (`block`), a control-flow condition
(`condition`) and a call's arguments (`arguments`). Which nodes count is data: the
captures of `lab/syntax_bench/queries/<language>.scm` (benchmark data, so it lives here and
not with the grammars the product ships). A capture named `kind.inner` takes the text
between the node's first and last child (the brackets) as the middle.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterator, Optional

import tree_sitter as ts

from grammars.registry import get, language_for_path

KINDS = ("block", "condition", "arguments")
BENCH_DATA = Path(__file__).resolve().parent / "sources"
QUERIES = Path(__file__).resolve().parent / "queries"


@dataclass(frozen=True)
class InfillTask:
    task_id: str  # "<file>:<kind>:<start byte>"
    language: str
    kind: str
    prefix: str
    middle: str
    suffix: str

    def to_dict(self) -> dict:
        return asdict(self)


def capture_spans(query: ts.Query, root: ts.Node, kinds: tuple[str, ...] = KINDS) -> Iterator[tuple[str, int, int]]:
    """(kind, start byte, end byte) of every capture named `kind` or `kind.inner` (the text
    between the node's first and last child, e.g. inside its brackets)."""
    for capture, nodes in ts.QueryCursor(query).captures(root).items():
        kind, _, part = capture.partition(".")
        if kind not in kinds:
            continue
        for node in nodes:
            if part == "inner":
                if node.child_count < 2:
                    continue
                yield kind, node.children[0].end_byte, node.children[-1].start_byte
            else:
                yield kind, node.start_byte, node.end_byte


@lru_cache(maxsize=None)
def tasks_query(language: str) -> Optional[ts.Query]:
    """The compiled task query of a grammar (None when the benchmark has none for it)."""
    spec = get(language)
    path = QUERIES / f"{spec.queries_name or spec.name}.scm"
    if not path.is_file():
        return None
    return ts.Query(spec.ts_language(), path.read_text(encoding="utf-8"))


def tasks_from_source(source: str, language: str, name: str = "<source>") -> list[InfillTask]:
    """All tasks in one file, in file order; empty or whitespace-only middles are skipped."""
    spec = get(language)
    query = tasks_query(spec.name)
    if query is None:
        return []
    data = source.encode("utf-8")
    tree = ts.Parser(spec.ts_language()).parse(data)
    if tree.root_node.has_error:
        raise ValueError(f"{name}: the source does not parse cleanly; tasks need clean code")
    found: dict[tuple[int, int], InfillTask] = {}
    for kind, start, end in capture_spans(query, tree.root_node):
        middle = data[start:end].decode("utf-8")
        if not middle.strip() or (start, end) in found:
            continue
        found[(start, end)] = InfillTask(
            task_id=f"{name}:{kind}:{start}",
            language=spec.name,
            kind=kind,
            prefix=data[:start].decode("utf-8"),
            middle=middle,
            suffix=data[end:].decode("utf-8"),
        )
    return [found[key] for key in sorted(found)]


def bench_tasks(languages: tuple[str, ...] = ("python", "javascript"), folder: Path = BENCH_DATA) -> list[InfillTask]:
    """The benchmark's tasks from every source file in `folder` of the given languages,
    interleaved by kind so that `--limit N` still covers all three kinds."""
    tasks: list[InfillTask] = []
    for path in sorted(folder.iterdir()):
        language = language_for_path(path.name)
        if language in languages:
            tasks.extend(tasks_from_source(path.read_text(encoding="utf-8"), language, path.name))
    by_group: dict[tuple[str, str], list[InfillTask]] = {}
    for task in tasks:
        by_group.setdefault((task.language, task.kind), []).append(task)
    groups = [by_group[key] for key in sorted(by_group)]
    interleaved: list[InfillTask] = []
    for index in range(max((len(g) for g in groups), default=0)):
        interleaved.extend(g[index] for g in groups if index < len(g))
    return interleaved
