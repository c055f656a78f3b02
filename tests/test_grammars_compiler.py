"""The final check refuses what the language's own compiler would (issue 35, items 1 and 2).

1. A JavaScript middle that leaves the hole's own error in place was shown: in dayjs's
   `esm/index.js`, the line `_proto.isValid = function isValid() {` blanked after its
   indentation left the IIFE's braces unbalanced; tree-sitter reported that at the `}();`
   closing it, at column 0, which the check took for the file's own error, so
   `_proto = Dayjs;` passed and `node --check` failed.
2. A grammar is context-free: `return Dayjs;` at the top of an ES module parses, and Node
   says `SyntaxError: Illegal return statement`. grammars/early_errors.py judges such
   statements on tree-sitter's tree (every verdict here was checked with `node --check` and
   CPython's `compile()`).
"""
from __future__ import annotations

import shutil
import subprocess

import pytest
import tree_sitter as ts

import grammars
from grammars.early_errors import COMMONJS, MODULE, UNKNOWN, early_errors, module_kind

# Shaped like dayjs 1.11.13's esm/index.js (written for this test).
DAYJS_LIKE = """\
import * as C from './constant';

var Dayjs = /*#__PURE__*/function () {
  function Dayjs(cfg) {
    this.$d = cfg.date;
  }

  var _proto = Dayjs.prototype;

  _proto.$utils = function $utils() {
    return C;
  };

  _proto.isValid = function isValid() {
    return !(this.$d.toString() === C.INVALID_DATE_STRING);
  };

  _proto.toString = function toString() {
    return this.$d.toUTCString();
  };

  return Dayjs;
}();

var proto = Dayjs.prototype;
export default Dayjs;
"""


def hole(text: str, line: str) -> tuple[str, str, str]:
    """(prefix, true middle, suffix): `line` (its first occurrence) blanked after its
    indentation, as an editor sends it."""
    at = text.index(line)
    start = text.rfind("\n", 0, at) + 1
    end = text.index("\n", at)
    body = text[start:end].lstrip(" ")
    cursor = end - len(body)
    return text[:cursor], body, text[end:]


def accepts(language: str, prefix: str, middle: str, suffix: str) -> bool:
    constraint = grammars.constraint_for(language)
    assert constraint is not None
    return constraint.accept_final(prefix, middle, suffix)


# -- item 1: the hole's own error must be repaired ----------------------------------------


def test_a_middle_that_leaves_the_iife_unbalanced_is_refused() -> None:
    prefix, true, suffix = hole(DAYJS_LIKE, "_proto.isValid = ")
    assert not accepts("javascript", prefix, "_proto = Dayjs;", suffix)
    assert accepts("javascript", prefix, true, suffix)


def test_a_middle_that_leaves_an_array_open_is_refused() -> None:
    # The hole is the array's `];` at column 0, after a comment: the parser reports the
    # hole at the `0` before the comment and again in the functions below (never closed).
    text = "const chars = [\n  0, 1, 0, 1, // 0 - 3\n  1, 1, 0, 0 // 4 - 7\n];\n\n/**\n * Doc.\n */\nfunction f(code) {\n  return chars[code] === 1;\n}\n\nfunction g(x) {\n  const y = x + 1;\n  return y;\n}\n\nmodule.exports = { f, g };\n"
    prefix, true, suffix = hole(text, "];")
    assert not accepts("javascript", prefix, " *", suffix)
    assert accepts("javascript", prefix, true, suffix)


# -- item 2: what the grammar accepts and the compiler refuses -----------------------------


def test_a_top_level_return_is_refused_in_an_es_module() -> None:
    prefix, true, suffix = hole(DAYJS_LIKE, "return Dayjs;")
    assert accepts("javascript", prefix, true, suffix)
    # Line 513 of dayjs's file, the IIFE's `return Dayjs;` offered outside it:
    prefix, _, suffix = hole(DAYJS_LIKE, "var proto = Dayjs.prototype;")
    assert not accepts("javascript", prefix, "return Dayjs;", suffix)
    assert accepts("javascript", prefix, "var proto = Dayjs.prototype;", suffix)


