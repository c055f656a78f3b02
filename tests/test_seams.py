"""Issue 16, item 3: the seams between a middle and the text around the cursor."""
import engine
from engine.seams import drop_doubled_newline, only_brackets_after_closer, tidy_middle


def test_the_suffix_newline_is_never_doubled():
    assert drop_doubled_newline("self\n", "\n    return result\n") == "self"
    assert drop_doubled_newline("x = 1\n    ", "\nprint(x)") == "x = 1"
    assert drop_doubled_newline("(value)\r\n", "\r\n") == "(value)"
    assert drop_doubled_newline("a\n", "  \nb") == "a"  # spaces before the suffix's break


def test_a_newline_the_suffix_does_not_have_is_kept():
    assert drop_doubled_newline("x = 1\n", "y = 2\n") == "x = 1\n"
    assert drop_doubled_newline("x = 1", "\ny = 2\n") == "x = 1"
    assert drop_doubled_newline("if x:\n    y()\n", "") == "if x:\n    y()\n"


def test_no_ghost_brackets_after_a_closed_call():
    assert only_brackets_after_closer("    total = sum(values)", "()")
    assert only_brackets_after_closer("x = f(a)", ")")
    assert not only_brackets_after_closer("    total = sum", "()")  # calling a name is fine
    assert not only_brackets_after_closer("x = f(a)", ".strip()")
    assert tidy_middle("    total = sum(values)", "()\n", "\n") == ""


def test_the_engine_never_returns_a_doubled_newline_or_ghost_brackets():
    # The embedded model answered `self\n`, `(value)\n` and `()` here before the fix.
    eng = engine.load()
    cases = [
        ("def mean(values):\n    result = ", "\n    return result\n"),
        ("def mean(values):\n    total = ", "\n    return total / len(values)\n"),
        ("def mean(values):\n    total = sum(values)", "\n    return total / len(values)\n"),
    ]
    for prefix, suffix in cases:
        for constrained in (True, False):
            middle = eng.infill(prefix, suffix, language="python", constrained=constrained).middle
            assert not middle.endswith("\n"), (prefix, middle)
            assert not only_brackets_after_closer(prefix, middle), (prefix, middle)
