"""lab/evaluation/prune.py: a rule turned off is turned off everywhere it is read, then
restored; the comparison counts what a user would see change."""
from __future__ import annotations

import pytest

import engine.answer
import engine.stopping
from lab.evaluation.prune import VARIANTS, Patched, compare, markdown


def test_a_patch_reaches_every_module_holding_the_name_and_is_undone() -> None:
    import engine.request  # noqa: F401  (loaded: it reads stopping's constants through the module)

    before = engine.stopping.WASTE_BOUND
    with Patched((("WASTE_BOUND", 10**6),)):
        assert engine.stopping.WASTE_BOUND == 10**6
    assert engine.stopping.WASTE_BOUND == before


def test_a_class_attribute_and_a_module_restricted_name_are_patched_and_undone() -> None:
    original = engine.answer.Answers.line_so_far
    with Patched((("engine.answer:Answers.line_so_far", lambda self, text: None), ("engine.answer:word_ends", lambda text: []))):
        assert engine.answer.Answers.line_so_far is not original
        assert engine.answer.word_ends("a b c") == []
    assert engine.answer.Answers.line_so_far is original
    assert engine.answer.word_ends("a b c") != []


def test_an_unknown_name_is_refused() -> None:
    with pytest.raises(SystemExit, match="no engine or grammars module holds"):
        with Patched((("NO_SUCH_CONSTANT_ANYWHERE", 1),)):
            pass


def test_every_variant_names_something_that_exists() -> None:
    import engine.api  # noqa: F401  (what engine.load imports: the request path's modules)
    import grammars.polish  # noqa: F401

    for variant in VARIANTS:
        with Patched(variant.patches):
            pass


def test_compare_counts_changes_exact_matches_and_empties(tmp_path) -> None:
    items = [{"reference": "a = 1\n"}, {"reference": "return x\n"}, {"reference": "pass\n"}]
    base = [{"middle": "a = 1\n", "forwards": 2}, {"middle": "", "forwards": 3}, {"middle": "x", "forwards": 1}]
    new = [{"middle": "a = 2\n", "forwards": 2}, {"middle": "return x\n", "forwards": 4}, {"middle": "x", "forwards": 1}]
    figures = compare(base, new, items)
    assert figures == {"changed": 2, "exact_base": 1, "exact": 1, "gained": 1, "lost": 1, "empty_base": 1, "empty": 0, "forwards_base": 6, "forwards": 7}
    out = tmp_path / "p.jsonl"
    import json

    out.write_text(json.dumps({"variant": "X", "rule": "r", "dev": figures}) + "\n")
    assert "| `X` | r | 2, +1/-1, 1->0, 6->7 |" in markdown(out)
