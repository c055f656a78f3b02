"""lab/workspace/real_lines.py: the real-lines figure's items and score, on a package the
test writes into the cache (no registry)."""
from __future__ import annotations

from pathlib import Path

import pytest

from lab.workspace import lines, real_lines

SOURCE = """\
import os


def read(path):
    with open(path) as handle:
        return handle.read()


def write(path, text):
    with open(path, "w") as handle:
        handle.write(text)


def size(path):
    with open(path, "rb") as stream:
        return len(stream.read())
"""


@pytest.fixture()
def fake_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    cache = tmp_path / "cache"
    source = cache / "fakepkg" / "fakepkg-1.0" / "fakepkg"
    source.mkdir(parents=True)
    (source / "io.py").write_text(SOURCE)
    monkeypatch.setattr(lines, "CACHE", cache)
    monkeypatch.setitem(lines.PACKAGES, "fakepkg", lines.Package("pypi", "fakepkg==1.0", "fakepkg", ("*.py",)))
    return "fakepkg"


def test_workspace_items_hold_no_sampled_line(fake_package: str, tmp_path: Path) -> None:
    items, baseline = real_lines.build_items([fake_package], 5, tmp_path / "work", workspace=True)
    assert len(items) == 5
    references = {item.reference for item in items}
    for item in items:
        workspace_text = Path(item.filename).read_text()
        assert Path(item.filename).is_relative_to(item.workspace)
        for reference in references:  # neither the request nor its workspace holds an answer
            assert reference not in item.prefix + item.suffix
            assert reference not in workspace_text
        assert item.prefix.split("\n")[-1].strip() == ""  # the cursor after the indentation
    assert set(baseline) == {fake_package}


def test_without_workspace_the_request_sees_the_original_file(fake_package: str, tmp_path: Path) -> None:
    items, baseline = real_lines.build_items([fake_package], 5, tmp_path / "work", workspace=False)
    assert baseline == {} and all(item.workspace == "" for item in items)
    for item in items:
        others = {other.reference for other in items if other is not item}
        assert all(reference in item.prefix + item.suffix for reference in others)
        assert "workspace" not in real_lines.request(item)


def test_previous_line_baseline_reads_the_majority_follower(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    text = "x = 1\ny = 2\nx = 1\ny = 2\nx = 1\nz = 3\nx = 1\n\n"
    (workspace / "a.py").write_text(text)
    picks = [(Path("a.py"), 7)]  # the blank line after the last `x = 1`: `y = 2` followed it twice, `z = 3` once
    assert real_lines.previous_line_baseline(workspace, picks, ["y = 2"]) == 1
    assert real_lines.previous_line_baseline(workspace, picks, ["z = 3"]) == 0


def test_score_counts_first_lines_empties_and_errors(fake_package: str, tmp_path: Path) -> None:
    items, _ = real_lines.build_items([fake_package], 3, tmp_path / "work", workspace=False)
    answers = {
        items[0].id: {"id": items[0].id, "middle": items[0].reference + "\n    more", "tokens": 6, "forwards": 2},
        items[1].id: {"id": items[1].id, "middle": "  ", "tokens": 0, "forwards": 1},
    }  # the third has no answer: an error
    summary = real_lines.score(items, answers, {})
    assert summary["n"] == 3 and summary["errors"] == 1 and summary["empty"] == 2
    assert summary["exact_match"] == round(1 / 3, 4) and summary["exact_match_python"] == round(1 / 3, 4)
    assert summary["tokens_per_forward"] == 2.0
    assert summary["per_package"][fake_package] == {"n": 3, "exact": 1, "empty": 2}


def test_split_counts_held_near_and_far_lines(fake_package: str, tmp_path: Path) -> None:
    """--split: each blanked line is held (it stands elsewhere in the workspace), near (a
    line at similarity >= 0.8) or far, and exact match is counted per kind."""
    into = tmp_path / "work"
    items, _ = real_lines.build_items([fake_package], 6, into, workspace=True)
    kinds = real_lines.split_kinds(items, into)
    assert set(kinds) == {item.id for item in items} and set(kinds.values()) <= {"held", "near", "far"}
    by_reference = {item.reference: kinds[item.id] for item in items}
    if "def read(path):" in by_reference:  # no other `def read(path):`; `def size(path):` is 0.8 alike
        assert by_reference["def read(path):"] in ("near", "far")
    answers = {item.id: {"middle": item.reference} for item in items[:2]}
    split = real_lines.split_scores(items, answers, kinds)
    assert sum(entry["n"] for entry in split.values()) == len(items)
    assert sum(entry["exact"] for entry in split.values()) == 2
    assert sum(entry["empty"] for entry in split.values()) == len(items) - 2


def test_knobs_are_json_values() -> None:
    assert real_lines.parse_knob("edit_drafts=true") == ("edit_drafts", True)
    assert real_lines.parse_knob("edit_threshold=0.5") == ("edit_threshold", 0.5)
    with pytest.raises(Exception):
        real_lines.parse_knob("no-equals-sign")
