"""A few thousand seeded fuzz messages against `infill lsp` (lab/fuzz/): every property
holds. The 100,000-message run and its figures are in docs/reliability.md."""
from __future__ import annotations

from pathlib import Path

import pytest

from lab.fuzz.lsp_fuzz import failures, run


@pytest.mark.slow
def test_three_thousand_fuzz_messages_break_nothing(tmp_path: Path, tiny_model_dir: Path) -> None:
    figures = run(3000, seed=20, model=str(tiny_model_dir), workdir=tmp_path)
    assert failures(figures) == {}, {k: figures[k] for k in ("examples", "error_codes")}
    assert figures["answers"] >= figures["requests"] > 1000
    assert figures["positions_checked"] > 20  # answers with positions in them were checked
    assert figures["state_checks"] > 800
    assert figures["rss_mb"]["growth"] is not None and figures["rss_mb"]["growth"] < 100
