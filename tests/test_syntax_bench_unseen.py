"""The unseen syntax benchmark's bookkeeping (lab/syntax_bench/unseen*): files, parts, tasks, scoring."""
import hashlib
from collections import Counter
from types import SimpleNamespace

from lab.syntax_bench import build
from lab.syntax_bench.run import run_language
from lab.syntax_bench.unseen_tasks import KINDS, LANGUAGES, SOURCES, holes_in, manifest, select


def test_committed_sources_match_the_manifest_and_both_parts_have_every_language():
    files = manifest()
    assert {f["language"] for f in files} == set(LANGUAGES)
    for f in files:
        assert hashlib.sha256((SOURCES / f["path"]).read_bytes()).hexdigest() == f["sha256"], f["path"]
        assert f["part"] == build.part_of(f["path"])  # the split is the seeded hash, nothing else
    parts = Counter((f["language"], f["part"]) for f in files)
    assert all(parts[(language, part)] >= 5 for language in LANGUAGES for part in ("tune", "aside"))


def test_no_benchmark_package_is_in_the_training_corpus():
    import tomllib
    from pathlib import Path

    corpus = tomllib.loads((Path(__file__).resolve().parents[1] / "lab/training/corpus_sources.toml").read_text())
    used = {entry["name"] for kind in ("pypi", "npm") for entry in corpus.get(kind, [])}
    assert used.isdisjoint(p.name for p in build.read_packages())


def test_tasks_are_chosen_by_seed_and_interleaved_by_kind():
    first = select("aside", "go", 8)
    assert first == select("aside", "go", 8)
    assert [h.kind for h in first[:4]] == list(KINDS)
    assert {h.path for h in select("tune", "go", 40)}.isdisjoint(h.path for h in select("aside", "go", 40))


def test_holes_cover_the_four_kinds():
    source = b"def f(x, y):\n    if x > y:\n        return g(x, 1)\n    z = x + y\n    return z\n"
    kinds = {(h.kind, source[h.start:h.end].decode()) for h in holes_in(source, "python", "t.py")}
    assert ("condition", "x > y") in kinds and ("arguments", "x, 1") in kinds
    assert ("expression", "y") in kinds and ("expression", "x + y") in kinds
    assert any(kind == "block" for kind, _ in kinds)


def test_an_empty_answer_is_valid_only_where_the_empty_hole_parses():
    class Silent:  # refuses everything: an empty middle
        def infill(self, prefix, suffix, **settings):
            return SimpleNamespace(middle="", ms=1.0, vetoed=0)

    row = run_language(Silent(), "python", "tune", 24)
    on = row["on"]
    by_kind = on["by_kind"]
    # `f()` parses with nothing inside; an empty condition never does. (tree-sitter is the
    # judge, and it lets a Python function body be empty: docs/grammars.md.)
    assert by_kind["python/arguments"]["parse_valid"] == by_kind["python/arguments"]["tasks"]
    assert by_kind["python/condition"]["parse_valid"] == 0
    assert on["parse_valid_rate"] < 1 and on["suggestion_rate"] == 0
