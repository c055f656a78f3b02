"""The language registry: data files, grammar wheels, queries, lookups."""
from __future__ import annotations

import pytest

import grammars
from lab.syntax_bench.tasks import tasks_query
from engine.types import SyntaxConstraint

REQUIRED = {"python", "javascript", "typescript", "go", "rust"}


def test_required_languages_are_registered_with_their_data():
    specs = {spec.name: spec for spec in grammars.languages()}
    assert REQUIRED <= set(specs)
    for name in REQUIRED:
        spec = specs[name]
        assert spec.extensions and spec.lsp_ids
        assert ("(", ")") in spec.brackets and spec.quotes
        assert spec.line_comment
        # The grammar wheel loads and parses something.
        assert spec.ts_language().abi_version >= 14
        assert spec.query("units") is not None
        # The benchmark's task queries are lab data (lab/syntax_bench/queries/), not shipped.
        assert spec.query("tasks") is None and tasks_query(name) is not None


@pytest.mark.parametrize(
    "path, language",
    [
        ("src/app.py", "python"),
        ("STUB.PYI", "python"),
        ("web/index.mjs", "javascript"),
        ("a.jsx", "javascript"),
        ("lib/x.ts", "typescript"),
        ("ui/View.tsx", "tsx"),
        ("main.go", "go"),
        ("src/lib.rs", "rust"),
        ("notes.txt", None),
        (".py", None),
    ],
)
def test_language_for_path(path, language):
    assert grammars.language_for_path(path) == language


def test_language_for_lsp_id_and_get_accepts_both_names():
    assert grammars.language_for_lsp_id("javascriptreact") == "javascript"
    assert grammars.language_for_lsp_id("typescriptreact") == "tsx"
    assert grammars.language_for_lsp_id("cobol") is None
    assert grammars.get("typescriptreact").name == "tsx"
    assert grammars.get("rust").name == "rust"


def test_unknown_language_error_lists_known_names():
    with pytest.raises(grammars.UnknownLanguageError) as info:
        grammars.get("cobol")
    message = str(info.value)
    assert "cobol" in message and "python" in message and "rust" in message


def test_constraint_for_implements_the_engine_protocol():
    assert grammars.constraint_for(None) is None
    assert grammars.constraint_for("cobol") is None
    constraint = grammars.constraint_for("python")
    assert constraint is grammars.constraint_for("python")  # one per language
    for name in ("allows", "accept_final", "polish"):
        assert hasattr(SyntaxConstraint, name) and callable(getattr(constraint, name))
    assert constraint.allows("x = ", ["1"], "\n") is True
    assert grammars.constraint_for("typescriptreact").spec.name == "tsx"
