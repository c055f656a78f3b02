"""infill/nextEdit end to end: a real `infill lsp` process, the real engine on a tiny
random model, edits typed through didChange (the server builds the history itself)."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from lab.fixtures.lsp_client import LspClient, LspResponseError

REPO = Path(__file__).resolve().parents[1]
URI = "file:///tmp/rename.py"
SOURCE = "count = 0\nfor x in range(3):\n    count += x\nprint('😀', count)\n"
# modelWeight 1: the model scores every proposal (the real code path), while minConfidence
# 0.3 keeps the test independent of what a random model thinks of them.
SETTINGS = {"debounceMs": 0, "nextEdit": {"modelWeight": 1.0, "minConfidence": 0.3}}


@pytest.fixture(scope="module")
def server(tiny_model_dir, tmp_path_factory):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), str(REPO)) if p)
    env["OMP_NUM_THREADS"] = "1"
    tmp = tmp_path_factory.mktemp("lsp")
    client = LspClient([sys.executable, "-m", "infill_lsp", "--model", str(tiny_model_dir)], configuration=SETTINGS, stderr_path=tmp / "err", cwd=str(tmp), env=env)
    client.initialize({"workspace": {"configuration": True}, "window": {"workDoneProgress": True}})
    client.wait_for_notification(lambda m: m.get("method") == "$/progress" and m["params"]["value"]["kind"] == "end", 120)
    yield client
    client.close()


def _type_rename(client: LspClient) -> int:
    """Replace the first `count` with `total`, one keystroke per didChange."""
    client.open(URI, SOURCE, version=1)
    version = 1
    client.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": 2}, "contentChanges": [{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 5}}, "text": ""}]})
    version = 2
    for i, ch in enumerate("total"):
        version += 1
        change = {"range": {"start": {"line": 0, "character": i}, "end": {"line": 0, "character": i}}, "text": ch}
        client.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": version}, "contentChanges": [change]})
    return version


def test_next_edit_after_a_typed_rename(server: LspClient) -> None:
    version = _type_rename(server)
    answer = server.request("infill/nextEdit", {"textDocument": {"uri": URI, "version": version}, "position": {"line": 0, "character": 5}}, timeout=120)
    assert answer["version"] == version
    edits = answer["edits"]
    assert [e["newText"] for e in edits] == ["total", "total"]
    # UTF-16 positions: the emoji before the last `count` counts two code units.
    assert [e["range"]["start"] for e in edits] == [{"line": 2, "character": 4}, {"line": 3, "character": 12}]
    assert [e["range"]["end"] for e in edits] == [{"line": 2, "character": 9}, {"line": 3, "character": 17}]
    assert all(0 < e["confidence"] < 1 and e["kind"] == "rename" for e in edits)
    stats = server.request("infill/stats")
    assert stats["counts"]["next_edit_shown"] >= 1


def test_stale_version_unknown_document_and_bad_params(server: LspClient) -> None:
    version = _type_rename(server)
    stale = server.request("infill/nextEdit", {"textDocument": {"uri": URI, "version": version - 1}, "position": {"line": 0, "character": 0}})
    assert stale["edits"] == [] and stale["reason"] == "stale version"
    unknown = server.request("infill/nextEdit", {"textDocument": {"uri": "file:///nope.py", "version": 1}, "position": {"line": 0, "character": 0}})
    assert unknown["edits"] == []
    with pytest.raises(LspResponseError) as error:
        server.request("infill/nextEdit", {"textDocument": {"uri": URI}, "position": {"line": -1, "character": 0}})
    assert error.value.code == -32602
    # The server is still fine.
    assert server.request("infill/nextEdit", {"textDocument": {"uri": URI, "version": version}, "position": {"line": 0, "character": 5}})["edits"]


def test_a_newer_request_supersedes_an_older_one(server: LspClient) -> None:
    version = _type_rename(server)
    # Far longer than the gap between the two requests (300 ms could pass on a loaded machine).
    server.notify("workspace/didChangeConfiguration", {"settings": {"infill": {**SETTINGS, "debounceMs": 3000}}})
    try:
        params = {"textDocument": {"uri": URI, "version": version}, "position": {"line": 0, "character": 5}}
        _, older = server.request_async("infill/nextEdit", params)
        newer = server.request("infill/nextEdit", params, timeout=60)
        assert older.result(timeout=60)["reason"] == "superseded"
        assert len(newer["edits"]) == 2
    finally:
        server.notify("workspace/didChangeConfiguration", {"settings": {"infill": SETTINGS}})
