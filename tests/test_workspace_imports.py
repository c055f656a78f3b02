"""Import lines a file lacks (engine/workspace/imports.py, WorkspaceIndex.binders,
retrieve.py `_binders`): the names each import line binds, where the cursor stands among
a file's imports, and the draft the index offers there."""
from __future__ import annotations

from pathlib import Path

import pytest

from engine.workspace import WorkspaceIndex
from engine.workspace.imports import among_imports, bound_names, family, imports_itself, lacking
from engine.workspace.retrieve import drafts_for


@pytest.mark.parametrize("line, syntax, names", [
    ("import os.path as p, sys", "python", ("p", "sys")),
    ("import os.path", "python", ("os",)),
    ("from collections.abc import Mapping, Sequence", "python", ("Mapping", "Sequence")),
    ("from . import (a, b as c,", "python", ("a", "c")),
    ("from m import *", "python", ()),
    ("x = 1", "python", ()),
    ("const { toNumber, a: b } = require('../util/helpers');", "js", ("toNumber", "b")),
    ("const Range = require('../classes/range')", "js", ("Range",)),
    ("import x, { a as b, type C } from 'm'", "js", ("x", "b", "C")),
    ("import * as fs from 'fs';", "js", ("fs",)),
    ("const x = 3", "js", ()),
    ("import os", None, ()),
])
def test_the_names_an_import_line_binds(line: str, syntax, names) -> None:
    assert bound_names(line, syntax) == names


def test_the_import_syntax_comes_from_the_file_name() -> None:
    assert family("a/b.py") == "python" and family("x.tsx") == "js" and family("lib.MJS") == "js"
    assert family("main.rs") is None and family("Makefile") is None


def test_the_cursor_stands_among_imports_only_above_the_first_code() -> None:
    assert among_imports('"""Doc\nmore doc\n"""\nimport os\n\n', ("x = 1",), "python")
    assert among_imports("'use strict'\n// a comment\nconst a = require('a')\n", ("module.exports = a",), "js")
    assert among_imports("x = 1\n\n", ("import os",), "python")  # the next line is an import
    assert not among_imports("import os\nx = 1\n", ("y = 2",), "python")
    assert not among_imports('"""an open docstring\n', ("x",), "python")
    assert not among_imports("", ("import os",), None)


def test_a_file_lacks_the_names_it_uses_and_binds_nowhere() -> None:
    prefix = "import os\nfrom x import y\n\ndef f(a):\n    return parse(os.path, y, a, self.path)\n"
    wanted = lacking(prefix, "\nparse(1)\nclass K:\n    pass\n", "python", 10)
    assert wanted == {"parse": 2, "a": 2}  # os, y imported; f, K defined; `.path` an attribute; `self` a keyword


def test_names_bound_by_imports_over_several_lines_are_not_lacking() -> None:
    prefix = "from m import (\n    alpha,\n    beta as b,\n)\n"
    assert lacking(prefix, "\nalpha(b(gamma))\n", "python", 10) == {"gamma": 1}
    js = "const {\n  one,\n  two: three,\n} = require('m')\nimport {\n  four as five,\n} from 'n'\n"
    assert lacking(js, "\none(three(five(six)))\n", "js", 10) == {"six": 1}
    assert lacking("import os\nconst par", "\nos.x\n", "python", 10) == {}  # the cursor's own line is not read


def test_a_file_never_needs_to_import_itself() -> None:
    assert imports_itself("const subprotocol = require('./subprotocol');", "/w/lib/subprotocol.js")
    assert imports_itself("import x from '../a/b.js'", "b.ts") and imports_itself("from .fields import Field", "m/fields.py")
    assert not imports_itself("const x = require('./extension');", "lib/subprotocol.js")
    assert not imports_itself("from . import x", "y.py") and not imports_itself("x = 1", "x.py")


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_an_import_the_file_lacks_is_a_draft_where_imports_stand(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    _write(root, {
        "lib/a.js": "const parse = require('./parse')\nconst x = parse(1)\nmodule.exports = x\n",
        "lib/b.js": "const parse = require('./parse')\nconst compare = require('./compare')\nmodule.exports = compare(parse(2))\n",
        "lib/c.js": "const other = require('./other')\nmodule.exports = other\n",
        "lib/e.js": "const d = require('./d')\nmodule.exports = d\n",
    })
    index = WorkspaceIndex(root, cache_dir=tmp_path / "cache")
    index.refresh()
    prefix, suffix = "'use strict'\n", "\nconst compare = require('./compare')\n\nmodule.exports = (d) => compare(parse(d))\n"
    drafts = drafts_for(index, prefix, suffix, filename=str(root / "lib" / "d.js"), limit=100)
    by_line = {d.line: d for d in drafts}
    draft = by_line["const parse = require('./parse')"]
    assert draft.binds == 1 and draft.bind_share == 1.0 and draft.bind_places == 2
    assert draft.origin.startswith("lib/")
    assert "const other = require('./other')" not in by_line  # `other` is not used here
    assert "const d = require('./d')" not in by_line  # d.js uses a `d` of its own, but never imports itself
    assert drafts[0].line == "const parse = require('./parse')"
    # Below the first code line the same cursor is no import's place.
    later = drafts_for(index, "const y = 1\n\n", "\nmodule.exports = parse(y)\n", filename=str(root / "lib" / "e.js"), limit=100)
    assert all(not d.binds for d in later)
    index.close()


def test_the_bound_names_follow_each_edit_of_a_file(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    _write(root, {"m.py": "import os\nfrom collections import OrderedDict\n\nx = 1\n"})
    index = WorkspaceIndex(root, cache_dir=tmp_path / "cache")
    index.refresh()
    assert [t for t, *_ in index.binders({"OrderedDict": 1}, "python", 10)] == ["from collections import OrderedDict"]
    (root / "m.py").write_text("import os\nfrom collections import defaultdict\n\nx = 1\n")
    assert index.update_file(root / "m.py") is None
    assert index.binders({"OrderedDict": 1}, "python", 10) == []
    assert [(t, n) for t, n, *_ in index.binders({"defaultdict": 1, "os": 3}, "python", 10)] == [
        ("import os", 1), ("from collections import defaultdict", 1)]  # the most-used name first
    assert index.binders({"os": 1}, "js", 10) == []  # another syntax's imports are not offered
    (root / "m.py").unlink()
    assert index.update_file(root / "m.py") == "deleted"
    assert index.binders({"os": 1, "defaultdict": 1}, "python", 10) == []
    index.close()


def test_a_generated_file_of_imports_is_bounded(tmp_path: Path, monkeypatch) -> None:
    import engine.workspace.imports as imports_module
    import engine.workspace.index as index_module

    monkeypatch.setattr(index_module, "BINDS_PER_FILE", 5)
    root = tmp_path / "repo"
    _write(root, {"gen.py": "".join(f"from m{i} import name{i}\n" for i in range(50))})
    index = WorkspaceIndex(root, cache_dir=tmp_path / "cache")
    index.refresh()
    assert index.db.execute("SELECT COUNT(*) FROM binds").fetchone() == (5,)
    index.close()
    monkeypatch.setattr(imports_module, "SCAN_LINES", 10)  # the scan stops, the cursor still among imports
    assert among_imports("".join(f"import m{i}\n" for i in range(50)), ("x = 1",), "python")
