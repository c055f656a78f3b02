"""lab/workspace/compiled.py: real-lines answers spliced into the unbroken file and compiled."""
import json
from pathlib import Path

import lab.workspace.compiled as compiled


def test_spliced_keeps_the_line_indentation() -> None:
    original = "def f(x):\n    return x\n"
    assert compiled.spliced(original, 1, "return x + 1\n") == "def f(x):\n    return x + 1\n"


def test_judge_dump_counts_what_the_compiler_rejects(tmp_path: Path, monkeypatch) -> None:
    source = tmp_path / "pkg"
    (source / "mod").mkdir(parents=True)
    (source / "mod" / "a.py").write_text("def f(x):\n    if x:\n        return 1\n    return 2\n")
    monkeypatch.setattr(compiled, "source_dir", lambda name: source)
    dump = tmp_path / "dump.jsonl"
    rows = [
        {"id": "toolz:mod/a.py:2", "reference": "if x:", "middle": "if x > 0:"},  # compiles
        {"id": "toolz:mod/a.py:2", "reference": "if x:", "middle": "x = (1,"},  # unclosed
        {"id": "toolz:mod/a.py:4", "reference": "return 2", "middle": ""},  # empty: not shown
    ]
    dump.write_text("\n".join(json.dumps(r) for r in rows))
    shown, rejected, found = compiled.judge_dump(dump)
    assert shown["toolz"] == 2 and rejected["toolz"] == 1
    assert found[0][1] == "x = (1,"
