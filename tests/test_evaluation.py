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
