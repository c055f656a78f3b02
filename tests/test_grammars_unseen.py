"""Issue 16, items 1 and 2: the final check on the failures seen on unseen code.

Each case is a splice the check accepted before (the file parsed with errors where the
original did not); `accept_final` must refuse it now, and accept the true middle.
"""
import tree_sitter as ts

import grammars

PY = grammars.constraint_for("python")
JS = grammars.constraint_for("javascript")
RS = grammars.constraint_for("rust")


def parses(language: str, text: str) -> bool:
    return not ts.Parser(grammars.get(language).ts_language()).parse(text.encode()).root_node.has_error


def check(constraint, language, prefix, good, bad, suffix):
    assert parses(language, prefix + good + suffix) and not parses(language, prefix + bad + suffix)
    assert constraint.accept_final(prefix, good, suffix), "the true middle is refused"
    assert not constraint.accept_final(prefix, bad, suffix), "an invalid splice is accepted"


def test_an_unfinished_line_is_not_completed_to_a_lone_semicolon():
    # `result = ` is what an editor sends; its error is the hole, and `;` does not fill it.
    check(PY, "python", "def f(values):\n    result = ", "sum(values)", ";", "\n    return result\n")
    check(JS, "javascript", "function f(values) {\n  const result = ", "values.length", ";", "\n  return result;\n}\n")


def test_a_block_that_is_only_a_docstring_opener():
    prefix = "class Store:\n    def load(self, path):\n        "
    suffix = '\n\n    def save(self, path):\n        """Write the store."""\n        self.path = path\n'
    check(PY, "python", prefix, "self.path = path", '"""', suffix)


def test_return_of_an_assignment():
    check(PY, "python", "class Box:\n    def put(self, y):\n        return ", "self.x", "self.x = y", "\n")


def test_a_call_argument_that_repeats_the_closing_bracket_and_newline():
    prefix = "def build(self):\n    lines = []\n    lines.extend("
    check(PY, "python", prefix, "self.headers", "self.headers)\n", ")\n    return lines\n")


def test_an_empty_condition_is_not_a_completion():
    check(PY, "python", "def f(x):\n    if ", "x", "", ":\n        return 1\n    return 0\n")


def test_the_window_ends_inside_a_block():
    # One big function, longer than the 3,000-character window: the window ends inside it,
    # and the hole's error hid the missing `}` at the window's end (true middles refused).
    body = "".join(f"    const v{i} = compute({i}, options);\n" for i in range(150))
    prefix = "module.exports = function run(options) {\n  if ("
    suffix = ") {\n    return null;\n  }\n" + body + "  return v1;\n};\n"
    check(JS, "javascript", prefix, "!options", "options) {", suffix)


def test_a_hole_whose_error_the_parser_reports_lines_later():
    # Rust reports `if  {` at the `else` two lines on: not an error the file had.
    prefix = "impl Fmt for Quote {\n    fn fmt(&self, f: &mut Formatter) -> Result {\n        if "
    suffix = " {\n            f.write_str(\"a\")\n        } else {\n            f.write_str(\"b\")\n        }\n    }\n}\n"
    check(RS, "rust", prefix, "self.0 == '\\0'", "self.0 =", suffix)


# Splices the final check accepted on the unseen benchmark's tune part before issue 16
# (the embedded model's constrained answers; the whole file then parsed with errors). Each
# is refused now, and each task's true middle accepted. (Tune part only: the set-aside part
# is never looked at while improving the check.)
ACCEPTED_BEFORE = [
    ('python', 'python/tomlkit/tomlkit/api.py:arguments:6391', '1)\n'),
    ('python', 'python/marshmallow/marshmallow/fields.py:expression:59649', 'value_field and not self.key_field:\n'),
    ('javascript', 'javascript/knex/package/lib/dialects/postgres/index.js:condition:6911', "resp.command === 'SELECT') {\n      if (obj.method === 'pluck') return (obj.method === 'pluck'"),
    ('javascript', 'javascript/ws/package/lib/receiver.js:expression:10114', ';\n'),
    ('javascript', 'javascript/ws/package/lib/receiver.js:expression:409', ';\n'),
    ('rust', 'rust/librust-semver-dev/usr/share/cargo/registry/semver-1.0.14/src/error.rs:condition:3846', '('),
    ('rust', 'rust/librust-indexmap-dev/usr/share/cargo/registry/indexmap-1.9.2/src/set.rs:condition:31424', '(value) {\n'),
    ('rust', 'rust/librust-indexmap-dev/usr/share/cargo/registry/indexmap-1.9.2/src/set.rs:condition:29758', '(value) {\n'),
]


def _task(task_id: str):
    from lab.syntax_bench.unseen_tasks import SOURCES, holes_in, manifest, materialize

    path, kind, start = task_id.rsplit(":", 2)
    entry = next(e for e in manifest() if e["path"] == path)
    assert entry["part"] == "tune"
    hole = next(h for h in holes_in((SOURCES / path).read_bytes(), entry["language"], path) if h.kind == kind and h.start == int(start))
    return materialize(hole)


def test_splices_accepted_before_on_unseen_code_are_refused():
    for language, task_id, middle in ACCEPTED_BEFORE:
        task = _task(task_id)
        constraint = grammars.constraint_for(language)
        assert not parses(language, task.prefix + middle + task.suffix)
        assert not constraint.accept_final(task.prefix, middle, task.suffix), (task_id, middle)
        assert constraint.accept_final(task.prefix, task.middle, task.suffix), (task_id, task.middle)


def test_the_engine_answers_an_unfinished_line_with_a_parsing_middle_or_nothing():
    import engine

    eng = engine.load()
    cases = [
        ("python", "def mean(values):\n    result = ", "\n    return result\n"),
        ("javascript", "function mean(values) {\n  const result = ", "\n  return result;\n}\n"),
        ("python", "def first(items):\n    if ", ":\n        return items[0]\n"),
    ]
    for language, prefix, suffix in cases:
        middle = eng.infill(prefix, suffix, language=language).middle
        assert middle.strip() and parses(language, prefix + middle + suffix), (prefix, middle)
