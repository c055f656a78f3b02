"""A request's wall time is bounded, long CLI requests say they are working, and the stop
reason says why a request ended early (issue 26, defect 3: `infill complete --max-tokens
3000` printed nothing for 11 minutes).

No verdict here depends on the machine's speed: a deadline of 0 means "stop after the
first pass", and the progress interval is set to 0 so that every pass reports.
"""
from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest

from engine.types import SamplerSettings, SettingsError
from infill_lsp import cli

PREFIX = "def add(a, b):\n    return "
SUFFIX = "\n\n\nprint(add(1, 2))\n"


def test_the_deadline_is_a_setting_with_a_default_and_bounds():
    assert SamplerSettings().deadline_seconds == 60.0
    with pytest.raises(SettingsError, match="deadline_seconds"):
        SamplerSettings().replace(deadline_seconds=-1)


def test_a_request_past_its_deadline_stops_and_returns_what_it_wrote(tiny_engine):
    whole = tiny_engine.infill(PREFIX, SUFFIX, max_tokens=64, allow_end=False, constrained=False)
    assert whole.stop_reason == "max_tokens" and whole.tokens == 64
    cut = tiny_engine.infill(PREFIX, SUFFIX, max_tokens=64, allow_end=False, constrained=False, deadline_seconds=0)
    assert cut.stop_reason == "deadline"
    steps = list(tiny_engine.stream(PREFIX, SUFFIX, max_tokens=64, allow_end=False, constrained=False, deadline_seconds=0))
    assert [s.step for s in steps if s.result is None] == [1]  # one pass ran, then no other
    # The partial result is the text of the canvas up to its first masked position.
    canvas = steps[0].canvas
    written = canvas[: canvas.index(None)] if None in canvas else canvas
    assert cut.middle == "".join(written) and cut.tokens == len(written) < 64


def test_a_constrained_request_past_its_deadline_tries_no_other_candidate(tiny_engine):
    result = tiny_engine.infill(PREFIX, SUFFIX, language="python", max_tokens=64, deadline_seconds=0)
    assert result.stop_reason == "deadline" and result.candidates_tried == 1


def test_long_cli_requests_report_progress_on_stderr(tiny_engine, monkeypatch):
    monkeypatch.setattr(cli, "PROGRESS_EVERY_SECONDS", 0.0)
    err = io.StringIO()
    result = cli._run_with_progress(tiny_engine.stream(PREFIX, SUFFIX, max_tokens=16, allow_end=False, constrained=False), err)
    lines = err.getvalue().splitlines()
    # It ran to max_tokens (the tiny model's text there is a loop, answered empty: engine/degenerate.py).
    assert result.stop_reason in ("max_tokens", "degenerate") and len(lines) >= 2 and f"pass {len(lines)}, " in lines[-1]  # one per canvas pass
    assert lines[0].startswith("-- still working: ") and "pass 1, " in lines[0] and "canvas tokens written" in lines[0]


def test_infill_complete_with_a_deadline_prints_the_partial_result_and_the_reason(tmp_path, tiny_model_dir):
    path = tmp_path / "sample.py"
    path.write_text(PREFIX + SUFFIX)
    out = subprocess.run([sys.executable, "-m", "infill_lsp.cli", "complete", str(path), "--line", "2", "--column", "12", "--model", str(tiny_model_dir),
                          "--max-tokens", "2048", "--deadline", "0", "--no-constrained", "--json"], capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr
    figures = json.loads(out.stdout)
    assert figures["stop_reason"] == "deadline" and figures["forwards"] <= 2  # the context and one canvas pass
    bad = subprocess.run([sys.executable, "-m", "infill_lsp.cli", "complete", str(path), "--line", "2", "--column", "12", "--model", str(tiny_model_dir), "--deadline", "-1"],
                         capture_output=True, text=True, timeout=180)
    assert bad.returncode != 0 and "deadline_seconds" in bad.stderr and "Traceback" not in bad.stderr