def test_a_top_level_return_is_accepted_in_commonjs() -> None:
    # Node wraps a CommonJS file in a function: a top-level `return` is legal there.
    text = "const fs = require('fs');\n\nif (!fs) {\n  module.exports = null;\n}\nmodule.exports = fs;\n"
    prefix, _, suffix = hole(text, "module.exports = fs;")
    assert accepts("javascript", prefix, "return;", suffix)


PYTHON = """\
import os


def walk(top):
    for name in os.listdir(top):
        if name.startswith('.'):
            continue
        yield name
    return None


total = 0
for name in walk('.'):
    total += 1
print(total)
"""


@pytest.mark.parametrize("middle", ["return total", "yield total", "await walk('.')", "break", "continue"])
def test_python_statements_outside_their_construct_are_refused(middle: str) -> None:
    prefix, true, suffix = hole(PYTHON, "print(total)")
    assert accepts("python", prefix, true, suffix)
    assert not accepts("python", prefix, middle, suffix)
    with pytest.raises(SyntaxError):
        compile(prefix + middle + suffix, "<test>", "exec")


def test_python_statements_inside_their_construct_are_accepted() -> None:
    prefix, _, suffix = hole(PYTHON, "continue")
    for middle in ("break", "continue", "return None", "yield name"):
        assert accepts("python", prefix, middle, suffix)
        compile(prefix + middle + suffix, "<test>", "exec")


def judged(language: str, source: str, kind: str | None = None) -> list[str]:
    """The early errors of the whole `source`, their messages."""
    spec = grammars.get(language)
    root = ts.Parser(spec.ts_language()).parse(source.encode()).root_node
    found = early_errors(language, spec.ts_language(), root, 0, len(source.encode()), kind or module_kind(source))
    return [e.message for e in found]


# Each refused by `node --check` (as .cjs in CommonJS, else as .mjs: a file with neither
# mark is judged as a module), each accepted one accepted by it.
JS_REFUSED = [
    "import a from 'b';\nreturn a;\n",
    "return 1;\n",
    "break;\n",
    "while (x) { function f() { break; } }\n",
    "switch (x) { case 1: continue; }\n",
    "a: { continue a; }\n",
    "for (;;) { break b; }\n",
    "function g() { yield 1; }\n",
    "class A { *m() { yield 1 } n() { yield 2 } }\n",
    "const f = () => { await x; };\n",
    "require('x');\nawait x;\n",
    "class A { static { return 1; } }\n",
    "let a = 1;\nlet a = 2;\n",
    "var a; let a;\n",
    "class A {}\nconst A = 1;\n",
    "const {g, g} = z;\n",
    "function f({a}, b) { const a = 1; }\n",
    "const f = a => { let a; };\n",
    "if (x) let y = 1;\n",
    "if (x) {} else const z = 1;\n",
    "const a;\n",
    "let {b};\n",
    "f(, a);\n",
    "f(a,, b);\n",
    "x = {, a: 1};\n",
    "try { x }\n",
    "module.exports = 1;\nimport('x');\nexport const y = 2;\n",
    "while ((n = re.exec(v)) &&\n    match = n\n) {}\n",
    "x = '' *\n  x = 1;\n",
    "class A {\n  if (this.value) {\n    return 1\n  }\n}\n",
    "class A { constructor() {} constructor(a) {} }\n",
    "x = { var };\n",
    "'use strict';\nfunction f(a, b, a) {}\n",
    "function f(a, {b}, a) {}\n",
    "const f = (a, a) => a;\n",
    "class A { m(a, a) {} }\n",
    "const { A, var } = r;\n",
    "if (x) {\n  case (\n    1\n  );\n}\n",
    "const {a: b.c} = d;\n",
    "var [a.b] = c;\n",
    "x = a + (e) => 1;\n",
    "const {\n  log: {\n    colors: this._enableColors,\n  } = {},\n} = config;\n",
]
JS_ACCEPTED = [
    "const a = require('b');\nreturn a;\n",
    "for (;;) { break; continue; }\n",
    "for (;;) { switch (x) { case 1: continue; } }\n",
    "a: { break a; }\n",
    "a: for (;;) { continue a; }\n",
    "function* g() { yield 1; }\n",
    "const f = async () => { await x; };\n",
    "import a from 'b';\nawait a;\n",
    "let q = 1; { let q = 2; }\n",
    "function f(a) { var a; }\n",
    "for (let i = 0; i < 3; i++) {}\n",
    "for (const x of y) ;\n",
    "let c;\n",
    "f(a,);\nx = [, 1];\n",
    "try { x } catch (e) {}\n",
    "var f = function () { return 1; };\n",
    "(a) = 1;\nx = a ? b = 1 : c;\n",
    "class A { constructor() {} static constructor() {} }\n",
    "function f(a = 1, {b} = {}, ...c) {}\n",
    "({a: b.c} = d);\nx = { a: 1, var: 2 }.var;\nconst {a: {b}, c = 1, ...d} = e;\nconst {log: {w, v: u} = {}} = g;\n",
    "x = a + ((e) => 1);\nf(a, (e) => 1);\n",
    "const x = require('x');\nfunction f(a, b, a) {}\n",  # sloppy CommonJS allows it
]


