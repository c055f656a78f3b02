"""The evaluation harness executes for real: the canonical line passes, a wrong one fails."""
import json
from pathlib import Path
import subprocess
import sys

from lab.evaluation.execution import run_program
from lab.evaluation.humaneval import single_line_tasks


def test_single_line_tasks_cover_every_non_blank_solution_line():
    tasks = list(single_line_tasks())
    assert len(tasks) == 1033  # Bavarian et al. (2022) report 1,033 single-line tasks
    assert all(t.middle.strip() and t.middle.endswith("\n") for t in tasks)


def test_canonical_middle_passes_and_a_broken_one_fails():
    tasks = list(single_line_tasks())[:3]
    for task in tasks:
        assert run_program(task.program(task.middle)).passed, task.task_id
        assert not run_program(task.program("    raise SystemExit(3)\n" if task.middle.startswith("    ") else "raise SystemExit(3)\n")).passed


def test_runaway_programs_time_out():
    result = run_program("while True:\n    pass\n", timeout=1.0)
    assert not result.passed and result.reason == "timeout"


def test_eval_command_smoke(tiny_model_dir):
    out = subprocess.run(
        [sys.executable, "-m", "lab", "eval", "--model", str(tiny_model_dir), "--limit", "3", "--json"],
        capture_output=True, text=True, timeout=600, env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"}, cwd=Path(__file__).resolve().parent.parent,
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    he = report["humaneval_single_line"]
    assert he["tasks"] == 3
    for mode in ("engine", "oracle"):
        assert 0 <= he[mode]["pass_at_1"] <= 100
    assert set(report["heldout_exact_match"]) <= {"python", "javascript"}


def test_the_indent_cursor_moves_the_indentation_to_the_prefix_and_the_program_is_unchanged():
    from lab.evaluation.run import at_indent

    task = next(t for t in single_line_tasks() if t.middle.startswith("        "))
    moved = at_indent(task)
    assert moved.prefix.endswith("        ") and not moved.middle[0].isspace()
    assert moved.program(moved.middle) == task.program(task.middle)
    assert run_program(moved.program(moved.middle)).passed


def test_ladder_smoke(tiny_model_dir, tmp_path):
    """Every rung runs for both cursors on both sets and reports exact match, empties and
    (HumanEval) pass@1."""
    out = tmp_path / "ladder.json"
    proc = subprocess.run(
        [sys.executable, "-m", "lab.evaluation.ladder", "--model", str(tiny_model_dir), "--limit", "2", "--json", str(out)],
        capture_output=True, text=True, timeout=600, env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    ladder = json.loads(out.read_text())["ladder"]
    for set_name in ("dev", "humaneval"):
        for cursor in ("line_start", "indent"):
            rows = ladder[set_name][cursor]
            assert list(rows) == ["autoregressive", "oracle_length", "engine_length", "default"]
            for row in rows.values():
                assert row["items"] == 2 and 0 <= row["empty"] <= 2 and 0 <= row["exact_match"] <= 100
                assert ("pass_at_1" in row) == (set_name == "humaneval")


def test_empties_classes_follow_the_engines_final_check():
    # lab/evaluation/empties.py: an unconstrained middle the final check accepts is a false
    # veto (when the constrained run was vetoed) or the schedule's loss; one with no
    # acceptable form is `broken`.
    import grammars
    from lab.evaluation.empties import classify

    c = grammars.constraint_for("python")
    prefix, suffix = "def f(x):\n    ", "\n    return x\n"
    assert classify(c, prefix, suffix, "x = 1", vetoed=2) == "false_veto"
    assert classify(c, prefix, suffix, "x = 1", vetoed=0) == "schedule"
    # polish trims a broken tail first, as accepted_cut does: that middle counts as whole
    assert classify(c, prefix, suffix, "x = 1\n    if (", vetoed=1) == "false_veto"
    assert classify(c, prefix, suffix, "if (", vetoed=1) == "broken"
