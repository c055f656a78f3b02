"""The final check of a Python splice also asks CPython's parser (issue 26, defect 2).

tree-sitter-python accepts a statement indented deeper than its block: `infill complete`
returned a bare `return` for a removed `if` line and an assignment for a removed `def` line,
and both left the file failing CPython with `IndentationError: unexpected indent`.
"""
from __future__ import annotations

import ast

import pytest
import tree_sitter as ts

import grammars
from grammars.python_check import MAX_WINDOW_BYTES, adds_python_error
from grammars.window import PREFIX_WINDOW_CHARS

# Real code: textwrap.TextWrapper from CPython 3.11's standard library (shortened).
TEXTWRAP = '''\
class TextWrapper:
    def _handle_long_word(self, reversed_chunks, cur_line, cur_len, width):
        if width < 1:
            space_left = 1
        else:
            space_left = width - cur_len
        if self.break_long_words:
            end = space_left
            chunk = reversed_chunks[-1]
            if self.break_on_hyphens and len(chunk) > space_left:
                hyphen = chunk.rfind('-', 0, space_left)
                if hyphen > 0 and any(c != '-' for c in chunk[:hyphen]):
                    end = hyphen + 1
            cur_line.append(chunk[:end])
            reversed_chunks[-1] = chunk[end:]
        elif not cur_line:
            cur_line.append(reversed_chunks.pop())

    def _split_chunks(self, text):
        text = self._munge_whitespace(text)
        return self._split(text)
'''


def _hole(source: str, line_text: str) -> tuple[str, str, str]:
    """prefix, removed line (stripped), suffix: the line's text removed, its indentation kept."""
    start = source.index(line_text)
    indent = len(line_text) - len(line_text.lstrip())
    return source[: start + indent], line_text.strip(), source[start + len(line_text.rstrip("\n")) :]


def _cpython_parses(text: str) -> bool:
    try:
        ast.parse(text)
    except SyntaxError:
        return False
    return True


def _tree_sitter_parses(text: str) -> bool:
    parser = ts.Parser(grammars.get("python").ts_language())
    return not parser.parse(text.encode()).root_node.has_error


@pytest.fixture()
def python():
    return grammars.constraint_for("python")


@pytest.mark.parametrize(
    "line, wrong, hole_is_an_error",
    [
        # The removed `if`: its body is left one level too deep.
        ("                if hyphen > 0 and any(c != '-' for c in chunk[:hyphen]):\n", "return x", True),
        ("            if self.break_on_hyphens and len(chunk) > space_left:\n", "hyphen = 0", True),
        # The removed `def`: its body dedents to the previous method's body, which parses.
        ("    def _split_chunks(self, text):\n", "text = self._munge_whitespace(text)", False),
    ],
)
def test_a_middle_cpython_refuses_is_refused_and_the_true_line_accepted(python, line, wrong, hole_is_an_error):
    prefix, true, suffix = _hole(TEXTWRAP, line)
    assert _tree_sitter_parses(prefix + wrong + suffix)  # what let it through before
    assert not _cpython_parses(prefix + wrong + suffix)
    assert not python.accept_final(prefix, wrong, suffix)
    assert not python.accept_final(prefix, wrong, suffix)
    assert python.accept_final(prefix, true, suffix)
    # The hole's own error must be repaired; where the empty hole parses it may stay empty.
    assert python.accept_final(prefix, "", suffix) == (not hole_is_an_error)


def test_a_window_that_starts_inside_a_class_is_judged_too(python):
    # A window may start inside a block (the file is one class bigger than the biggest
    # window, or the window's first line is blank and the next indented, as in CPython's
    # textwrap.py): CPython alone would stop at its first line whatever the middle.
    line = "            if self.break_on_hyphens and len(chunk) > space_left:\n"
    prefix, true, suffix = _hole(TEXTWRAP, line)
    prefix = prefix.split("\n", 2)[2]  # from inside the method
    assert prefix.startswith("        if width < 1:")
    assert adds_python_error(prefix, "hyphen = 0", suffix)
    assert not adds_python_error(prefix, true, suffix)
    assert not adds_python_error(prefix, "return x", suffix.replace("                hyphen", "            hyphen", 1))


def test_an_error_of_the_file_elsewhere_does_not_refuse_every_middle(python):
    # The file is being edited further down: CPython stops there, with or without the
    # middle, so it cannot judge it and tree-sitter's verdict stands.
    source = TEXTWRAP + "\n\ndef unfinished(:\n    pass\n"
    prefix, true, suffix = _hole(source, "                if hyphen > 0 and any(c != '-' for c in chunk[:hyphen]):\n")
    assert python.accept_final(prefix, true, suffix)
    assert not python.accept_final(prefix, "return x", suffix)