@pytest.mark.parametrize("source", JS_REFUSED)
def test_javascript_early_errors_are_found(source: str) -> None:
    kind = COMMONJS if source.startswith("module.exports") else None
    assert judged("javascript", source, kind), source


@pytest.mark.parametrize("source", JS_ACCEPTED)
def test_javascript_valid_code_has_no_early_error(source: str) -> None:
    assert judged("javascript", source) == [], source


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_node_agrees(tmp_path) -> None:
    for number, source in enumerate(JS_REFUSED + JS_ACCEPTED):
        kind = COMMONJS if source.startswith("module.exports") else module_kind(source)
        path = tmp_path / f"c{number}{'.cjs' if kind == COMMONJS else '.mjs'}"
        path.write_text(source)
        rc = subprocess.run(["node", "--check", str(path)], capture_output=True).returncode
        assert (rc != 0) == (source in JS_REFUSED), source


PY_REFUSED = ["return 1\n", "class A:\n    return 1\n", "break\n", "for x in y:\n    pass\nelse:\n    break\n",
              "def f():\n    for x in y:\n        def g():\n            continue\n", "yield 1\n", "await x\n",
              "def f():\n    await x\n", "async def f():\n    g = lambda: await x\n", "nonlocal x\n",
              "f(a=1, a=2)\n", "f(a=1, b)\n", "f(**k, b)\n", "def f(self, a, self): pass\n", "g = lambda x, *x: 0\n",
              "try:\n    pass\nx = 1\n", "import typing\nfrom __future__ import annotations\n"]
PY_ACCEPTED = ["def f():\n    return 1\n", "for x in y:\n    break\n", "while 1:\n    for x in y:\n        pass\n    else:\n        break\n",
               "def f():\n    yield 1\n", "x = lambda: (yield)\n", "async def f():\n    await x\n",
               "f(a, b=1, *c, d=2, **e, g=3)\n", "def h(self, a: int, b=1, c: int = 2, *args, d, **kw): pass\n",
               "try:\n    pass\nfinally:\n    pass\n", '"""Doc."""\n# c\nfrom __future__ import annotations\nimport os\n']


@pytest.mark.parametrize("source", PY_REFUSED + PY_ACCEPTED)
def test_python_early_errors_match_cpython(source: str) -> None:
    try:
        compile(source, "<test>", "exec")
        refused = False
    except SyntaxError:
        refused = True
    assert bool(judged("python", source)) == refused, source


def test_module_kind() -> None:
    assert module_kind("import x from 'y';\n") == MODULE
    assert module_kind("export default 1;\n") == MODULE
    assert module_kind("const x = require('y');\n") == COMMONJS
    assert module_kind("const x = import('y');\n") == UNKNOWN


def test_the_top_of_a_window_cut_inside_a_block_is_not_judged() -> None:
    # A file wrapped in `(function () {` has its body at column 0; a window cut below the
    # wrapper's first line cannot tell its top from the file's, and says nothing there.
    body = "".join(f"var v{i} = {i};\n" for i in range(400))
    text = "(function () {\n" + body + "var last = 1;\n" + "}());\n"
    prefix, true, suffix = hole(text, "var last = 1;")
    assert accepts("javascript", prefix, "return last;", suffix)


