"""lab/evaluation/drafted.py: each draft source's share of the committed tokens."""
import json

from lab.evaluation.drafted import main, shares


def _answer(tokens, forwards, written, lookahead=None, passes=0, draft=""):
    return {"id": "x", "middle": "m" * tokens, "tokens": tokens, "forwards": forwards, "written": written,
            "lookahead": lookahead or {}, "lookahead_passes": passes, "draft": draft}


ROWS = [
    _answer(6, 3, 8, {"copy": 2, "model": 1}, passes=3),  # two candidates' worth written, three replayed passes
    _answer(4, 1, 5, draft="workspace"),                   # a whole workspace line verified in the first pass
    _answer(0, 5, 10, {"copy": 1, "workspace": 3}, passes=2),  # an empty answer still wrote (and replayed) tokens
]


def test_shares_count_replayed_tokens_of_written_and_whole_lines_of_returned():
    s = shares(ROWS)
    assert (s["answers"], s["tokens_returned"], s["forwards"], s["written"]) == (3, 10, 9, 23)
    assert s["tokens_per_forward"] == round(10 / 9, 3)
    assert s["replayed_passes"] == 5
    assert s["replayed_by_source"] == {"copy": {"tokens": 3, "of_written": round(3 / 23, 3)},
                                       "model": {"tokens": 1, "of_written": round(1 / 23, 3)},
                                       "workspace": {"tokens": 3, "of_written": round(3 / 23, 3)}}
    assert s["replayed_of_written"] == round(7 / 23, 3)
    assert s["whole_line_by_source"] == {"workspace": {"answers": 1, "tokens": 4, "of_returned": 0.4}}


def test_no_answers_no_division_by_zero():
    s = shares([])
    assert s["tokens_per_forward"] == 0.0 and s["replayed_of_written"] == 0.0 and s["replayed_by_source"] == {}


def test_command_groups_a_snapshot_by_suite_and_skips_refused_lines(tmp_path, capsys):
    path = tmp_path / "snap.jsonl"
    rows = [dict(ROWS[0], suite="dev"), dict(ROWS[2], suite="humaneval"), {"id": "bad", "error": "prefix must be a string"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main([str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert sorted(out) == ["dev", "humaneval"]
    assert out["dev"]["replayed_by_source"]["copy"]["tokens"] == 2
    assert out["humaneval"]["tokens_returned"] == 0
    assert main([str(path)]) == 0
    text = capsys.readouterr().out
    assert "dev: 1 answers, 6 tokens returned in 3 forwards" in text and "copy" in text


def test_command_names_the_line_that_is_not_json(tmp_path, capsys):
    path = tmp_path / "answers.jsonl"
    path.write_text(json.dumps(ROWS[0]) + "\n{not json\n")
    assert main([str(path)]) == 2
    assert "answers.jsonl:2: not a JSON line" in capsys.readouterr().err


def test_two_files_are_told_apart_even_with_the_same_suite(tmp_path, capsys):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text(json.dumps(dict(ROWS[0], suite="dev")) + "\n")
    b.write_text(json.dumps(dict(ROWS[1], suite="dev")) + "\n")
    assert main([str(a), str(b), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert sorted(out) == ["a.jsonl dev", "b.jsonl dev"] and out["b.jsonl dev"]["whole_line_by_source"]["workspace"]["answers"] == 1
