"""A cursor inside a docstring being written: prose there is inert (it cannot break the
file), so the checks accept a middle that does not close the string, and the engine ends
the suggestion at its first line (grammars/window.py `Window.inert`, engine/api.py)."""
from __future__ import annotations

import pytest

import grammars
from grammars.lexical import open_multiline_string
from grammars.registry import get as spec_for
from lab.fixtures.scripted_model import WritesText

# The user is writing a line of a method's docstring; the docstring goes on below the
# cursor and closes, then the file goes on with code and another docstring.
PREFIX = 'class Cache:\n    def lookup(self, key):\n        """The rest of a sugg'
SUFFIX = ('\n\n        Keys are strings.\n        """\n        return self.entries.get(key)\n\n'
          '    def store(self, key, value):\n        """Keep it."""\n        self.entries[key] = value\n')
# The hole was the docstring's closing line: without its quotes the string runs on to the
# next docstring's, whose quotes the parser pairs with the open ones, and the code below
# flips between code and string. Prose there leaves the file broken: the middle must close
# the string (grammars/window.py `_runaway_string`, docs/grammars.md).
RUNAWAY_SUFFIX = '\n        return self.entries.get(key)\n\n    def store(self, key, value):\n        """Keep it."""\n        self.entries[key] = value\n'
# That hole is a line of its own (the cursor alone on it). With prose typed before the
# cursor on its line, the same text is someone writing a docstring above code that has
# none yet: the string runs on just the same, and prose there is what to suggest.
PREFIX_ALONE = 'class Cache:\n    def lookup(self, key):\n        """The rest of a suggestion.\n        '


def test_the_lexer_finds_the_string_the_text_ends_in():
    spec = spec_for("python")
    close, opened = open_multiline_string(spec, PREFIX)
    assert close == '"""' and PREFIX[opened:].startswith('"""The rest')
    assert open_multiline_string(spec, 'x = """done"""\ny = f(') is None
    assert open_multiline_string(spec, "x = 'abc") is None  # a one-line string is the hole's to close


def test_prose_inside_the_docstring_is_accepted_and_closing_it_is_judged_as_code():
    constraint = grammars.constraint_for("python")
    assert constraint.in_string(PREFIX, SUFFIX)
    assert constraint.accept_final(PREFIX, "estion the user is typing through.\n", SUFFIX)
    assert constraint.allows(PREFIX, ["estion", " the", None, None], SUFFIX)
    # Text that closes the string is code again, and this code is broken.
    assert not constraint.accept_final(PREFIX, 'estion."""\n        return (\n', SUFFIX)
    # Quotes completing the delimiter with the prefix's or suffix's count as closing it.
    assert not grammars.constraint_for("python")._windows.get(PREFIX + '""', SUFFIX).inert('"x')
    # A docstring whose closing line was the hole: prose is no repair, closing it is.
    assert not constraint.in_string(PREFIX_ALONE, RUNAWAY_SUFFIX)
    assert not constraint.accept_final(PREFIX_ALONE, "More prose here.", RUNAWAY_SUFFIX)
    assert constraint.accept_final(PREFIX_ALONE, '"""', RUNAWAY_SUFFIX)
    # The same file with prose typed on the cursor's line: a docstring being written.
    assert constraint.in_string(PREFIX, RUNAWAY_SUFFIX)
    assert constraint.accept_final(PREFIX, "estion the user is typing through.\n", RUNAWAY_SUFFIX)
    # Outside a string nothing changes.
    assert not constraint.in_string("def f(x):\n    retu", "\n")
    assert not constraint.accept_final("def f(x):\n    return (", "x +\n", "\n")


@pytest.mark.parametrize("inside, expected", [(True, "gestion the user is typing."), (False, None)])
def test_the_engine_ends_a_docstring_suggestion_at_its_first_line(inside, expected):
    """A model that would write two lines of prose: inside the docstring the suggestion is
    the first (prose has no end the model is sure of; its newline is the suffix's, so the
    seams drop it); in code the model's end stands."""
    import engine
    from engine.api import Engine

    tok = engine.load(None).tokenizer
    text = "gestion the user is typing.\nIt goes on here.\n"
    eng = Engine(WritesText(tok, text), tok)
    n = len(tok.encode(text)) + 1
    prefix = PREFIX if inside else "def f():\n    x = sugg"
    result = eng.infill(prefix, SUFFIX, language="python", max_tokens=n, block_size=n, copy_weight=0.0, heal_word=False)
    if expected is not None:
        assert result.middle == expected, (result.middle, result.stop_reason)
    else:
        assert "\n" not in result.middle.rstrip("\n") or result.middle == "", result.middle  # no prose pass-through in code


def test_the_engine_refuses_prose_where_the_docstring_had_to_close():
    """The same model at a docstring whose closing line was the hole: its prose would leave
    the file broken, and closing the string is the only repair, so nothing is shown."""
    import engine
    from engine.api import Engine

    tok = engine.load(None).tokenizer
    text = "More prose.\nIt goes on here.\n"
    eng = Engine(WritesText(tok, "        " + text), tok)
    n = len(tok.encode("        " + text)) + 1
    result = eng.infill(PREFIX_ALONE, RUNAWAY_SUFFIX, language="python", max_tokens=n, block_size=n, copy_weight=0.0, heal_word=False)
    assert (result.middle, result.stop_reason) == ("", "rejected")


def test_a_template_literal_takes_text_but_not_code():
    # JavaScript's multi-line strings are template literals: `${` opens code inside them.
    constraint = grammars.constraint_for("javascript")
    prefix = "const help = `Usage: tool [options]\n  --verbose  print more"
    suffix = "\n`;\nmodule.exports = help;\n" + "".join(f"const x{i} = {i};\n" for i in range(3))
    window = constraint._windows.get(prefix, suffix)
    assert window.string_close == "`"
    assert window.inert(" about each step")
    assert not window.inert(" ${count(")  # code in the literal: judged as code
    assert not window.inert(" done`; x(")  # closes the literal