def test_a_keyword_argument_the_call_has_already_is_refused() -> None:
    text = "TABLE = dict(\n    abs=[lambda x: None],\n    pow=[lambda x, y: None],\n    len=[lambda x: None],\n)\n"
    prefix, true, suffix = hole(text, "len=[")
    assert accepts("python", prefix, true, suffix)
    assert not accepts("python", prefix, "pow=[lambda x: None],", suffix)  # keyword argument repeated
    assert not accepts("python", prefix, "[lambda x: None],", suffix)  # positional argument follows keyword argument


def test_a_header_that_changes_its_body_s_context_is_refused() -> None:
    # `def` replaced by `class`: the body's `yield` is now outside any function.
    text = "def pairs(items):\n    for item in items:\n        yield item, item\n"
    prefix, true, suffix = hole(text, "def pairs")
    assert accepts("python", prefix, true, suffix)
    assert not accepts("python", prefix, "class pairs(object):", suffix)


@pytest.mark.parametrize("language, text, line, middle", [
    ("python", "try:\n    items.sort()\n    ok = True\nexcept TypeError:\n    ok = False\nprint(ok)\n", "except TypeError:", "    ok = True"),
    ("javascript", "try {\n  v = parse(v);\n} catch (e) {\n  v = null;\n}\nuse(v);\n", "} catch (e) {", ";"),
])
def test_a_try_whose_handler_line_was_the_hole_must_get_it_back(language: str, text: str, line: str, middle: str) -> None:
    prefix, true, suffix = hole(text, line)
    assert accepts(language, prefix, true, suffix)
    assert not accepts(language, prefix, middle, suffix)


def test_a_try_being_typed_is_left_to_be_finished() -> None:
    # `try {` typed, the editor closed the brace: a middle inside it is fine for now.
    assert accepts("javascript", "function f() {\n  try {\n    ", "run();", "\n  }\n}\n")


def test_a_construct_goes_on_through_a_column_0_else() -> None:
    # The hole is `if (!process.env.NO_ADDON) {` at column 0; the parser reports the
    # unbalanced braces at the last `}`, after `} else {`.
    text = "module.exports = { mask: _mask };\n\nif (!process.env.NO_ADDON) {\n  try {\n    module.exports.mask = require('addon').mask;\n  } catch (e) {\n    // Fall back.\n  }\n} else {\n  module.exports.plain = true;\n}\n"
    prefix, true, suffix = hole(text, "if (!process.env.NO_ADDON) {")
    assert accepts("javascript", prefix, true, suffix)
    assert not accepts("javascript", prefix, "  mask: _mask", suffix)


def test_a_destructuring_that_lost_its_initializer_must_get_it_back() -> None:
    text = "const {\n  BINARY,\n  EMPTY\n} = require('./constants');\nconst { concat } = require('./util');\n"
    prefix, true, suffix = hole(text, "} = require('./constants');")
    assert accepts("javascript", prefix, true, suffix)
    assert not accepts("javascript", prefix, "}", suffix)


def test_a_docstring_whose_closing_line_was_the_hole_must_be_closed() -> None:
    # Without its closing quotes the docstring runs on to the next one's opening quotes,
    # and the code below flips between code and string: prose is no repair there.
    text = 'class A:\n    def f(self):\n        """Do f.\n\n        More.\n        """\n        return 1\n\n\nclass B:\n    def g(self):\n        """Do g."""\n        return 2\n'
    prefix, true, suffix = hole(text, '"""\n        return 1')
    assert accepts("python", prefix, true, suffix)
    assert not accepts("python", prefix, "Even more.", suffix)
    # A line inside the docstring is still prose's to fill.
    prefix, true, suffix = hole(text, "More.")
    assert accepts("python", prefix, true, suffix)
    assert accepts("python", prefix, "Still more.", suffix)


