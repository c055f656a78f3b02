"""The final check in a file with other broken lines (grammars/window.py `_without_others`,
`WindowCache`): an error another line makes is the file's, one the hole makes is the
middle's to repair, and a window is never borrowed from another file's text."""
from __future__ import annotations

from grammars import constraint_for

# The `if` block below the cursor lost its closing `}` (another line being edited).
OTHER_BROKEN = (
    "function outer(a) {\n  const first = a + 1\n  ",
    "\n  const third = first * 3\n  if (first) {\n    log(first)\n\n  return third\n}\n\nmodule.exports = outer\n",
)


def test_an_error_another_line_makes_does_not_refuse_the_true_line() -> None:
    check = constraint_for("javascript")
    prefix, suffix = OTHER_BROKEN
    assert check.accept_final(prefix, "const second = first * 2", suffix)
    assert not check.accept_final(prefix, "const second = (first", suffix)  # its own error still counts
    assert not check.accept_final(prefix, "const second = first * * 2", suffix)


def test_a_removed_block_opener_must_still_be_repaired() -> None:
    # The line after the hole is deeper: the hole opened a block, so the error at the
    # construct's closer is the hole's, and a middle that does not open it is refused.
    check = constraint_for("javascript")
    prefix = "var Dayjs = function () {\n  const value = 1\n  "
    suffix = "\n    return value\n  }\n  return 2\n}();\n"
    assert not check.accept_final(prefix, "log(value)", suffix)
    assert check.accept_final(prefix, "if (value) {", suffix)


def test_python_a_block_missing_elsewhere_is_the_files() -> None:
    check = constraint_for("python")
    prefix = "def outer(a):\n    first = a + 1\n    "
    # Below the cursor, an `if` header lost its body's first line... and its body: an
    # indented line with no header above it.
    suffix = "\n    third = first * 3\n        log(first)\n    return third\n"
    assert check.accept_final(prefix, "second = first * 2", suffix)
    assert not check.accept_final(prefix, "second = (first", suffix)


def test_windows_are_not_shared_between_texts_that_differ_far_from_the_cursor() -> None:
    # The same text near the cursor; far below it, one file is an ES module (top-level
    # await is allowed) and the other a CommonJS script (it is not). Each is judged on its
    # own file, whichever is asked first.
    check = constraint_for("javascript")
    prefix, near = "const config = readConfig()\n", "\nconst port = config.port\n"
    padding = "".join(f"const value{i} = {i}\n" for i in range(600))
    module, script = near + padding + "export { port }\n", near + padding + "module.exports = port\n"
    for _ in range(2):
        assert check.accept_final(prefix, "await loadPlugins(config)", module)
        assert not check.accept_final(prefix, "await loadPlugins(config)", script)


def test_an_orphan_else_below_the_hole_is_the_holes_to_repair() -> None:
    # The lost line was `if x: a = 2`; the `else:` right below is its doing, not another's.
    check = constraint_for("python")
    prefix = "def f(x):\n    a = 1\n    "
    suffix = "\n    else:\n        a = 3\n    return a\n"
    assert not check.accept_final(prefix, "b = 2", suffix)
    assert check.accept_final(prefix, "if x: a = 2", suffix)


# The cursor's line closes a bracket (the line before is deeper, so no neutral line
# stands there), and a function below lost a line too (`const y = x *` goes on into
# `return`): that error stays whatever line is put at the cursor, so it is the file's
# (grammars/window.py `_without_others_by_fillers`), though the bracket open at the
# cursor made every error to the end of the text the hole's.
CLOSER_AND_OTHER = (
    "const {\n  a,\n  b,\n",
    "\n\nfunction f(x) {\n  const y = x *\n  return y\n}\n\nmodule.exports = f\n",
)


def test_a_closer_line_is_accepted_with_another_line_broken_below() -> None:
    check = constraint_for("javascript")
    prefix, suffix = CLOSER_AND_OTHER
    assert check.accept_final(prefix, "} = require('m')", suffix)
    # The hole's own error (the bracket left open) is still the middle's to repair.
    assert not check.accept_final(prefix, "c,", suffix)
    assert not check.accept_final(prefix, "} = require('m') (", suffix)


