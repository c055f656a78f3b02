"""A completion asked while the server still reads the client's settings (after
`initialized`, before the model starts loading) waits for the model; it used to be refused
with "the model has not started loading (the client never sent 'initialized')" (issue 35)."""
from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

from lab.fixtures.lsp_client import LspClient
from tests.test_lsp_server import ANSWERING, CAPABILITIES, _env


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    from lab.fixtures.tiny_model import make_tiny_model_dir

    return make_tiny_model_dir(tmp_path_factory.mktemp("tiny") / "model")


def test_a_completion_during_the_settings_round_trip_waits_for_the_model(tmp_path: Path, tiny_model: Path) -> None:
    asked, release = threading.Event(), threading.Event()
    client = LspClient([sys.executable, "-m", "infill_lsp", "--model", str(tiny_model)], configuration=ANSWERING,
                       stderr_path=tmp_path / "server.err", cwd=str(tmp_path), env=_env())

    def settings_later(params: dict) -> list:
        asked.set()
        assert release.wait(120), "the test never released the settings"
        return [ANSWERING for _ in params.get("items", [])]

    client.responders["workspace/configuration"] = settings_later
    try:
        client.initialize(CAPABILITIES, initialization_options=ANSWERING)
        assert asked.wait(60), "the server never asked for its settings"
        uri = (tmp_path / "a.py").as_uri()
        client.open(uri, "def add(a, b):\n    return \n")
        _, answer = client.request_async("textDocument/inlineCompletion", {
            "textDocument": {"uri": uri}, "position": {"line": 1, "character": 11}, "context": {"triggerKind": 1}})
        assert not answer.done()  # it waits: the model has not started loading yet
        release.set()
        result = answer.result(timeout=120)
        assert result["items"] and result["items"][0]["insertText"]
    finally:
        release.set()
        client.close()