def test_the_check_parses_only_and_ignores_warnings(recwarn):
    # An invalid escape is a SyntaxWarning, not an error; and nothing is ever run.
    assert not adds_python_error("x = '\\d'\nif x:\n    ", "print(x)", "\n")
    assert not adds_python_error("", "import os; os._exit(3)", "\n")
    assert not [w for w in recwarn if issubclass(w.category, SyntaxWarning)]


def test_a_window_too_big_to_parse_quickly_is_trimmed_to_its_top_level_statements():
    filler = "".join(f"def f{i}():\n    return {i}\n\n" for i in range(MAX_WINDOW_BYTES // 20))
    prefix, _, suffix = _hole(TEXTWRAP, "        if self.break_long_words:\n")
    assert adds_python_error(filler + prefix, "return x", suffix + filler)
    assert not adds_python_error(filler + prefix, "if self.break_long_words:", suffix + filler)


def test_a_dedent_error_below_the_middle_is_the_middles_when_the_hole_had_its_own():
    # The empty hole (`if :`) has its own error on the cursor's line, so CPython's first
    # error of the splice used to be blamed on the middle only on the lines right after it.
    # This middle closes the condition, then opens a method whose body the suffix indents
    # 12: CPython stops where the suffix dedents to 8, two lines below, and the broken
    # file was shown (tree-sitter accepts it).
    prefix = "class A:\n    def f(self, x):\n        result = x\n        if "
    suffix = ":\n            return result\n        return 0\n"
    middle = "result is None:\n            return result\n\n    def g(self)"
    assert adds_python_error(prefix, middle, suffix)
    assert not grammars.constraint_for("python").accept_final(prefix, middle, suffix)
    assert not adds_python_error(prefix, "result is None", suffix)  # the true middle


@pytest.mark.parametrize(
    "prefix, suffix, expected",
    [
        ("def f(x):\n    y = 1\n        ", "\n    return y\n", True),  # deeper than its block: unexpected indent
        ("def f(x):\n    y = 1\n        yield ", "\n    return y\n", True),  # whatever is typed after it
        ("def f(x):\n    if x:\n  ", "\n    return y\n", False),  # not indented enough: the middle may write the rest
        ("def f(x):\n    if x:\n        y = 1\n      ", "\n    return y\n", False),  # between two levels: the middle may go on to the deeper
        ("def f(x):\n    if x:\n            ", "\n        y\n    return y\n", True),  # the next line's dedent matches no level
        ("def f(x):\n    y = 1\n    ", "\n    return y\n", False),  # the block's own indentation
        ("def f(x):\n    if x:\n        ", "\n    return y\n", False),  # a new block's body
        ("def f(x):\n    if x:\n            ", "\n                y\n", False),  # a deeper next line: `if y:` could open it
        ("def f(x):\n    y = (1,\n            ", "\n    )\n", False),  # inside brackets indentation is free
        ("x = '''\n        ", "\n'''\n", False),  # inside a string
        ("def f(x):\n    y = 1\n", "\n", False),  # at the line's start: the middle writes the indentation
    ],
)
def test_a_line_indented_where_no_code_may_start_is_found(prefix, suffix, expected):
    from grammars.python_check import over_indented

    assert over_indented(prefix, suffix) is expected
    # Where it says so, the final check indeed refuses code on that line.
    if expected:
        assert not grammars.constraint_for("python").accept_final(prefix, "pass", suffix)


@pytest.mark.parametrize(
    "prefix, suffix, expected",
    [
        # after the indentation, the next line deeper than anything opened: a header, typed indentation
        ("def f(xs):\n    s = 0\n    ", "\n        s += 1\n    return s\n", ""),
        # at a line's start before that deeper line: the header takes the previous line's indentation
        ("def f(xs):\n    s = 0\n", "        s += 1\n    return s\n", "    "),
        ("def f(xs):\n    s = 0\n    ", "\n    return s\n", None),  # the next line at the same level: any statement
        ("def f(xs):\n    if xs:\n        ", "\n        return 1\n", None),  # the block is open already
        ("def f(xs):\n    y = g(\n        ", "\n            1)\n", None),  # inside brackets indentation is free
        ('def f():\n    """Doc.\n    ', "\n        more\n    \"\"\"\n", None),  # inside a string
        ("def f(xs):\n    s = 0\n    for", "\n        s += 1\n", None),  # code typed: the model goes on from it
        ("def f(xs):\n    s = 0\n    ", "x\n        s += 1\n", None),  # text after the cursor on its line
    ],
)
def test_a_line_that_must_open_a_block_is_found(prefix, suffix, expected):
    from grammars.python_check import opens_block

    assert opens_block(prefix, suffix) == expected
    check = grammars.constraint_for("python")
    assert check.opens_block(prefix, suffix) == expected
    if expected is not None:  # a plain statement is refused there, a header passes
        end = "\n" if suffix.split("\n", 1)[0].strip() else ""
        assert not check.accept_final(prefix, expected + "pass" + end, suffix)
        assert check.accept_final(prefix, expected + "for x in xs:" + end, suffix)
