"""`infill batch` line by line: a line's workspace that cannot be indexed fails that line
only, and a line without a language runs with the one the HTTP API would pick (the
line's, else `--language`, else its file name's extension, else detected), saying which."""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from engine.workspace import WorkspaceIndex
from infill_lsp.batch import run_batch


def _batch(lines: list[dict], model_dir: Path, language: str | None = None) -> list[dict]:
    out = io.StringIO()
    assert run_batch(io.StringIO("".join(json.dumps(line) + "\n" for line in lines)), out, model_dir=model_dir, language=language) == 0
    return [json.loads(row) for row in out.getvalue().splitlines()]


def test_a_workspace_that_cannot_be_indexed_fails_its_line_not_the_batch(tmp_path: Path, tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INFILL_CACHE_DIR", str(tmp_path / "cache"))
    good = tmp_path / "good"
    good.mkdir()
    (good / "a.py").write_text("def f(a):\n    x = compute(a)\n    return x\n")
    locked = tmp_path / "locked"
    locked.mkdir()
    a_file = tmp_path / "a_file.py"
    a_file.write_text("x = 1\n")
    refresh = WorkspaceIndex.refresh
    tried: list[Path] = []

    def unreadable(self: WorkspaceIndex, *args: object, **kwargs: object) -> object:
        """A folder with an entry the walk may not read (as `/proc/1/cwd` under `/`)."""
        if self.root.name == "locked":
            tried.append(self.root)
            raise PermissionError(13, "Permission denied", str(self.root / "secret"))
        return refresh(self, *args, **kwargs)

    monkeypatch.setattr(WorkspaceIndex, "refresh", unreadable)
    line = {"prefix": "def g(a):\n    x = compute(a)\n    ", "suffix": "\n", "max_tokens": 4}
    rows = _batch([{"id": "before", **line},
                   {"id": "missing", **line, "workspace": str(tmp_path / "missing")},
                   {"id": "file", **line, "workspace": str(a_file)},
                   {"id": "root", **line, "workspace": "/"},
                   {"id": "locked", **line, "workspace": str(locked)},
                   {"id": "locked-again", **line, "workspace": str(locked)},
                   {"id": "good", **line, "workspace": str(good)},
                   {"id": "after", **line}], tiny_model_dir)
    assert [r["id"] for r in rows] == ["before", "missing", "file", "root", "locked", "locked-again", "good", "after"]
    errors = {r["id"]: r["error"] for r in rows if "error" in r}
    assert set(errors) == {"missing", "file", "root", "locked", "locked-again"}
    assert "is not a folder" in errors["missing"] and "is not a folder" in errors["file"]
    assert "file system's root" in errors["root"]
    assert "cannot be indexed" in errors["locked"] and "Permission denied" in errors["locked"]
    assert errors["locked-again"] == errors["locked"] and len(tried) == 1  # one attempt per folder
    for row in rows:
        if row["id"] not in errors:
            assert isinstance(row["middle"], str) and row["tokens"] <= 4
    assert rows[6]["drafts_verified"] >= 1  # the good workspace still serves its lines


def test_a_line_without_a_language_runs_with_the_detected_one_and_says_so(tiny_model_dir: Path) -> None:
    python = {"prefix": "def greet(name):\n    return f\"", "suffix": "\n\n\nprint(greet('x'))\n", "max_tokens": 4}
    rows = _batch([{"id": "detected", **python},
                   {"id": "filename", "prefix": "fn main() {\n    let x = ", "suffix": ";\n}\n", "filename": "src/main.rs", "max_tokens": 4},
                   {"id": "named", **python, "language": "javascript", "filename": "x.rs"},
                   {"id": "nothing", "prefix": "x = ", "suffix": "", "max_tokens": 2}], tiny_model_dir)
    chosen = {r["id"]: (r["language"], r["language_source"]) for r in rows}
    assert chosen == {"detected": ("python", "detected"), "filename": ("rust", "filename"),
                      "named": ("javascript", "request"), "nothing": (None, "none")}  # too little to tell
    # --language is the default of lines without one, before their file name and detection.
    rows = _batch([{"id": "default", **python, "filename": "x.rs"}], tiny_model_dir, language="go")
    assert (rows[0]["language"], rows[0]["language_source"]) == ("go", "request")


def test_max_batch_one_answers_every_line_as_the_shared_passes_do(tiny_model_dir: Path) -> None:
    """`infill batch --max-batch 1` (one line at a time) and the default (lines sharing each
    forward pass) give the same answers: batching changes the speed, never a middle."""
    lines = [{"id": str(i), "prefix": f"def f{i}(a, b):\n    return ", "suffix": "\n", "language": "python", "max_tokens": 12} for i in range(6)]
    alone, shared = io.StringIO(), io.StringIO()
    for out, max_batch in ((alone, 1), (shared, None)):
        source = io.StringIO("".join(json.dumps(line) + "\n" for line in lines))
        assert run_batch(source, out, model_dir=tiny_model_dir, max_batch=max_batch) == 0
    answers = [[(row["id"], row["middle"], row["forwards"], row["stop_reason"]) for row in map(json.loads, out.getvalue().splitlines())] for out in (alone, shared)]
    assert len(answers[0]) == 6 and answers[0] == answers[1]


def test_max_batch_outside_its_range_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    from infill_lsp.cli import main

    with pytest.raises(SystemExit) as stop:
        main(["batch", "--max-batch", "0"])
    assert stop.value.code == 2 and "--max-batch: 0 is outside 1..64" in capsys.readouterr().err


def test_a_line_says_where_its_middle_came_from(tmp_path: Path, tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`source` on every line: "workspace" when the middle is a workspace line kept as is,
    with `origin` "path:line" naming where it stands; "model" and no `origin` otherwise.
    The accept rule keeps every draft here (ACCEPT 0): the test is about the fields."""
    import engine.drafts as drafts_module

    monkeypatch.setattr(drafts_module, "ACCEPT", 0.0)
    monkeypatch.setenv("INFILL_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.py").write_text("import os\n\n\ndef f(a):\n    x = compute(a)\n    return x\n")
    (root / "b.py").write_text("# on disk: replaced by the line's text\n")
    line = {"prefix": "def g(a):\n    x = compute(a)\n    ", "suffix": "\n", "max_tokens": 8}
    rows = _batch([{"id": "ws", **line, "workspace": str(root), "filename": str(root / "b.py")},
                   {"id": "alone", **line}], tiny_model_dir)
    ws, alone = rows
    assert (ws["middle"], ws["draft"], ws["source"], ws["origin"]) == ("return x", "workspace", "workspace", "a.py:6")
    assert (root / "a.py").read_text().split("\n")[6 - 1] == "    return x"  # the line the origin names
    assert "draft_origin" not in ws  # one name for it on every surface: `origin`
    assert alone["source"] == "model" and alone["draft"] == "" and "origin" not in alone
