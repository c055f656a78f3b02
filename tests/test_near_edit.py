"""Editing a workspace line into the line that fits (engine/near_edit.py, engine/request.py).

The thresholds are pinned per test (always / never start, keep or edit) so that these
tests check the mechanism; the fitted values are measured in docs/workspace.md."""
from __future__ import annotations

import math

import pytest
import torch

import engine
import engine.drafts as drafts_module
import engine.near_edit as near_edit
from engine.workspace import WorkspaceContext

# The line after `x = compute(a)` elsewhere in the buffer is `return x`.
PREFIX = "def f(a):\n    x = compute(a)\n    return x\n\n\ndef g(a):\n    x = compute(a)\n    "
SUFFIX = "\n\n\nprint(g(1))\n"


@pytest.fixture(scope="module")
def eng():
    return engine.load()


@pytest.fixture
def no_draft_kept(monkeypatch):
    monkeypatch.setattr(drafts_module, "ACCEPT", 1.1)  # no probability reaches it: the edit path decides
    monkeypatch.setattr(near_edit, "EDIT_FLOOR", 0.0)


def test_the_likeliest_draft_starts_the_canvas_and_is_kept_when_the_model_stands_by_it(eng, monkeypatch, no_draft_kept) -> None:
    monkeypatch.setattr(near_edit, "KEEP_LOGP", -math.inf)
    monkeypatch.setattr(near_edit, "EDIT_THRESHOLD", 1.0)  # no token is rewritten
    steps = list(eng.stream(PREFIX, SUFFIX, "python", workspace=WorkspaceContext(), filename="pkg/mod.py", edit_drafts=True, edit_threshold=1.0))
    result = steps[-1].result
    # The second step shows the draft written as the canvas's start.
    assert "".join(p for p in steps[1].canvas if p is not None).startswith("return x")
    assert result.middle == "return x"
    assert result.source == "workspace" and result.to_dict()["origin"] == "pkg/mod.py:3"
    assert result.forwards <= near_edit.MAX_FORWARDS
    assert result.candidates_tried == 1


def test_an_edit_the_model_is_not_sure_of_gives_way_to_its_own_candidate(eng, monkeypatch, no_draft_kept) -> None:
    monkeypatch.setattr(near_edit, "KEEP_LOGP", math.inf)  # never sure
    result = eng.infill(PREFIX, SUFFIX, "python", workspace=WorkspaceContext(), filename="pkg/mod.py", edit_drafts=True)
    assert result.source == "model" and result.draft_origin == ""
    assert result.candidates_tried >= 2
    assert result.replayed >= 1  # the model's own candidate replays the first pass: no forward spent again


def test_a_rewritten_draft_is_reported_as_edited(eng, monkeypatch, no_draft_kept) -> None:
    monkeypatch.setattr(near_edit, "KEEP_LOGP", -math.inf)
    monkeypatch.setattr(near_edit, "EDIT_THRESHOLD", 0.0)  # every token whose best guess differs is rewritten
    prefix = "def f(a):\n    x = compute(a)\n    return x + 1 + 2 + 3\n\n\ndef g(a):\n    x = compute(a)\n    "
    result = eng.infill(prefix, SUFFIX, "python", workspace=WorkspaceContext(), filename="pkg/mod.py", edit_drafts=True)
    assert result.edits >= 1
    if result.middle.strip() != "return x + 1 + 2 + 3":
        assert result.source == "edited" and result.draft_origin == "pkg/mod.py:3"
    assert "\n" not in result.middle.strip()  # one line is edited


def test_editing_is_off_unless_asked(eng, monkeypatch, no_draft_kept) -> None:
    calls = []
    monkeypatch.setattr(near_edit, "edit_canvas_length", lambda *a: calls.append(a) or 16)
    result = eng.infill(PREFIX, SUFFIX, "python", workspace=WorkspaceContext())
    assert not calls and result.source == "model"


def test_keeps_reads_the_last_pass_probabilities(eng) -> None:
    tok = eng.tokenizer
    ids = tok.encode("return x\n") + [tok.eom_id]
    sure = torch.full((len(ids) + 2, tok.vocab_size), -20.0)
    sure[torch.arange(len(ids)), torch.tensor(ids)] = 20.0
    assert near_edit.keeps(tok, ids + [tok.eom_id] * 2, sure)
    unsure = torch.zeros((len(ids) + 2, tok.vocab_size))
    assert not near_edit.keeps(tok, ids + [tok.eom_id] * 2, unsure)
    assert not near_edit.keeps(tok, ids[:2] + [tok.mask_id] + ids[3:], sure)  # a hole left: not a line
    assert not near_edit.keeps(tok, ids, None)


def test_start_for_needs_the_floor_and_the_setting() -> None:
    class Check:
        probabilities = (0.01, 0.3, 0.2)

    assert near_edit.start_for(Check(), True) == 1
    assert near_edit.start_for(Check(), False) is None
    assert near_edit.start_for(type("C", (), {"probabilities": (0.001,)})(), True) is None


def test_every_surface_names_an_edited_line_as_such() -> None:
    from engine.types import InfillResult
    from infill_lsp.cli import _source_note

    edited = InfillResult("return y", 2, 3, 1.0, "end_of_middle", draft="edited", draft_origin="pkg/mod.py:3")
    assert edited.to_dict()["source"] == "edited" and edited.to_dict()["origin"] == "pkg/mod.py:3"
    assert _source_note(edited) == ", edited from pkg/mod.py:3"
    kept = InfillResult("return x", 2, 1, 1.0, "end_of_middle", draft="workspace", draft_origin="pkg/mod.py:3")
    assert _source_note(kept) == ", from pkg/mod.py:3"
    assert _source_note(InfillResult("x", 1, 1, 1.0, "end_of_middle")) == ""
