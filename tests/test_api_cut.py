"""The engine's last step before a middle is shown: the longest acceptable form of it."""
import grammars
from engine.answer import accepted_cut, shows_something

PY = grammars.constraint_for("python")


def test_a_valid_middle_is_kept_whole():
    assert accepted_cut(PY, "def f(x):\n    ", "return x + 1\n", "\nprint(f(1))\n") == "return x + 1\n"


def test_a_first_line_running_past_its_statement_is_cut_at_a_word_end():
    # `if x > 0 and foo(:` does not parse; the longest prefix of the line that does is kept.
    assert accepted_cut(PY, "def f(x):\n    if ", "x > 0 and foo(", ":\n        return 1\n") == "x > 0 and foo"


def test_whitespace_and_empty_comments_are_never_suggestions():
    prefix, suffix = "def f():\n    x = 1\n", "    return x\n"
    assert accepted_cut(PY, prefix, "    \n", suffix) is None
    assert accepted_cut(PY, prefix, "    #\n", suffix) is None
    assert accepted_cut(PY, prefix, "    # double x\n", suffix) == "    # double x\n"
    assert not shows_something(" // ") and not shows_something("#") and shows_something("x")
