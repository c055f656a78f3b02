"""The parse window around the cursor: its cuts must not invent syntax errors."""
import grammars
from grammars.window import SUFFIX_WINDOW_CHARS, suffix_window


def _long_python_file() -> tuple[str, str, str]:
    head = "class Queue:\n    def __init__(self):\n        self.items = []\n\n    def pop(self):\n        while "
    middle = "self.items"
    tail = ":\n            return self.items.pop()\n        return None\n\n"
    tail += "".join(f"def helper_{i}(value):\n    if value > {i}:\n        return [value, {i}]\n    return None\n\n\n" for i in range(400))
    return head, middle, tail


def _long_javascript_file() -> tuple[str, str, str]:
    head = "class Limiter {\n  allow(now) {\n    if ("
    middle = "this.count < this.limit"
    tail = ") {\n      this.count += 1;\n      return true;\n    }\n    return false;\n  }\n}\n\n"
    tail += "".join(f"function helper{i}(value) {{\n  if (value > {i}) {{\n    return [value, {i}];\n  }}\n  return null;\n}}\n\n" for i in range(400))
    return head, middle, tail


def test_suffix_window_ends_before_a_top_level_statement():
    _, _, tail = _long_python_file()
    assert len(tail) > SUFFIX_WINDOW_CHARS
    window = suffix_window(tail)
    assert len(window) <= SUFFIX_WINDOW_CHARS
    assert tail.startswith(window) and tail[len(window)].isalpha()


def test_true_middles_in_long_files_pass_the_final_check():
    for language, (prefix, middle, suffix) in (("python", _long_python_file()), ("javascript", _long_javascript_file())):
        constraint = grammars.constraint_for(language)
        assert len(suffix) > SUFFIX_WINDOW_CHARS
        assert constraint.accept_final(prefix, middle, suffix), language
        assert constraint.allows(prefix, [middle], suffix), language


def test_an_end_that_leaves_the_hole_empty_is_refused():
    constraint = grammars.constraint_for("python")
    prefix, suffix = "queue = [1]\nwhile ", ":\n    queue.pop()\n"
    assert not constraint.allows(prefix, [], suffix)  # `while :` stays broken
    assert constraint.allows(prefix, [" queue"], suffix)
    # Where the empty middle already parses (a blank line in a block), ending is fine.
    assert constraint.allows("def f():\n    x = 1\n", [], "    return x\n")


def test_python_newline_before_every_hole_seals_an_empty_condition():
    constraint = grammars.constraint_for("python")
    prefix, suffix = "queue = [1]\nwhile ", ":\n    queue.pop()\n"
    assert not constraint.allows(prefix, ["\n", None, None], suffix)  # no later text can fill `while`
    assert constraint.allows(prefix, [None, "\n"], suffix)  # the hole is still on the `while` line
    assert constraint.allows("f(", ["\n", None], ")\n")  # inside brackets a newline ends nothing
    # Newlines do not end statements in JavaScript: a hole on the next line may still fill it.
    js = grammars.constraint_for("javascript")
    assert js.allows("if (", ["\n", None], ") {\n  go();\n}\n")
