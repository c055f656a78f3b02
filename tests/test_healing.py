"""Token healing at the cursor (engine/window.py, Engine.job): a prefix ending in spaces or
tabs is cut before them, the model writes the whitespace itself, and the middle comes
back relative to the user's cursor (docs/ladder.md has the measurement behind it)."""
from __future__ import annotations

import pytest

import engine
from engine.healing import completed_indentation, heal_cursor, heal_word, unheal_middle, unheal_pieces
from lab.fixtures.scripted_model import WritesText as _Writes  # writes its text whatever it reads

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
        ("    retu", "    retu", ""),  # cursor inside a word: heal_word's (below)
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


# A few tokens: healing decides the first line; past it this model writes `return 0` again
# and again, a loop answered empty (engine/degenerate.py).
FIRST_LINE_TOKENS = 4


def test_the_shipped_model_sees_the_healed_prefix_and_does_not_double_the_indentation(shipped):
    steps = list(shipped.stream(BLOCK, AFTER, language="python", constrained=False, max_tokens=FIRST_LINE_TOKENS))
    context = shipped.contexts.last
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
    middle = shipped.infill(BLOCK, AFTER, language="python", constrained=False, heal_cursor=False, max_tokens=FIRST_LINE_TOKENS).middle
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


# ------------------------------------------------------------ a cursor inside a word
@pytest.fixture(scope="module")
def shipped_tok():
    return engine.load(None).tokenizer


@pytest.mark.parametrize(
    "prefix, kept, removed",
    [
        ("    while len(entri", "    while len(", "entri"),  # `ent` + `ri`: backed off to a word start some token writes whole
        ("x = 1\n        whil", "x = 1\n       ", " whil"),  # the indentation's last space goes with the word, as the tokenizer glues it
        ("x = 1\nimpo", "x = 1\n", "impo"),  # a word at a line start
        ("x.append(a1", "x.append(a", "1"),
        ("foo(", "foo(", ""),  # not inside a word
        ("foo  ", "foo  ", ""),  # trailing whitespace is heal_cursor's
        ("", "", ""),
    ],
)
def test_heal_word_backs_off_the_words_last_tokens(shipped_tok, prefix, kept, removed):
    assert heal_word(prefix, shipped_tok) == (kept, removed)
    if removed:
        assert "\n" not in removed and shipped_tok.starting_with(removed)  # some token can write it again
        assert all(shipped_tok.piece(t).startswith(removed) for t in shipped_tok.starting_with(removed))


def test_a_healed_word_comes_off_the_middle_exactly():
    assert unheal_middle("entries):\n", "entri", exact=True) == "es):\n"
    assert unheal_middle("entri", "entri", exact=True) == ""
    assert unheal_middle("items)", "entri", exact=True) == ""  # not the user's word: no answer
    assert unheal_pieces(["ent", "ries", None, ")"], "entri", exact=True) == ["", "es", None, ")"]
    assert unheal_pieces([None, "x"], "entri", exact=True) == [None, "x"]


class _PrefersAnotherWord(_Writes):
    """Writes `text`, but at the middle's first position likes `other` better."""

    def __init__(self, tok, text: str, other: str):
        super().__init__(tok, text)
        self.other = tok.encode(other)[0]

    def canvas_logits(self, context, canvas_ids):
        logits = super().canvas_logits(context, canvas_ids)
        logits[0, 0, self.other] = 12.0
        return logits


@pytest.mark.parametrize("constrained", [False, True])
def test_the_middles_first_token_writes_the_healed_word_again(shipped_tok, constrained):
    """Inside `entri`, a model that likes `items` best at the first position still writes
    `entries` there: the first position may only hold a token that starts with the
    backed-off text, and the answer is the rest of the word and what follows."""
    from engine.api import Engine

    tok = shipped_tok
    eng = Engine(_PrefersAnotherWord(tok, "entries)\n", "items"), tok)
    n = len(tok.encode("entries)\n")) + 1
    settings = dict(max_tokens=n, block_size=n, copy_weight=0.0, constrained=constrained, language="python")
    healed = eng.infill("n = len(entri", "", **settings)
    assert healed.middle == "es)\n", (healed.middle, healed.stop_reason)
    plain = eng.infill("n = len(entri", "", heal_word=False, **settings)
    assert not plain.middle.startswith("es")  # without healing the model's favourite stands


def test_an_indentation_the_user_is_still_typing_is_completed_when_that_is_what_parses():
    assert completed_indentation("        print(x)\n", "   ") == "     print(x)\n"
    assert completed_indentation("    print(x)\n", "    ") is None  # the same run: the user's indentation stands
    assert completed_indentation("  print(x)\n", "    ") is None  # shorter: the user's stands
    assert completed_indentation("\tprint(x)\n", "  ") is None  # another kind of whitespace
    assert completed_indentation("        x", "") is None


def test_the_engine_completes_a_half_typed_indentation(shipped_tok):
    """The user has typed 3 of the 8 spaces a loop body needs; the model writes the line
    with its 8. At the user's cursor as it stands (3 spaces + `print(x)`) the file breaks;
    with the model's other 5 it parses, and that is the answer."""
    from engine.api import Engine

    tok = shipped_tok
    text = "        print(x)\n"
    eng = Engine(_Writes(tok, text), tok)
    n = len(tok.encode(text)) + 1
    prefix, suffix = "def f(xs):\n    for x in xs:\n   ", "    return 0\n"
    result = eng.infill(prefix, suffix, language="python", max_tokens=n, block_size=n, copy_weight=0.0)
    assert result.middle == "     print(x)\n", (result.middle, result.stop_reason)
