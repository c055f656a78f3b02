"""The final check's last word in a file broken elsewhere (grammars/region.py): the splice
judged inside the innermost block around the cursor that has no error of its own."""
import grammars
import grammars.constraint
from grammars.region import blocks, clean_block
from grammars.splice import added_errors

# A signature table whose entries lost lines (a file being edited: `and_=[`, `contains=[`
# and `eq=[` have no value any more), then a function whose `for` line is the hole, and a
# function below with a lost `if` line.
BROKEN_PY = '''"""Signatures of builtins."""
import operator

TABLE = dict(
    add=[
        lambda a, b: None],
    and_=[

    attrgetter=[
        lambda attr, *args: None],
    concat=[
        lambda a, b: None],
    contains=[

    countOf=[
        lambda a, b: None],
    delitem=[
        lambda a, b: None],
    eq=[

    getitem=[
        lambda a, b: None],
)


def register(info=TABLE, registry=None):
    """Fill the registry."""
    registry = {} if registry is None else registry
    CURSOR
        if isinstance(module, str):
            module = load(module)
        for name, sigs in items.items():
            registry[name] = sigs
    return registry


def check(sig, args):

        return False
    return True
'''

# A class whose other methods lost lines; the hole is an `else if` line of `compare`.
BROKEN_JS = """class Version {
  constructor (version) {
    if (version instanceof Version) {

    this.raw = version
  }

  compare (other) {
    for (let i = 0; ; i++) {
      const a = this.parts[i]
      const b = other.parts[i]
      if (a === undefined && b === undefined) {
        return 0
      } else if (b === undefined) {
        return 1
      CURSOR
        return -1
      } else if (a === b) {
        continue
      } else {
        return a < b ? -1 : 1
      }
    }
  }

  format () {
    this.version = `${this.major}.${this.minor}`
    if (this.prerelease.length) {

    return this.version
  }
}
module.exports = Version
"""


def _hole(text: str) -> tuple[str, str]:
    prefix, suffix = text.split("CURSOR")
    return prefix, suffix


def test_the_true_line_is_refused_by_the_whole_window_and_accepted_in_its_block() -> None:
    prefix, suffix = _hole(BROKEN_PY)
    constraint = grammars.constraint_for("python")
    true_line = "for module, items in info.items():"
    # The file's own errors reach the middle: the splice "adds" errors in the whole window.
    assert added_errors(constraint.hold(prefix, suffix), true_line) > 0
    before = constraint.stats.final_in_block
    assert constraint.accept_final(prefix, true_line, suffix)
    assert constraint.stats.final_in_block == before + 1


def test_the_block_refuses_what_the_whole_broken_window_let_through(monkeypatch) -> None:
    # The hole is an entry's value line in the broken table: the whole window's recovery
    # let `lambda a, b: None,` (its list never closed) through and refused the true line's
    # `]`-closed forms; the entry's block judges both the way the unbroken file would.
    text = BROKEN_PY.replace("    CURSOR\n", "    for module, items in info.items():\n")
    prefix, suffix = text.replace("    concat=[\n        lambda a, b: None],", "    concat=[\n        CURSOR").split("CURSOR")
    constraint = grammars.constraint_for("python")
    assert constraint.accept_final(prefix, "lambda a, b: None],", suffix)
    assert not constraint.accept_final(prefix, "lambda a, b: None,", suffix)
    monkeypatch.setattr(grammars.constraint.TreeSitterConstraint, "_clean_block", lambda *args: ())
    whole = grammars.constraint.TreeSitterConstraint(constraint.spec)
    assert whole.accept_final(prefix, "lambda a, b: None,", suffix)


def test_at_column_0_the_middle_brings_its_indentation() -> None:
    # The cursor at the line's start (the middle writes the indentation too): the block
    # is found from after that indentation, the same splice.
    prefix, suffix = _hole(BROKEN_PY)
    prefix = prefix[: prefix.rfind("\n") + 1]
    constraint = grammars.constraint_for("python")
    assert constraint.accept_final(prefix, "    for module, items in info.items():", suffix)
    assert not constraint.accept_final(prefix, "    return registry", suffix)


def test_a_middle_that_breaks_its_block_is_still_refused() -> None:
    prefix, suffix = _hole(BROKEN_PY)
    constraint = grammars.constraint_for("python")
    for middle in (
        "return registry",  # the indented body below has no header then
        "x = 1",
        "for module, items in info.items(:",  # an unclosed bracket
        "for module, items in info.items()",  # no colon
    ):
        assert not constraint.accept_final(prefix, middle, suffix), middle


