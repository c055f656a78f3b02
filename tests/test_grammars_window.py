"""The parse window around the cursor: its cuts must not invent syntax errors."""
import grammars
from grammars.registry import get as spec_for
from grammars.window import SUFFIX_WINDOW_CHARS, closing_tail, suffix_window


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


def _count_builds(monkeypatch) -> list[int]:
    from grammars import window as window_mod

    builds = [0]
    real = window_mod.Window.build.__func__

    def counting(cls, spec, prefix, suffix):
        builds[0] += 1
        return real(cls, spec, prefix, suffix)

    monkeypatch.setattr(window_mod.Window, "build", classmethod(counting))
    return builds


def test_window_cache_holds_every_request_of_a_batched_pass(monkeypatch):
    """A batched pass asks about each request in flight in turn: with 64 of them (a full batch), a
    second and third round must find every window (the old 8-window cache rebuilt all)."""
    from grammars.registry import get as spec_for
    from grammars.window import WindowCache

    builds = _count_builds(monkeypatch)
    cache = WindowCache(spec_for("python"))
    requests = [(f"def f{i}(x):\n    return ", "\n") for i in range(64)]
    for _ in range(3):
        for prefix, suffix in requests:
            window = cache.get(prefix, suffix)
            assert window.prefix_text == prefix
    assert builds[0] == 64 and len(cache) == 64


def test_window_cache_evicts_least_recently_used_by_count_and_bytes(monkeypatch):
    from grammars.registry import get as spec_for
    from grammars.window import WindowCache

    builds = _count_builds(monkeypatch)
    cache = WindowCache(spec_for("python"), size=3)
    a, b, c, d = (("x = " + name * 10, "\n") for name in "abcd")
    for pair in (a, b, c, a, d):  # `a` was used again, so `b` is the one to go
        cache.get(*pair)
    assert len(cache) == 3 and builds[0] == 4
    cache.get(*a), cache.get(*c), cache.get(*d)
    assert builds[0] == 4
    cache.get(*b)
    assert builds[0] == 5
    # a byte budget smaller than two windows keeps one (the newest), however many fit by count
    small = WindowCache(spec_for("python"), size=100, max_bytes=20)
    for pair in (a, b, c):
        small.get(*pair)
    assert len(small) == 1 and small.get(*c).prefix_text == c[0]


def test_a_suffix_cut_mid_statement_far_below_is_not_blamed_on_the_middle():
    # The benchmark items' suffixes are cut at a fixed length, often mid-statement, inside
    # the cursor's class: that last line's error is the file's, not the hole's, so the true
    # middle (and any valid one) passes the final check; before, every middle was refused
    # (docs/ladder.md, "Empty answers under the constraint").
    constraint = grammars.constraint_for("python")
    prefix = "class Sitemap:\n    def items(self):\n        for item in self.pages:\n            "
    body = "".join(f"            value_{i} = item.get({i})\n" for i in range(12))
    suffix = "\n" + body + "            url_info['alternates'].append(\n                "
    for middle in ("priority = item.priority", "return self.lastmod"):
        assert constraint.accept_final(prefix, middle, suffix), middle
    assert not constraint.accept_final(prefix, "return (", suffix)
    assert not constraint.accept_final(prefix, "if x", suffix)


def test_an_error_near_the_cursor_stays_the_holes_own():
    # The rule above is for the text's far end only: a hole whose error the parser reports
    # on the next lines must still be repaired by the middle (`x = ` + newline is refused).
    constraint = grammars.constraint_for("python")
    prefix, suffix = "def f(item):\n    x = ", "\n    return x.get(\n"
    assert not constraint.accept_final(prefix, "", suffix)
    assert constraint.accept_final(prefix, "item", suffix) is False  # the suffix's own open call is near: nothing excuses it


def test_a_text_that_stops_inside_the_cursors_construct_is_closed_before_judging():
    # A benchmark item (or a file being written) whose suffix stops inside the object the
    # cursor is in: the parser's one error from `defineLocale(` to the end moved with every
    # middle, so the true middle was refused too. The window now parses the text closed
    # (closing_tail), and a middle is judged on its own errors.
    constraint = grammars.constraint_for("javascript")
    prefix = "import moment from '../moment';\n\nexport default moment.defineLocale('it', {\n    months: 'a_b'.split('_'),\n"
    suffix = "".join(f"    key{i}: 'v{i}',\n" for i in range(10)) + "    week: {\n        dow: 1, // Monday\n        doy: 4, // The week that con"
    assert constraint.accept_final(prefix, "    monthsShort: 'c_d'.split('_'),\n", suffix)
    assert not constraint.accept_final(prefix, "    monthsShort: 'c_d'.split('_')),\n", suffix)
    assert not constraint.accept_final(prefix, "    monthsShort: 'c_d'.split(\n", suffix)


def test_a_bracket_the_suffix_comes_back_out_of_is_still_the_middles_to_close():
    # The closing tail is only for text that never leaves the construct: here the suffix
    # goes on at the bracket's own level, so the middle must close it.
    spec = spec_for("python")
    prefix = "total = compute(\n    first,\n"
    suffix = "\n" + "".join(f"value_{i} = {i}\n" for i in range(12))
    assert closing_tail(spec, prefix, suffix) == ""
    constraint = grammars.constraint_for("python")
    assert constraint.accept_final(prefix, "    second)\n", suffix)  # no closer was added after the text: one more would refuse it
    # ... and one opened on the cursor's line is the hole's, however far the text goes on.
    assert closing_tail(spec, "def f():\n    x = call(", "".join(f"\n        arg_{i}," for i in range(12))) == ""
    assert closing_tail(spec, "def f():\n    x = call(\n", "".join(f"        arg_{i},\n" for i in range(12))) == "\n)"
