"""Token healing at the cursor (engine/window.py, Engine.job): a prefix ending in spaces or
tabs is cut before them, the model writes the whitespace itself, and the middle comes
back relative to the user's cursor (docs/ladder.md has the measurement behind it)."""
from __future__ import annotations

import pytest

import engine
from engine.window import heal_cursor, unheal_middle, unheal_pieces

BLOCK = "def f(x):\n    if x:\n        "  # the cursor after Enter in a block
AFTER = "\n    return 0\n"


@pytest.mark.parametrize(
    "prefix, kept, removed",
    [
        (BLOCK, "def f(x):\n    if x:\n", "        "),  # indentation after a newline
        ("x =  ", "x =", "  "),  # spaces mid-line: " foo" is one token, so the space goes too
        ("if x:\n\t\t", "if x:\n", "\t\t"),  # tabs
        ("if x:\r\n    ", "if x:\r\n", "    "),  # CRLF: the newline stays, only the indentation goes
        ("", "", ""),  # empty prefix
        ("    ", "", "    "),  # nothing but indentation
        ("x = 1\n", "x = 1\n", ""),  # a line start with no indentation is a token boundary already
        ("    retu", "    retu", ""),  # cursor inside a word: left alone (module docstring says why)
    ],
)
def test_heal_cursor_cuts_trailing_spaces_and_tabs_only(prefix, kept, removed):
    assert heal_cursor(prefix) == (kept, removed)
    assert kept + removed == prefix


def test_unheal_drops_the_models_leading_whitespace_whatever_its_width():
    assert unheal_middle("        return x\n", "        ") == "return x\n"
    assert unheal_middle("    return x\n", "        ") == "return x\n"  # the user's indentation wins
    assert unheal_middle("\treturn x", "    ") == "return x"
    assert unheal_middle(" foo(1)", " ") == "foo(1)"  # mid-line: the model's spaced word
    assert unheal_middle("foo(1)", " ") == "foo(1)"  # no space written: nothing to drop
    assert unheal_middle("\n    y = 2", "    ") == "\n    y = 2"  # a newline first is kept as written
    assert unheal_middle("   ", "    ") == ""
    assert unheal_middle("    return x", "") == "    return x"  # nothing healed: untouched


def test_unheal_pieces_shows_a_streamed_canvas_from_the_real_cursor():
    assert unheal_pieces(["       ", " return", " x", None], "        ") == ["", "return", " x", None]
    assert unheal_pieces([None, " return"], "    ") == [None, " return"]  # masked first: nothing yet to drop
    assert unheal_pieces(["", "\t", "y"], "\t") == ["", "", "y"]
    assert unheal_pieces(["    ", " x"], "") == ["    ", " x"]


@pytest.fixture(scope="module")
def shipped():
    return engine.load()


def test_the_shipped_model_sees_the_healed_prefix_and_does_not_double_the_indentation(shipped):
    steps = list(shipped.stream(BLOCK, AFTER, language="python", constrained=False))
    context = shipped._context_cache
    tok = shipped.tokenizer
    # The model read the prefix up to the newline, not the indentation token after it.
    assert tok.decode(context.prefix_ids[-3:]).endswith(":\n")
    middle = steps[-1].result.middle
    assert middle.strip(), "the healed request answers (unhealed, this model writes whitespace first)"
    assert not middle[0].isspace(), f"the indentation the user typed is not written again: {middle!r}"
    for step in steps[:-1]:  # what a live client is shown on the way is relative to the cursor too
        shown = "".join(piece for piece in step.canvas if piece)
        assert not shown[:1].isspace(), shown


def test_without_healing_the_same_request_writes_the_indentation_again(shipped):
    """The defect healing fixes, kept visible through the knob: the prefix ends in an
    indentation token and the model writes another indentation after it."""
    middle = shipped.infill(BLOCK, AFTER, language="python", constrained=False, heal_cursor=False).middle
    assert middle[:1].isspace()


def test_healing_holds_with_the_constraint_and_at_edge_prefixes(shipped):
    constrained = shipped.infill(BLOCK, AFTER, language="python").middle
    assert constrained.strip() and not constrained[0].isspace()
    assert (BLOCK + constrained).startswith(BLOCK)
    # A prefix of indentation alone heals to an empty prefix: the request still runs.
    alone = shipped.infill("    ", "\nprint(1)\n", language="python")
    assert not alone.middle[:1].isspace()
    # Mid-line spaces and tabs: answered from the cursor, never starting with whitespace.
    for prefix in ("def f(x):\n    return x +  ", "def f(x):\n\tif x:\n\t\t", "def f(x):\r\n    if x:\r\n        "):
        middle = shipped.infill(prefix, "\n", language="python", constrained=False).middle
        assert not middle[:1] in (" ", "\t"), (prefix, middle)


class _Writes:
    """A model that writes `text` (its tokens, then the end of the middle) whatever it reads."""

    def __init__(self, tok, text: str):
        self.tok, self.ids = tok, tok.encode(text) + [tok.eom_id]

    def encode_context(self, prefix_ids, suffix_ids, reuse=None):
        return None

    def canvas_logits(self, context, canvas_ids):
        import torch

        n = canvas_ids.shape[1]
        logits = torch.full((1, n, self.tok.vocab_size), -30.0)
        for i in range(n):
            logits[0, i, self.ids[min(i, len(self.ids) - 1)]] = 10.0
        return logits


def test_the_syntax_checks_judge_the_text_the_user_gets(tiny_model_dir):
    """The model indents its line 4 spaces where the user's cursor sits at 8: as written
    after the healed prefix that is a dedent the suffix does not match, but the user gets
    the line at their cursor (unheal_middle), which is valid. The constraint judged the
    model's text and the answer came back empty (docs/ladder.md, "Empty answers under
    the constraint"); it must judge the user's."""
    from engine.api import Engine
    from engine.modeldir import load_tokenizer

    tok = load_tokenizer(tiny_model_dir)
    eng = Engine(_Writes(tok, "    total += b\n"), tok)
    prefix, suffix = "def f(xs, ys):\n    for a in xs:\n        for b in ys:\n            ", "            print(b)\n    return 0\n"
    n = len(tok.encode("    total += b\n")) + 1
    result = eng.infill(prefix, suffix, language="python", max_tokens=n, block_size=n, copy_weight=0.0)
    assert result.middle == "total += b\n", (result.middle, result.stop_reason)
