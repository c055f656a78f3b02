"""JavaScript middles Node refuses to load (issue 49, item 7), refused by the final check.

1. The module kind comes from the file's name (`.mjs`, `.cjs`) or its package's nearest
   package.json (`"type": "module"`), not only from the text: a top-level `return` in a
   `"type": "module"` package whose text mentions `require(` was accepted.
2. A name declared twice in one scope (`const` twice, `let` beside `var`, a `var` in a
   block below a `let`, a `switch`'s cases, a `catch` parameter, a `for (let ...)` head)
   and a name exported twice (`export var X;` beside `export { X }`) were accepted.

Every verdict in the lists below was checked with `node --check` (Node 20), and
`test_node_agrees` checks it again where Node is installed.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
import tree_sitter as ts

import grammars
from engine.api import module_kind_of
from engine.workspace import WorkspaceContext, WorkspaceIndex
from engine.workspace.packages import PackageTypes
from grammars.early_errors import COMMONJS, MODULE, declared_module_kind, early_errors

M, C = MODULE, COMMONJS

REFUSED = [
    ("const a = 1;\nconst a = 2;\n", C),
    ("function f() {\n  let a;\n  var a;\n}\n", C),
    ("function f() {\n  var a;\n  let a;\n}\n", C),
    ("let a;\nif (x) {\n  var a = 1;\n}\n", C),
    ("function f() {\n  let a;\n  for (;;) {\n    { var a; }\n  }\n}\n", C),
    ("switch (x) {\n  case 1:\n    const a = 1;\n    break;\n  default:\n    let a = 2;\n}\n", C),
    ("switch (x) {\n  case 1:\n    var a = 1;\n    break;\n  default:\n    let a = 2;\n}\n", C),
    ("function f() {\n  let g;\n  function g() {}\n}\n", C),
    ("function f() {\n  function g() {}\n  class g {}\n}\n", C),
    ("{\n  function g() {}\n  let g;\n}\n", C),
    ("{\n  var g;\n  function g() {}\n}\n", C),
    ("'use strict';\n{\n  function g() {}\n  function g() {}\n}\n", C),
    ("try {\n  x();\n} catch (e) {\n  let e;\n}\n", C),
    ("try {\n  x();\n} catch ({ e }) {\n  const e = 1;\n}\n", C),
    ("for (let i = 0; i < 3; i++) {\n  var i;\n}\n", C),
    ("for (const k of o) {\n  var k;\n}\n", C),
    ("for (let [a, a] of o) {}\n", C),
    ("let k;\nfor (var k in o) {}\n", C),
    ("class A {\n  static {\n    let q;\n    var q;\n  }\n}\n", C),
    ("export var X;\nexport { X };\n", M),
    ("export var X = 1;\nexport var X = 2;\n", M),
    ("export const a = 1;\nconst a = 2;\n", M),
    ("export default 1;\nexport { a as default };\nvar a;\n", M),
    ("import { a } from 'b';\nconst a = 2;\n", M),
    ("import a from 'b';\nvar a;\n", M),
    ("import * as ns from 'b';\nfunction ns() {}\n", M),
    ("function f() {}\nfunction f() {}\n", M),  # a module's functions are lexical
    ("var f;\nfunction f() {}\n", M),
    ("export function f() {}\nlet f;\n", M),
    ("var a;\nexport { a, a };\n", M),
    ("var a, b;\nexport { a as c, b as c };\n", M),
    ("export * as q from 'm';\nexport const q = 1;\n", M),
    ("const x = 1;\nreturn x;\n", M),
]
ACCEPTED = [
    ("var a = 1;\nvar a = 2;\n", C),
    ("let a;\n{\n  let a;\n}\n", C),
    ("function f(a) {\n  var a;\n}\n", C),
    ("function f() {\n  var g;\n  function g() {}\n}\n", C),
    ("function f() {}\nfunction f() {}\n", C),  # a script's functions are vars
    ("var f;\nfunction f() {}\n", C),
    ("{\n  function g() {}\n  function g() {}\n}\n", C),  # sloppy code allows it (Annex B)
    ("let a;\nfunction f() {\n  var a;\n}\n", C),
    ("try {\n  x();\n} catch (e) {\n  var e;\n}\n", C),
    ("for (let i = 0; i < 3; i++) {\n  let i;\n}\n", C),
    ("for (var i = 0; i < 3; i++) {\n  var i;\n}\n", C),
    ("let k;\nfor (var [j = k] of o) {}\n", C),  # `k` is a default's value, no binding
    ("switch (x) {\n  case 1: {\n    const a = 1;\n    break;\n  }\n  default: {\n    const a = 2;\n  }\n}\n", C),
    ("class A {\n  static {\n    let q;\n  }\n  static {\n    let q;\n  }\n}\n", C),
    ("const x = 1;\nreturn x;\n", C),  # Node wraps a CommonJS file in a function
    ("export var X;\nexport { X as Y };\n", M),
    ("export default function () {}\nexport function f() {}\n", M),
    ("import { a as b } from 'm';\nconst a = 1;\nexport { a, b };\n", M),
    ("export * from 'm';\nexport * from 'n';\nexport const q = 1;\n", M),
    ("var a;\nvar a;\nexport { a };\n", M),
    ("let a;\nfunction f() {\n  let a;\n  { var b; }\n}\nexport { a };\n", M),
]


def judged(source: str, kind: str) -> list[str]:
    spec = grammars.get("javascript")
    root = ts.Parser(spec.ts_language()).parse(source.encode()).root_node
    return [e.message for e in early_errors("javascript", spec.ts_language(), root, 0, len(source.encode()), kind)]


@pytest.mark.parametrize("source,kind", REFUSED)
def test_declared_twice_is_an_early_error(source: str, kind: str) -> None:
    assert judged(source, kind), source


@pytest.mark.parametrize("source,kind", ACCEPTED)
def test_valid_declarations_are_no_early_error(source: str, kind: str) -> None:
    assert judged(source, kind) == [], source


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_node_agrees(tmp_path) -> None:
    for number, (source, kind) in enumerate(REFUSED + ACCEPTED):
        path = tmp_path / f"c{number}{'.mjs' if kind == MODULE else '.cjs'}"
        path.write_text(source)
        refused = subprocess.run(["node", "--check", str(path)], capture_output=True).returncode != 0
        assert refused == ((source, kind) in REFUSED), source


# A file of a `"type": "module"` package whose text reads as CommonJS to the regular
# expression (`require(` in a comment): its kind must come from the package.
ESM_BY_PACKAGE = """\
// Ported from the CommonJS version, which used require('./config').
const config = loadConfig();

