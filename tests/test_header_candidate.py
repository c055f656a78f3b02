"""A line that must open a block (grammars/python_check.opens_block; in JavaScript, a line
whose `{` a `}` below needs, grammars/constraint.py) gets a candidate that starts with a
block header's keyword after a refused first one (engine/request.py, InfillRun._header_seed).
Run on the embedded model: without that candidate it writes a plain statement on these
lines, which the final check refuses, and answers nothing."""
from __future__ import annotations

import pytest

import engine.api
import engine.request
import engine.draft_sources
import engine.stopping
from grammars.headers import HEADER_WORDS
import grammars

# The cursor after the indentation of a line whose next line is deeper than anything
# before it opened (the shapes of loops and conditions left out of short functions).
MUST_OPEN = [
    ("def below_zero(operations):\n    balance = 0\n    for op in operations:\n        balance += op\n        ", "\n            return True\n    return False\n"),
    ("def total(xs):\n    s = 0\n    ", "\n        s += x\n    return s\n"),
    ("def first_negative(values):\n    ", "\n        if value < 0:\n            return value\n    return None\n"),
]


@pytest.fixture(scope="module")
def eng():
    return engine.api.load(None)


def _infill(eng, prefix: str, suffix: str, language: str = "python", **settings):
    eng.forget_context()
    return eng.infill(prefix, suffix, language=language, **settings)


@pytest.mark.parametrize("prefix, suffix", MUST_OPEN)
def test_a_line_that_must_open_a_block_is_answered_with_a_header(eng, monkeypatch, prefix, suffix) -> None:
    result = _infill(eng, prefix, suffix)
    first_word = result.middle.split(" ")[0].rstrip(":")
    assert first_word in HEADER_WORDS["python"], result.middle
    assert result.middle.rstrip().endswith(":")
    assert grammars.constraint_for("python").accept_final(prefix, result.middle, suffix)
    assert result.forwards - result.tokens <= engine.stopping.WASTE_BOUND
    # Without the header candidate the model's own candidates are refused: nothing.
    monkeypatch.setattr(engine.draft_sources, "HEADER_WORDS", {})
    assert _infill(eng, prefix, suffix).middle == ""


def test_the_keyword_is_one_whose_header_can_stand_there(eng, monkeypatch) -> None:
    """Only keywords whose header would pass the final check are scored: no `try` without
    an `except` after its block, no `else` without its `if`."""
    prefix, suffix = MUST_OPEN[1]
    seeds = []
    seed = engine.request.InfillRun._header_seed
    monkeypatch.setattr(engine.request.InfillRun, "_header_seed", lambda self, logits: seeds.append(seed(self, logits)) or seeds[-1])
    monkeypatch.setattr(engine.draft_sources, "HEADER_WORDS", {"python": {"try": ":", "else": ":", "for": " x in x:"}})
    result = _infill(eng, prefix, suffix)
    tok = eng.tokenizer
    assert len(seeds) == 1 and tok.decode(seeds[0]).strip() == "for"
    assert result.middle.startswith("for ")
    monkeypatch.setattr(engine.draft_sources, "HEADER_WORDS", {"python": {"try": ":", "else": ":"}})
    seeds.clear()
    assert not _infill(eng, prefix, suffix).middle.startswith(("try", "else"))
    assert seeds == [None]  # neither could stand: no header candidate


def test_other_lines_and_one_candidate_get_no_header(eng, monkeypatch) -> None:
    def refuse(self, logits):
        raise AssertionError("no header candidate here")

    monkeypatch.setattr(engine.request.InfillRun, "_header_seed", refuse)
    _infill(eng, "def total(xs):\n    s = 0\n    ", "\n    return s\n")  # the next line at the same level
    _infill(eng, "def total(xs):\n    s = 0\n    for x in xs:\n        ", "\n    return s\n")  # a block's body
    prefix, suffix = MUST_OPEN[1]
    assert _infill(eng, prefix, suffix, candidates=1).candidates_tried == 1  # the client asked for one candidate
    assert _infill(eng, prefix, suffix, constrained=False).candidates_tried == 1


def test_a_workspace_draft_to_show_goes_before_the_header(eng, monkeypatch) -> None:
    """Where the model's candidates give nothing, a workspace draft the final check accepts
    is shown (`_draft_fallback`): with one there, no header candidate is tried."""
    prefix, suffix = MUST_OPEN[1]
    monkeypatch.setattr(engine.request.InfillRun, "_draft_fallback", lambda self: ("for x in xs:", "a.py:3"))
    result = _infill(eng, prefix, suffix)
    assert result.middle == "for x in xs:"
    assert result.candidates_tried == 2  # the model's first candidate and the last resort, no header



@pytest.mark.parametrize(
    "prefix, suffix, expected",
    [
        ("function f(xs) {\n  let s = 0;\n  ", "\n    s += 1;\n  }\n  return s;\n}\n", ""),  # the `}` below needs a `{` here
        ("function f(xs) {\n  let s = 0;\n", "    s += 1;\n  }\n  return s;\n}\n", "  "),  # at the line's start
        ("function f(xs) {\n  let s = 0;\n  ", "\n  return s;\n}\n", None),  # the next line at the same level
        ("function f(xs) {\n  let s = 0;\n  for", "\n    s += 1;\n  }\n}\n", None),  # code typed
        ("const x = [\n  ", "\n    1,\n  ];\n", None),  # deeper, but nothing needs a `{`
        # a class body: the line is a method's header (`if (x) {` would be a method named `if`)
        ("class A {\n  constructor() {\n    this.a = 1;\n  }\n\n  ", "\n    return this.a;\n  }\n}\n", None),
    ],
)
def test_a_javascript_line_whose_brace_a_closer_below_needs_is_found(prefix, suffix, expected) -> None:
    assert grammars.constraint_for("javascript").opens_block(prefix, suffix) == expected


def test_a_javascript_line_that_must_open_a_block_is_answered_with_a_header(eng, monkeypatch) -> None:
    prefix = "function parse(text) {\n  const parts = text.split(',');\n  "
    suffix = "\n    return null;\n  }\n  return parts;\n}\n"
    result = _infill(eng, prefix, suffix, language="javascript")
    assert result.middle.startswith(tuple(HEADER_WORDS["javascript"])) and result.middle.rstrip().endswith("{")
    assert grammars.constraint_for("javascript").accept_final(prefix, result.middle, suffix)
    monkeypatch.setattr(engine.draft_sources, "HEADER_WORDS", {})
    assert _infill(eng, prefix, suffix, language="javascript").middle == ""
