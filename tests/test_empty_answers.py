"""An empty answer says what happened (issue 26, defect 6): "every middle the model wrote
would have left the code unparseable" was said where the model had written nothing at all,
and its hint `--no-constrained` then gave an empty middle too."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from engine.api import Engine
from engine.modeldir import load_tokenizer
from infill_lsp import cli

ROOT = Path(__file__).resolve().parents[1]
PREFIX = "def f(x):\n    return x\n"
SUFFIX = "\n\nprint(f(1))\n"


class OneAnswerModel:
    """Predicts `token` at every canvas position, sure of it: a model with one thing to say."""

    def __init__(self, tok, token: int) -> None:
        self.tok, self.token = tok, token

    def encode_context(self, prefix_ids, suffix_ids, reuse=None):
        return (tuple(prefix_ids), tuple(suffix_ids))

    def canvas_logits(self, cache, canvas_ids):
        logits = torch.full((*canvas_ids.shape, self.tok.vocab_size), -20.0)
        logits[..., self.token] = 0.0
        return logits


@pytest.fixture(scope="module")
def tok(tiny_model_dir):
    return load_tokenizer(tiny_model_dir)


def test_a_model_that_proposes_nothing_is_not_called_refused(tok):
    eng = Engine(OneAnswerModel(tok, tok.eom_id), tok)
    result = eng.infill(PREFIX, SUFFIX, language="python")
    assert result.middle == "" and result.candidates_tried == 2
    assert result.stop_reason == "end_of_middle"  # was "rejected": nothing was refused
    message = cli.explain_empty(result.stop_reason)
    assert "proposed nothing" in message and "unparseable" not in message and "--no-constrained" not in message


def test_refused_text_is_called_refused_and_the_hint_shows_what_the_check_hid(tok):
    closer = tok.encode(")")[0]
    eng = Engine(OneAnswerModel(tok, closer), tok)
    result = eng.infill(PREFIX, SUFFIX, language="python", max_tokens=8)
    assert result.middle == "" and result.stop_reason == "rejected"
    raw = eng.infill(PREFIX, SUFFIX, language="python", max_tokens=8, constrained=False).middle
    assert raw.strip().startswith(")")
    message = cli.explain_empty(result.stop_reason, raw)
    assert "refused what the model wrote" in message and "--no-constrained shows the model's raw text (')" in message
    # Refused, but without the check the answer would be empty too: no hint.
    assert "--no-constrained" not in cli.explain_empty("rejected", "\n")


@pytest.mark.parametrize("line, column", [(15, 23), (12, 1), (9, 5), (16, 9)])
def test_infill_complete_on_the_sample_says_what_happened(line, column, capsys):
    """The embedded model on examples/sample.py, where the issue was reproduced: the hint is
    given exactly when --no-constrained shows something, "unparseable" only for a refusal."""
    sample = ROOT / "examples" / "sample.py"
    assert cli.main(["complete", str(sample), "--line", str(line), "--column", str(column)]) == 0
    out = capsys.readouterr()
    if out.out.strip():
        return  # a suggestion was shown: nothing to explain
    assert cli.main(["complete", str(sample), "--line", str(line), "--column", str(column), "--no-constrained"]) == 0
    raw = capsys.readouterr().out
    assert ("--no-constrained" in out.err) == bool(raw.strip()), (out.err, raw)
    assert ("unparseable" in out.err) == ("stop: rejected" in out.err), out.err