if (!config) {
  console.error('no config');
"""
ESM_SUFFIX = "\n}\n\nstart(config);\n"


def test_top_level_return_follows_the_declared_kind() -> None:
    prefix, middle = ESM_BY_PACKAGE + "  ", "return;"
    assert grammars.constraint_for("javascript").accept_final(prefix, middle, ESM_SUFFIX)  # read from the text: CommonJS
    module = grammars.constraint_for("javascript", declared_module_kind("src/start.js", "module"))
    assert not module.accept_final(prefix, middle, ESM_SUFFIX)
    assert module.accept_final(prefix, "process.exit(1);", ESM_SUFFIX)
    assert not grammars.constraint_for("javascript", declared_module_kind("start.mjs")).accept_final(prefix, middle, ESM_SUFFIX)
    assert grammars.constraint_for("javascript", declared_module_kind("start.cjs", "module")).accept_final(prefix, middle, ESM_SUFFIX)


def test_import_in_a_cjs_file_is_refused() -> None:
    prefix, suffix = "'use strict';\n", "\n\nmodule.exports = { load };\n"
    cjs = grammars.constraint_for("javascript", declared_module_kind("lib/load.cjs"))
    assert not cjs.accept_final(prefix, "import fs from 'fs';", suffix)
    assert cjs.accept_final(prefix, "const fs = require('fs');", suffix)


@pytest.mark.parametrize("prefix,bad,good,suffix", [
    ("function f() {\n  const a = 1;\n  ", "const a = 2;", "const b = 2;", "\n  return a;\n}\n"),
    ("function f() {\n  let a = 1;\n  ", "var a = 2;", "a = 2;", "\n  return a;\n}\n"),
    ("function f() {\n  ", "let a = 1;", "let b = 1;", "\n  if (x) {\n    var a = 2;\n  }\n  return a;\n}\n"),
    ("switch (x) {\n  case 1:\n    const a = 1;\n    break;\n  case 2:\n    ", "const a = 2;", "const b = 2;", "\n    break;\n}\n"),
    ("try {\n  x();\n} catch (e) {\n  ", "let e = 1;", "let f = 1;", "\n  y(e);\n}\n"),
    ("function f(o) {\n  let k = 1;\n  ", "for (var k in o) {", "for (let k in o) {", "\n    g(k);\n  }\n}\n"),
    ("export var X;\nexport function g() {}\n", "export { X };", "export { X as Y };", "\n"),
    ("import { a } from 'b';\n", "const a = 2;", "const c = 2;", "\nexport default a;\n"),
])
def test_holes_declaring_a_name_twice_are_refused(prefix: str, bad: str, good: str, suffix: str) -> None:
    constraint = grammars.constraint_for("javascript")
    assert not constraint.accept_final(prefix, bad, suffix)
    assert constraint.accept_final(prefix, good, suffix)


def test_declared_module_kind() -> None:
    assert declared_module_kind("a.mjs") == MODULE
    assert declared_module_kind("a.cjs", "module") == COMMONJS  # the extension wins
    assert declared_module_kind("a.js", "module") == MODULE
    assert declared_module_kind("a.js", "commonjs") == COMMONJS
    assert declared_module_kind("a.js") is None  # read from the text
    assert declared_module_kind("a.js", "weird") is None


def test_one_constraint_per_kind() -> None:
    assert grammars.constraint_for("javascript", MODULE) is grammars.constraint_for("javascript", MODULE)
    assert grammars.constraint_for("javascript", MODULE) is not grammars.constraint_for("javascript")
    assert grammars.constraint_for("python", MODULE) is grammars.constraint_for("python")
    with pytest.raises(ValueError, match="module kind"):
        grammars.constraint_for("javascript", "esm")


def write_json(path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def test_the_nearest_package_json_decides(tmp_path) -> None:
    write_json(tmp_path / "package.json", {"type": "module"})
    write_json(tmp_path / "legacy" / "package.json", {"name": "legacy"})  # no type: Node's default
    write_json(tmp_path / "cjs" / "package.json", {"type": "commonjs"})
    (tmp_path / "src" / "deep").mkdir(parents=True)
    packages = PackageTypes(tmp_path)
    assert packages.type_of("src/deep/a.js") == "module"
    assert packages.type_of(tmp_path / "src" / "a.js") == "module"
    assert packages.type_of("legacy/lib/a.js") is None
    assert packages.type_of("cjs/a.js") == "commonjs"
    write_json(tmp_path / "cjs" / "package.json", {"type": "module", "name": "now an ES module"})
    assert packages.type_of("cjs/a.js") == "module"  # a changed package.json is read again


def test_no_package_json_outside_the_root_is_read(tmp_path) -> None:
    outside = tmp_path / "outside"
    write_json(outside / "package.json", {"type": "module"})
    root = tmp_path / "root"
    (root / "lib").mkdir(parents=True)
    packages = PackageTypes(root)
    assert packages.type_of(outside / "a.js") is None
    assert packages.type_of("../outside/a.js") is None
    assert packages.type_of("lib/a.js") is None  # the walk stops at the root
    if hasattr(os, "symlink"):
        os.symlink(outside / "package.json", root / "lib" / "package.json")
        assert packages.type_of("lib/a.js") is None  # a link leading out is not read


def test_the_engine_takes_the_kind_from_the_workspace_index_only(tmp_path, tiny_engine) -> None:
    root = tmp_path / "project"
    write_json(root / "package.json", {"type": "module"})
    (root / "src").mkdir()
    (root / "src" / "start.js").write_text(ESM_BY_PACKAGE + "  return;" + ESM_SUFFIX)
    index = WorkspaceIndex(root, cache_dir=tmp_path / "cache")
    filename = str(root / "src" / "start.js")
    assert module_kind_of("javascript", filename, WorkspaceContext(index)) == MODULE
    assert module_kind_of("typescript", filename, WorkspaceContext(index)) is None
    # Without an index (an HTTP client's snippets) the name alone decides: no file is opened.
    assert module_kind_of("javascript", filename, WorkspaceContext(buffers={"a.js": "x"})) is None
    assert module_kind_of("javascript", filename, None) is None
    assert module_kind_of("javascript", str(root / "start.mjs"), None) == MODULE
    job = tiny_engine.job(ESM_BY_PACKAGE + "  ", ESM_SUFFIX, filename=filename, workspace=WorkspaceContext(index), max_tokens=4)
    assert job.language.name == "javascript" and job.constraint is grammars.constraint_for("javascript", MODULE)
    assert tiny_engine.job(ESM_BY_PACKAGE + "  ", ESM_SUFFIX, filename=filename, max_tokens=4).constraint is grammars.constraint_for("javascript")
