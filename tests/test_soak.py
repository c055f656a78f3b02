"""The 60-second soak (lab/soak/): both servers under replayed typing, reconnects, a
client that stops reading and cancellations, with no unexpected error and flat memory.
The hour-long run and its plot are in docs/reliability.md."""
from __future__ import annotations

from pathlib import Path

import pytest

from lab.soak.run import main


@pytest.mark.slow
def test_sixty_second_soak(tmp_path: Path) -> None:
    import json

    assert main(["--seconds", "60", "--out", str(tmp_path), "--sample-s", "2"]) == 0
    figures = json.loads((tmp_path / "soak.json").read_text())
    assert figures["unexpected_errors"] == 0, figures["unexpected_examples"]
    assert figures["lsp"]["requests"] > 100 and figures["live"]["requests"] > 100
    assert figures["lsp"]["answered"] + figures["lsp"]["cancelled"] >= figures["lsp"]["requests"] - 1
    assert figures["reconnects"]["rounds"] >= 3
    assert figures["slow_clients"]["closed_4008"] == figures["slow_clients"]["started"] >= 1
    for server in ("lsp", "live"):
        assert figures["rss_mb"][server]["growth"] < 100, figures["rss_mb"]
    assert figures["clients_ended_s"]["slow clients"] < 100  # everything stops near the end of the run
    assert (tmp_path / "soak.png").stat().st_size > 10_000
