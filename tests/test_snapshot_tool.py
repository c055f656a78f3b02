"""lab/evaluation/snapshot.py: compare counts what differs, record writes well-formed lines."""
import json
import os
import subprocess
import sys
from pathlib import Path

from lab.evaluation.snapshot import REQUIRED_KEYS, main

ROOT = Path(__file__).resolve().parent.parent


def _row(item_id, middle="x\n", tokens=2, forwards=3, stop_reason="end_of_middle", suite="dev", **extra):
    row = {"suite": suite, "id": item_id, "middle": middle, "tokens": tokens, "forwards": forwards, "stop_reason": stop_reason,
           "candidates_tried": 1, "vetoed": 0, "edits": 0, "written": tokens + 1, "replayed": 0, "draft": "", "end_rule": None}
    row.update(extra)
    return row


def _write(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_compare_counts_each_field_separately(tmp_path, capsys):
    a = _write(tmp_path / "a.jsonl", [
        _row("1"), _row("2"), _row("3"), _row("4", stop_reason="max_tokens"), _row("5"), _row("only-a"),
    ])
    b = _write(tmp_path / "b.jsonl", [
        _row("1"),                                             # same
        _row("2", middle="y\n"),                               # middle only
        _row("3", forwards=4, tokens=3, written=4),            # forwards, tokens (and written)
        _row("4", stop_reason="rejected", middle="", tokens=0, written=1),  # stop_reason, middle, tokens
        _row("5", vetoed=2),                                   # another field only
        _row("HumanEval/0#1", suite="humaneval"),              # only in B
    ])
    assert main(["compare", str(a), str(b), "--show", "2"]) == 0
    out = capsys.readouterr().out
    assert "items compared: 5 (only in A: 1, only in B: 1)" in out
    counts = {line.split(":")[0].strip(): line.split(":")[1].strip() for line in out.splitlines() if line.strip().startswith("differ in ") and "any field" not in line}
    assert counts == {"differ in middle": "2", "differ in forwards": "1", "differ in stop_reason": "1", "differ in tokens": "2"}
    assert "differ in any field: 4 (also: vetoed 1, written 2)" in out
    table = {line.split()[0]: line.split()[1:3] for line in out.splitlines() if line.split()[:1] and line.split()[0] in ("end_of_middle", "max_tokens", "rejected")}
    assert table == {"end_of_middle": ["5", "5"], "max_tokens": ["1", "0"], "rejected": ["0", "1"]}
    assert "end_rule" not in out  # no file has one yet
    lines = out.splitlines()
    assert "first 2 of 4 differing items:" in lines and "dev 2" in lines and "dev 3" in lines and "dev 4" not in lines


def test_compare_end_rule_table_when_present(tmp_path, capsys):
    a = _write(tmp_path / "a.jsonl", [_row("1"), _row("2")])  # before end_rule existed
    b = _write(tmp_path / "b.jsonl", [_row("1", end_rule="newline"), _row("2", end_rule="closer")])
    assert main(["compare", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "differ in any field: 0" in out  # a missing end_rule is no difference
    rows = {line.split()[0]: line.split()[1:3] for line in out.splitlines() if line.split()[:1] and line.split()[0] in ("None", "newline", "closer")}
    assert rows == {"None": ["2", "0"], "newline": ["0", "1"], "closer": ["0", "1"]}


def test_compare_unreadable_files_exit_2(tmp_path, capsys):
    good = _write(tmp_path / "good.jsonl", [_row("1")])
    assert main(["compare", str(good), str(tmp_path / "missing.jsonl")]) == 2
    assert "cannot read" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(_row("1")) + "\n{not json\n")
    assert main(["compare", str(bad), str(good)]) == 2
    assert "bad.jsonl:2: not a JSON line" in capsys.readouterr().err
    partial = _write(tmp_path / "partial.jsonl", [{"suite": "dev", "id": "1"}])
    assert main(["compare", str(good), str(partial)]) == 2
    assert "missing middle" in capsys.readouterr().err


def test_record_two_dev_items(tmp_path):
    out = tmp_path / "snap.jsonl"
    proc = subprocess.run([sys.executable, "-m", "lab.evaluation.snapshot", "record", "--suite", "dev", "--limit", "2", "--out", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr
    assert "snapshot dev 2/2" in proc.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 2
    for row in rows:
        assert set(REQUIRED_KEYS) <= set(row) and "end_rule" in row
        assert "ms" not in row and "work_ms" not in row
        assert row["suite"] == "dev" and isinstance(row["middle"], str) and row["stop_reason"]
        assert isinstance(row["tokens"], int) and row["forwards"] >= 1
    assert len({r["id"] for r in rows}) == 2