def test_the_lab_tool_cuts_holes_and_asks_the_compilers() -> None:
    from lab.evaluation.compiler_check import compiler_error, is_module, line_holes, summary

    holes = line_holes("def f():\n    return 1\n\nx = f()\n", "a.py")
    assert [(h.line, h.prefix[h.prefix.rfind("\n") + 1 :], h.middle, h.suffix[:1]) for h in holes] == [
        (1, "", "def f():", "\n"), (2, "    ", "return 1", "\n"), (4, "", "x = f()", "\n")]
    assert all(h.prefix + h.middle + h.suffix == "def f():\n    return 1\n\nx = f()\n" for h in holes)
    assert compiler_error("python", "return 1\n", False) is not None  # a compiler error, not a parser one
    assert compiler_error("python", "def f():\n    return 1\n", False) is None
    assert is_module("javascript", "import a from 'b';\n") and not is_module("javascript", "const a = require('b');\n")
    rows = [{"middle": "x", "error": None}, {"middle": "y", "error": "SyntaxError"}, {"middle": "", "error": None}]
    assert summary("python", "tune", rows) == {"language": "python", "part": "tune", "holes": 3, "shown": 2, "rejected": 1, "rate": 0.5}
    if shutil.which("node"):
        assert compiler_error("javascript", "import a from 'b';\nreturn a;\n", True) is not None
        assert compiler_error("javascript", "const a = require('b');\nreturn a;\n", False) is None


def test_a_bracketed_expression_broken_above_the_middle_is_refused() -> None:
    # CPython reports `expected 'else' after 'if' expression` at the `[`'s line, above the
    # hole (the comprehension's `for` line): it is the middle's to fix all the same.
    text = "def names(fields, prefix):\n    return [\n        f.split(prefix, 1)[1]\n        for f in fields\n        if f.startswith(prefix)\n    ]\n"
    prefix, true, suffix = hole(text, "for f in fields")
    assert accepts("python", prefix, true, suffix)
    assert not accepts("python", prefix, "| typing.Callable", suffix)


def test_a_misparse_the_hole_leaves_below_must_be_repaired() -> None:
    # Without the `{` of the hole's line the `}` below closes the method, and the class
    # body's next `if (...) {` reads as a method `if` whose parameters are no names: no
    # ERROR, and Node refuses the file. The empty hole has that too; the middle must fix it.
    text = ("const cmp = require('./cmp')\nclass Range {\n  test (v) {\n    if (\n      this.a &&\n      this.b) {\n      return true\n    }\n"
            "    // opposite directions\n    if (cmp(v, '<', this.c) &&\n      this.d) {\n      return true\n    }\n    return false\n  }\n}\n\nmodule.exports = Range\n")
    prefix, true, suffix = hole(text, "this.b) {")
    assert accepts("javascript", prefix, true, suffix)
    assert not accepts("javascript", prefix, "this.b)", suffix)


def test_a_doc_comment_whose_closing_line_was_the_hole_must_be_closed() -> None:
    # Without ` */` the comment swallows the function below up to the next comment's
    # closer; tree-sitter sees a longer comment and no error.
    text = "/**\n * Tells.\n *\n * @private\n */\nfunction isBlob(value) {\n  return typeof value === 'object';\n}\n\n/**\n * Other.\n */\nfunction other() {\n  return 1;\n}\n\nmodule.exports = { isBlob, other };\n"
    prefix, true, suffix = hole(text, "*/\nfunction isBlob")
    assert accepts("javascript", prefix, true, suffix)
    assert not accepts("javascript", prefix, "* @public", suffix)
    prefix, true, suffix = hole(text, "* @private")  # a line inside the comment: prose is fine
    assert accepts("javascript", prefix, true, suffix)
    assert accepts("javascript", prefix, "* @public", suffix)


def test_a_trimmed_python_window_keeps_the_closer_of_a_multiline_import() -> None:
    # Windows above 64 kB are trimmed to the top-level statements around the cursor; the
    # `)` at column 0 that ends `from operator import (` is no statement's start.
    from grammars.python_check import MAX_WINDOW_BYTES, adds_python_error

    prefix = "import os\n"
    suffix = "\n    attrgetter,\n    getitem,\n)\n" + "x = 1\n" * (MAX_WINDOW_BYTES // 6 + 10)
    assert not adds_python_error(prefix, "from operator import (", suffix)
