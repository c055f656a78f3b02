"""1,000 malformed or out-of-order messages leave the server alive and answering."""
from __future__ import annotations

import json
import os
import random
import sys
import time
from pathlib import Path

import pytest

from lab.fixtures.lsp_client import LspClient, LspResponseError

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    from lab.fixtures.tiny_model import make_tiny_model_dir

    return make_tiny_model_dir(tmp_path_factory.mktemp("tiny") / "model")


def _frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def test_a_thousand_bad_messages_leave_the_server_answering(tmp_path: Path, tiny_model: Path) -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), str(REPO)) if p)
    client = LspClient(
        [sys.executable, "-m", "infill_lsp", "--model", str(tiny_model)],
        # A long debounce: the flood of completion requests supersede one another instead
        # of each costing a model pass (this test is about survival, not suggestions).
        configuration={"debounceMs": 50, "maxTokens": 4, "constrained": False},
        stderr_path=tmp_path / "server.err",
        cwd=str(tmp_path),
        env=env,
    )
    rng = random.Random(1234)
    good_uri = "file:///w/good.py"
    # Out of order: a completion and a change before initialize.
    client.send({"jsonrpc": "2.0", "id": "early", "method": "textDocument/inlineCompletion",
                 "params": {"textDocument": {"uri": good_uri}, "position": {"line": 0, "character": 0}, "context": {"triggerKind": 1}}})
    client.notify("textDocument/didChange", {"textDocument": {"uri": good_uri, "version": 9}, "contentChanges": [{"text": "x"}]})
    client.initialize({"workspace": {"configuration": True}})
    client.open(good_uri, "def f(x):\n    return x\n")
    huge = "x = 1  # padding\n" * 200_000  # about 3.4 MB

    def position(line: int, character: int) -> dict:
        return {"line": line, "character": character}

    def completion(uri: str, line: int, character: int) -> dict:
        return {"textDocument": {"uri": uri}, "position": position(line, character), "context": {"triggerKind": 1}}

    makers = [
        lambda i: b"{this is not json",
        lambda i: b"[1, 2, 3]",
        lambda i: b'"a string"',
        lambda i: b"null",
        lambda i: json.dumps({"jsonrpc": "2.0", "id": i, "method": f"nonsense/method{i}", "params": {}}).encode(),
        lambda i: json.dumps({"jsonrpc": "2.0", "method": f"$/unknownNotification{i}", "params": [1]}).encode(),
        lambda i: json.dumps({"jsonrpc": "2.0", "id": i, "method": "textDocument/inlineCompletion",
                              "params": completion(good_uri, 10**6, 10**6)}).encode(),
        lambda i: json.dumps({"jsonrpc": "2.0", "id": i, "method": "textDocument/inlineCompletion",
                              "params": completion("file:///never/opened.py", 0, 0)}).encode(),
        lambda i: json.dumps({"jsonrpc": "2.0", "id": i, "method": "textDocument/inlineCompletion",
                              "params": {"textDocument": {"uri": good_uri}, "position": "here"}}).encode(),
        lambda i: json.dumps({"jsonrpc": "2.0", "id": i, "method": "textDocument/completion",
                              "params": {"textDocument": {"uri": good_uri}, "position": position(-5, -5)}}).encode(),
        lambda i: json.dumps({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": "file:///never/opened.py", "version": i},
            "contentChanges": [{"range": {"start": position(0, 0), "end": position(0, 0)}, "text": "y"}]}}).encode(),
        lambda i: json.dumps({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": good_uri, "version": i},
            "contentChanges": [{"range": {"start": position(900, 3), "end": position(1, 0)}, "text": "😀\r\n"}]}}).encode(),
        lambda i: json.dumps({"jsonrpc": "2.0", "method": "textDocument/didClose", "params": {"textDocument": {"uri": f"file:///nope{i}"}}}).encode(),
        lambda i: json.dumps({"jsonrpc": "2.0", "id": i, "method": "workspace/executeCommand",
                              "params": {"command": "infill.accept", "arguments": [{"bad": True}, 3]}}).encode(),
        lambda i: json.dumps({"jsonrpc": "2.0", "method": "workspace/didChangeConfiguration",
                              "params": {"settings": {"infill": {"maxTokens": "many", "debounceMs": 50}}}}).encode(),
        lambda i: json.dumps({"jsonrpc": "2.0", "id": {"odd": "id"}, "method": "textDocument/inlineCompletion", "params": None}).encode(),
        lambda i: json.dumps({"jsonrpc": "2.0", "id": 10**9 + i, "result": "a reply nobody asked for"}).encode(),
        lambda i: json.dumps({"jsonrpc": "1.0", "id": i, "method": "infill/stats"}).encode(),
        lambda i: json.dumps({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 424242}}).encode(),
    ]
    expect_reply: set[int] = set()
    for i in range(1000):
        choice = rng.randrange(len(makers))
        if i == 500:  # a huge document in the middle of the storm, and a request at its end
            client.open("file:///w/huge.py", huge, version=1)
            body = json.dumps({"jsonrpc": "2.0", "id": 7_000_000, "method": "textDocument/inlineCompletion",
                               "params": completion("file:///w/huge.py", 200_000, 0)}).encode()
            expect_reply.add(7_000_000)
        else:
            body = makers[choice](i + 1000)
            message = json.loads(body) if body.startswith(b"{") and b"this is not" not in body else None
            if isinstance(message, dict) and isinstance(message.get("id"), int) and "method" in message and message.get("jsonrpc") == "2.0":
                expect_reply.add(message["id"])
        client.send_bytes(_frame(body))

    # Still alive, still answering, and every well-formed request got a reply (result or error).
    stats = client.request("infill/stats", timeout=300)
    assert stats["open_documents"] >= 2
    deadline = time.monotonic() + 120
    while not expect_reply <= client.reply_ids and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(expect_reply) > 300 and expect_reply <= client.reply_ids, sorted(expect_reply - client.reply_ids)[:10]
    answered = client.request("textDocument/inlineCompletion", completion(good_uri, 1, 4), timeout=300)
    assert "items" in answered
    with pytest.raises(LspResponseError):  # an unknown method is an error reply, not silence
        client.request("nonsense/final", {})
    assert client.process.poll() is None
    assert client.close() == 0


