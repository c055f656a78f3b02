"""The final check in a file broken elsewhere (grammars/splice.py `stands_on_its_own`):
an inserted line moves the parser's recovery from the file's other errors, which then come
back as "new" errors further down; there the middle's own text is judged. On real lines of
the tuning packages with their other sampled lines blanked (a file being edited), the
true line was refused on 97 of 400 lines, 74 with this rule, with the same broken middles
accepted (the reference + ` (`: 56 of 400)."""
import grammars
import grammars.constraint

# A switch whose `case '!==':` lost its second `if (...) {` line: the file has an error of
# its own, below which every inserted line moves the parser's recovery.
BROKEN = """const cmp = (a, op, b, loose) => {
  switch (op) {
    case '===':
      if (typeof a === 'object') {
        a = a.version
      }
      return a === b

    case '!==':
      if (typeof a === 'object') {
        a = a.version
      }

        b = b.version
      }
      return a !== b

    case '>':
      return gt(a, b, loose)

    case '>=':
      CURSOR

    case '<':
      return lt(a, b, loose)

    default:
      throw new TypeError(`Invalid operator: ${op}`)
  }
}
module.exports = cmp
"""


def _hole(text: str) -> tuple[str, str]:
    prefix, suffix = text.split("CURSOR")
    return prefix, suffix


def test_a_true_line_stands_in_a_file_broken_elsewhere(monkeypatch) -> None:
    prefix, suffix = _hole(BROKEN)
    constraint = grammars.constraint_for("javascript")
    before = constraint.stats.final_on_its_own
    assert constraint.accept_final(prefix, "return gte(a, b, loose)", suffix)
    assert constraint.stats.final_on_its_own > before
    # Without the rule the file's shifted errors refuse it.
    monkeypatch.setattr(grammars.constraint, "stands_on_its_own", lambda window, middle: False)
    assert not grammars.constraint_for("javascript").accept_final(prefix, "return gte(a, b, loose)", suffix)


def test_a_broken_middle_is_still_refused_there() -> None:
    prefix, suffix = _hole(BROKEN)
    constraint = grammars.constraint_for("javascript")
    for middle in ("return gte(a, b, loose) (", "return gte(a, b,", "var", "return gte(a, b, loose))", "} x", ",", "a: b,"):
        assert not constraint.accept_final(prefix, middle, suffix), middle


def test_a_clean_file_is_judged_as_before() -> None:
    prefix, suffix = _hole(BROKEN.replace("      }\n\n        b = b.version", "      }\n      if (typeof b === 'object') {\n        b = b.version"))
    constraint = grammars.constraint_for("javascript")
    before = constraint.stats.final_on_its_own
    assert constraint.accept_final(prefix, "return gte(a, b, loose)", suffix)
    assert not constraint.accept_final(prefix, "var", suffix)
    assert constraint.stats.final_on_its_own == before