def test_a_lost_opener_alone_in_its_file_is_never_excused() -> None:
    # With no other broken line, some filler (`try {`) repairs every error: nothing is excused.
    check = constraint_for("javascript")
    prefix = "function f() {\n  "
    suffix = "\n    g()\n  } catch (e) {\n    h(e)\n  }\n}\n"
    assert check.accept_final(prefix, "try {", suffix)
    assert not check.accept_final(prefix, "g()", suffix)
    assert not check.accept_final(prefix, "{", suffix)


def test_an_error_every_line_at_the_cursor_keeps_is_the_files() -> None:
    # The function's `if (...) {` line was lost elsewhere: its `}` closes the arrow function
    # early, and the function's own `}` above the hole is then a stray closer. No line at
    # the cursor repairs it (grammars/window.py `Window.stays_with_every_line`), so it does
    # not refuse the true last line; the middle's own errors still do.
    check = constraint_for("javascript")
    prefix = ("const SemVer = require('../classes/semver')\nconst parse = (version, options, throwErrors = false) => {\n  \n"
              "    return version\n  }\n  try {\n    return new SemVer(version, options)\n  } catch (er) {\n"
              "    if (!throwErrors) {\n      return null\n    }\n    throw er\n  }\n}\n\n")
    assert check.accept_final(prefix, "module.exports = parse", "\n")
    assert not check.accept_final(prefix, "module.exports = parse (", "\n")
    assert not check.accept_final(prefix, "module.exports = parse)", "\n")


def test_a_filler_that_swallows_the_rest_repairs_nothing() -> None:
    # Other entries lost their lambda lines; a triple quote at the cursor would turn the
    # rest of the file into a string and so "repair" their errors: it says nothing.
    check = constraint_for("python")
    prefix = '"""The signatures of builtins."""\nimport operator\n\ninfo = dict(\n    abs=[\n        lambda x: None],\n    all=[\n        \n    anext=[\n        '
    suffix = ("\n        lambda aiterator, default: None],\n    any=[\n        lambda iterable: None],\n    bool=[\n        lambda x=False: None],\n"
              "    complex=[\n        \n    delattr=[\n        lambda obj, name: None],\n    dir=[\n        lambda: None,\n        lambda object: None],\n)\n\n\n"
              'def f(x):\n    """Whether x is known."""\n    return x in info\n')
    assert check.accept_final(prefix, "lambda aiterator: None,", suffix)
    assert not check.accept_final(prefix, "lambda aiterator: None, (", suffix)
    assert not check.accept_final(prefix, "lambda aiterator: (", suffix)


def test_python_an_early_error_below_a_block_line_that_no_filler_repairs_is_the_files() -> None:
    # The cursor's line opens a block (no neutral line applies), and `__get__` below lost
    # its `if` line: `return self` is then no function's (CPython's view of tree-sitter's
    # tree). It stays whatever line of FILLER_LINES is at the cursor, so it is the file's
    # (grammars/constraint.py `_file_early_errors`).
    check = constraint_for("python")
    prefix = "class C:\n    def __call__(self, *args):\n        try:\n            return self._partial(*args)\n        "
    suffix = ("\n            if self._should_curry(args, exc):\n                return self.bind(*args)\n            raise\n\n"
              "    def __get__(self, instance, owner):\n        \n            return self\n        return curry(self, instance)\n")
    assert check.accept_final(prefix, "except TypeError as exc:", suffix)
    assert not check.accept_final(prefix, "except TypeError as exc: (", suffix)


def test_an_error_a_comprehension_clause_repairs_stays_the_holes() -> None:
    # The empty hole leaves the comprehension without its `for`: an error the neutral line
    # keeps, so the file's. `| (` moves it and adds a MISSING `)` inside it: a missing token
    # is always the middle's own. `| typing.Callable((` only moves it: the `for x in y`
    # filler (FILLER_LINES) repairs it, so it stays the hole's to repair.
    check = constraint_for("python")
    prefix = ('class Nested:\n    def _option(self, option_name):\n        nested_field = f"{self.name}."\n'
              "        return [\n            field.split(nested_field, 1)[1]\n            ")
    suffix = "\n            if field.startswith(nested_field)\n        ]\n"
    assert check.accept_final(prefix, "for field in getattr(self.root, option_name, set())", suffix)
    assert not check.accept_final(prefix, "| (", suffix)
    assert not check.accept_final(prefix, "| typing.Callable((", suffix)