def _server(tmp_path: Path, *args: str) -> LspClient:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), str(REPO)) if p)
    return LspClient([sys.executable, "-m", "infill_lsp", *args], stderr_path=tmp_path / "server.err", cwd=str(tmp_path), env=env)


def test_a_body_that_is_not_json_is_the_clients_error(tmp_path: Path, tiny_model: Path) -> None:
    client = _server(tmp_path, "--model", str(tiny_model))
    client.initialize()
    client.send_bytes(_frame(b"{this is not json"))
    warning = client.wait_for_notification(lambda m: m.get("method") == "window/logMessage" and "JSON" in m["params"]["message"])
    assert warning["params"]["type"] == 2  # a warning about the client's message, not an error of ours
    assert "internal error" not in warning["params"]["message"]
    assert "not JSON" in warning["params"]["message"]
    assert "open_documents" in client.request("infill/stats")  # still answering
    assert not client.messages("window/showMessage")  # no popup for a client's mistake
    deadline = time.monotonic() + 120  # let the model load finish before shutting down
    while not client.request("infill/stats").get("model") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert client.close(timeout=60) == 0
    err = (tmp_path / "server.err").read_text()
    assert "Traceback" not in err and "internal error" not in err


def test_a_model_directory_that_does_not_exist_is_refused_at_start(tmp_path: Path) -> None:
    import subprocess

    done = subprocess.run([sys.executable, "-m", "infill_lsp", "--model", str(tmp_path / "nope")], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "nope" in done.stderr and "Traceback" not in done.stderr