def test_javascript_method_block_judges_the_else_if_line() -> None:
    prefix, suffix = _hole(BROKEN_JS)
    constraint = grammars.constraint_for("javascript")
    assert constraint.accept_final(prefix, "} else if (a === undefined) {", suffix)
    assert not constraint.accept_final(prefix, "} else if (a === undefined) {{", suffix)
    assert not constraint.accept_final(prefix, "}", suffix)  # the `} else if` below has no `if` then


def test_without_the_block_rule_the_true_line_was_refused(monkeypatch) -> None:
    monkeypatch.setattr(grammars.constraint.TreeSitterConstraint, "_clean_block", lambda *args: ())
    prefix, suffix = _hole(BROKEN_PY)
    assert not grammars.constraint_for("python").accept_final(prefix, "for module, items in info.items():", suffix)
    prefix, suffix = _hole(BROKEN_JS)
    assert not grammars.constraint_for("javascript").accept_final(prefix, "} else if (a === undefined) {", suffix)


def test_blocks_go_from_the_innermost_outward() -> None:
    prefix, suffix = _hole(BROKEN_JS)
    found = list(blocks("javascript", prefix, suffix))
    headers, own = found[:-1], found[-1]
    assert [b.indent for b in headers] == [4, 2, 0]
    # The cursor's line is indented 6: its `if` chain is a sibling; the `for` holds it.
    assert headers[0].prefix.startswith("    for (let i = 0; ; i++) {")
    assert headers[0].suffix.endswith("return a < b ? -1 : 1\n      }\n    }")  # to its closer
    assert headers[1].prefix.startswith("  compare (other) {") and headers[1].parent == "class Version {"
    assert headers[2].prefix.startswith("class Version {") and headers[2].parent == ""
    # Last, the hole's own construct: its line, the deeper line below and the closer.
    assert own.indent == 6 and own.prefix == "      " and own.suffix == "\n        return -1\n      } else if (a === b) {\n        continue\n      } else {\n        return a < b ? -1 : 1\n      }"


def test_python_blocks_keep_the_compound_statement_together() -> None:
    prefix = "def f(x):\n    if x:\n        "
    suffix = "\n    elif x is None:\n        pass\n    else:\n        y = 2\n    return y\n"
    block = next(blocks("python", prefix, suffix))
    assert block.indent == 4 and block.prefix == "    if x:\n        " and block.parent == "def f(x):"
    assert block.suffix == "\n    elif x is None:\n        pass\n    else:\n        y = 2"


def test_a_method_line_is_judged_inside_a_class(monkeypatch) -> None:
    # The hole is a method's header in a class broken elsewhere (`a` lost its call's
    # closing line): only the hole's own construct (the header, its body and closer) is
    # clean, judged inside a class, where a bare block `{` is no method.
    prefix = "class C {\n  a () {\n    const y = f(1,\n\n    return y\n  }\n\n  b () {\n    return 1\n  }\n\n  "
    suffix = "\n    return this.b\n  }\n\n  c () {\n    switch (x) {\n\n      return 2\n    }\n  }\n}\n"
    constraint = grammars.constraint_for("javascript")
    assert constraint.accept_final(prefix, "get () {", suffix)
    assert not constraint.accept_final(prefix, "{", suffix)
    assert not constraint.accept_final(prefix, "get () {{", suffix)
    monkeypatch.setattr(grammars.constraint.TreeSitterConstraint, "_clean_block", lambda *args: ())
    assert not constraint.accept_final(prefix, "get () {", suffix)


def test_no_clean_block_leaves_the_refusal() -> None:
    # The only block around the cursor holds another broken line too.
    prefix = "def f(x):\n    def g(:\n        pass\n    a = 1\n    "
    suffix = "\n    return a\n"
    constraint = grammars.constraint_for("python")
    assert clean_block("python", prefix, suffix, constraint.hold) is None


def test_a_clean_file_never_asks_the_block() -> None:
    prefix, suffix = "def f(x):\n    ", "\n    return x\n"
    constraint = grammars.constraint_for("python")
    before = constraint.stats.final_in_block
    assert not constraint.accept_final(prefix, "if x:", suffix)  # the body `return x` is not indented under it
    assert constraint.stats.final_in_block == before
