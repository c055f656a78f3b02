"""lab/workspace/novelty.py: answers split by whether the workspace already holds the line."""
from collections import Counter
from pathlib import Path

from lab.workspace import novelty
from lab.workspace.lines import Item


def _item(id_: str, package: str, reference: str, workspace: str) -> Item:
    return Item(id_, package, "python", reference, "", "", workspace, workspace + "/f.py")


def test_an_answer_is_scored_on_its_first_line_as_real_lines_scores_it() -> None:
    assert novelty.outcome("return x", "return x\n") == "exact"
    assert novelty.outcome("return x", "  return x  \nmore") == "exact"
    assert novelty.outcome("return x", "return y") == "wrong"
    assert novelty.outcome("return x", "   \n") == "empty"
    assert novelty.outcome("return x", "") == "empty"


def test_held_lines_count_stripped_non_blank_lines_of_the_files(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n    return x\n\n")
    (tmp_path / "b.py").write_text("return x\n")
    counts = novelty.held_lines([tmp_path / "a.py", tmp_path / "b.py", tmp_path / "gone.py"])
    assert counts == Counter({"return x": 2, "x = 1": 1})


def test_the_table_splits_answers_by_whether_the_line_is_held() -> None:
    lines = [_item("p:1", "p", "return x", "W"), _item("p:2", "p", "y = 2", "W"),
             _item("q:1", "q", "return x", "V"), _item("q:2", "q", "z", "V")]
    held = {"W": Counter({"return x": 3}), "V": Counter()}
    answers = {"p:1": "return x", "p:2": "y = 3", "q:1": ""}  # q:2 has no answer in the dump
    table = novelty.tabulate(lines, answers, held)
    assert table["p"] == Counter({(True, "exact"): 1, (False, "wrong"): 1})
    assert table["q"] == Counter({(False, "empty"): 1, ("missing",): 1})
    assert table["all"] == table["p"] + table["q"]
    text = novelty.render(table)
    assert text.splitlines()[-1].split("|")[1].split() == ["1", "/", "0", "/", "0"]
    assert text.splitlines()[-1].split("|")[2].split() == ["0", "/", "1", "/", "1"]


def test_an_unreadable_dump_is_a_clear_error(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "answers.jsonl"
    bad.write_text("{not json\n")
    assert novelty.main(["--answers", str(bad)]) == 2
    assert "cannot read" in capsys.readouterr().err
    assert novelty.main(["--answers", str(tmp_path / "absent.jsonl")]) == 2
