"""What an outside fuzzer found in `infill lsp`, one regression test each: the JSON-RPC
envelope and the LSP lifecycle, one document version per completion answer, lone
surrogates, settings problems reported once, and the memory each message used to keep."""
from __future__ import annotations

import asyncio
import gc
import json
import os
import sys
import time
import tracemalloc
from pathlib import Path

import pytest

from infill_lsp.handlers.document_state import text_digest
from lab.fixtures.lsp_client import LspClient, LspResponseError

REPO = Path(__file__).resolve().parents[1]


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), str(REPO)) if p)
    return env


def _start(tmp_path: Path, model: Path | None, configuration: dict | None = None) -> LspClient:
    argv = [sys.executable, "-m", "infill_lsp"] + (["--model", str(model)] if model else [])
    return LspClient(argv, configuration=configuration, stderr_path=tmp_path / "server.err", cwd=str(tmp_path),
                     env=_env())


def _wait_ready(client: LspClient) -> None:
    client.wait_for_notification(
        lambda m: m.get("method") == "window/logMessage" and "ready in" in m["params"]["message"], timeout=180)


def _request_error(client: LspClient, method: str, params=None) -> dict:
    with pytest.raises(LspResponseError) as caught:
        client.request(method, params, timeout=60)
    return caught.value.error


def _no_traceback(tmp_path: Path) -> None:
    stderr = (tmp_path / "server.err").read_text()
    assert "Traceback" not in stderr, stderr[-3000:]


def test_lifecycle_and_envelope_errors_get_the_codes_the_specs_name(tmp_path: Path) -> None:
    client = _start(tmp_path, None)
    try:
        # Before initialize: ServerNotInitialized.
        assert _request_error(client, "infill/stats")["code"] == -32002
        client.request("initialize", {"processId": None, "rootUri": None, "capabilities": {
            "general": {"positionEncodings": ["utf-8", "utf-16"]}}})
        uri = "file:///w/a.py"
        client.open(uri, "ä = 1\n")
        assert client.request("infill/documentState", {"textDocument": {"uri": uri}})["positionEncoding"] == "utf-8"

        # A second initialize is refused and does not switch the position encoding.
        error = _request_error(client, "initialize", {"processId": None, "rootUri": None, "capabilities": {}})
        assert error["code"] == -32600 and "already" in error["message"]
        assert client.request("infill/documentState", {"textDocument": {"uri": uri}})["positionEncoding"] == "utf-8"

        # "method": 42 is an Invalid Request answered with the request's id.
        client.send({"jsonrpc": "2.0", "id": 4242, "method": 42, "params": {}})
        # A batch is answered as JSON-RPC answers one: an array with an error per request.
        client.send_bytes(_framed(json.dumps([
            {"jsonrpc": "2.0", "id": 5001, "method": "infill/stats"},
            {"jsonrpc": "2.0", "method": "textDocument/didClose", "params": {"textDocument": {"uri": uri}}},
            {"jsonrpc": "2.0", "id": "5002", "method": "infill/stats"},
        ]).encode()))
        client.send_bytes(_framed(b"[]"))
        client.send_bytes(_framed(b"{not json"))
        client.send({"jsonrpc": "1.0", "id": 4343, "method": "infill/stats"})
        client.send({"jsonrpc": "2.0", "id": True, "method": "infill/stats"})
        assert "counts" in client.request("infill/stats")  # everything before it was handled
        replies = {json.dumps(r.get("id")): r for r in client.replies}
        assert replies["4242"]["error"]["code"] == -32600 and "method" in replies["4242"]["error"]["message"]
        assert replies["4343"]["error"]["code"] == -32600
        assert replies["5001"]["error"]["code"] == -32600 and replies['"5002"']["error"]["code"] == -32600
        assert [len(b) for b in client.batch_answers] == [2, 1]  # the notification gets no answer
        null_errors = sorted(r["error"]["code"] for r in client.replies if r.get("id") is None)
        assert null_errors == [-32700, -32600, -32600]  # not JSON; the empty batch; a boolean id
        # The batch's didClose was not executed.
        assert client.request("infill/documentState", {"textDocument": {"uri": uri}})["length"] == 6

        # Bad params of a custom request: InvalidParams, logged as the client's mistake.
        assert _request_error(client, "infill/nextEdit", {"position": 3})["code"] == -32602
        assert _request_error(client, "nonsense/method", {})["code"] == -32601

        # After shutdown: requests get Invalid Request.
        client.request("shutdown", None)
        error = _request_error(client, "infill/stats")
        assert error["code"] == -32600 and "shutdown" in error["message"]
        client.notify("exit", None)
        assert client.process.wait(timeout=30) == 0
    finally:
        client.close()
    logs = [m["params"]["message"] for m in client.messages("window/logMessage")]
    assert not any("internal error" in line for line in logs), logs
    assert not client.messages("window/showMessage")  # the client's mistakes never pop up
    _no_traceback(tmp_path)


def _framed(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def test_extra_initialized_does_not_reload_the_model(tmp_path: Path, tiny_model_dir: Path) -> None:
    client = _start(tmp_path, tiny_model_dir)
    try:
        client.initialize({})
        _wait_ready(client)
        for _ in range(3):
            client.notify("initialized", {})
        client.request("infill/stats")
        time.sleep(1.0)  # a reload would have started by now and finishes in well under a second
        client.request("infill/stats")
        loads = [m for m in client.messages("window/logMessage") if "ready in" in m["params"]["message"]]
        assert len(loads) == 1
    finally:
        client.close()


def test_completion_answer_belongs_to_one_document_version(tmp_path: Path, tiny_model_dir: Path) -> None:
    # The request is computed on the text it found; a didChange that arrives while it
    # waits (debounce) or runs makes its positions meaningless, so it answers nothing.
    # Before the fix the answer's start came from the new text and its end from the old.
    lines = [f"value_{i} = compute_{i}(alpha, beta)" for i in range(1000)]
    client = _start(tmp_path, tiny_model_dir, {"debounceMs": 300, "maxTokens": 6, "constrained": False})
    try:
        client.initialize({"workspace": {"configuration": True}})
        _wait_ready(client)
        uri = "file:///w/long.py"
        client.open(uri, "\n".join(lines) + "\n", version=1)
        params = {"textDocument": {"uri": uri}, "position": {"line": 31, "character": 15}}
        _, answer = client.request_async("textDocument/completion", params)
        client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [
            {"range": {"start": {"line": 20, "character": 0}, "end": {"line": 1000, "character": 0}}, "text": ""}]})
        assert answer.result(timeout=120)["items"] == []
        assert client.request("infill/stats")["counts"]["stale"] == 1

        # Unchanged meanwhile: an answer, naming its version, whose edit ends at the cursor
        # and starts on the cursor's line at the start of the word being typed.
        client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 3}, "contentChanges": [
            {"range": {"start": {"line": 5, "character": 0}, "end": {"line": 5, "character": 0}}, "text": "x = val"}]})
        result = client.request("textDocument/completion", {"textDocument": {"uri": uri},
                                                             "position": {"line": 5, "character": 7}}, timeout=120)
        for item in result["items"]:
            assert item["data"] == {"uri": uri, "version": 3}
            assert item["textEdit"]["range"] == {"start": {"line": 5, "character": 4}, "end": {"line": 5, "character": 7}}
            assert item["textEdit"]["newText"].startswith("val")
            details = item["command"]["arguments"][1]
            assert details["version"] == 3 and details["source"] in ("model", "workspace")
    finally:
        client.close()


def test_lone_surrogates_neither_break_their_document_nor_its_neighbours(tmp_path: Path, tiny_model_dir: Path) -> None:
    client = _start(tmp_path, tiny_model_dir, {"debounceMs": 0, "maxTokens": 4, "constrained": True})
    try:
        client.initialize({"workspace": {"configuration": True}})
        _wait_ready(client)
        broken = "name = '\udc80 bytes'\ndef f(x):\n    return x\n"
        client.open("file:///w/broken.py", broken)
        client.open("file:///w/neighbour.py", "import os\ndef g(y):\n    return \n")
        for uri, line, character in (("file:///w/broken.py", 2, 11), ("file:///w/neighbour.py", 2, 11)):
            for method in ("textDocument/inlineCompletion", "textDocument/completion"):
                answer = client.request(method, {"textDocument": {"uri": uri}, "position": {
                    "line": line, "character": character}, "context": {"triggerKind": 1}}, timeout=120)
                assert "items" in answer
        errors = client.request("infill/stats")["counts"]["errors"]
        assert errors == 0
        logs = [m["params"]["message"] for m in client.messages("window/logMessage")]
        assert not any("failed" in line for line in logs), logs
        state = client.request("infill/documentState", {"textDocument": {"uri": "file:///w/broken.py"}})
        assert state["sha256"] == text_digest(broken)  # the text is kept exactly as sent
    finally:
        client.close()
    _no_traceback(tmp_path)


def test_rejected_settings_are_reported_once(tmp_path: Path) -> None:
    client = _start(tmp_path, None)
    try:
        client.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
        for _ in range(47):
            client.notify("workspace/didChangeConfiguration",
                          {"settings": {"infill": {"maxTokens": "many", "debounceMs": -4, "crossFileChars": 10}}})
            client.notify("workspace/didChangeConfiguration", {"settings": {"infill": 42}})
        client.request("infill/stats")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(client.messages("window/showMessage")) < 2:
            time.sleep(0.1)
        time.sleep(0.5)
        popups = [m["params"]["message"] for m in client.messages("window/showMessage")]
        logs = [m["params"]["message"] for m in client.messages("window/logMessage") if "setting ignored" in m["params"]["message"]]
        # The two values the user set: a popup each, once. The payload that is not an
        # object is the client's doing: one log line, no popup.
        assert len(popups) == 2 and any("maxTokens" in p for p in popups) and any("debounceMs" in p for p in popups)
        assert len(logs) == 3 and sum("must be an object" in line for line in logs) == 1
    finally:
        client.close()


def test_notification_handlers_leave_nothing_behind() -> None:
    """The RSS growth of ~2 MB per 1,000 messages: pygls kept every notification
    handler's future (didOpen/didChange/didClose/didChangeConfiguration) forever."""
    from infill_lsp.server import InfillServer

    class Sink:
        def write(self, data: bytes) -> None:
            pass

        def close(self) -> None:
            pass

    async def run() -> tuple[int, int]:
        server = InfillServer()
        protocol = server.protocol
        protocol.set_writer(Sink())

        def send(message: dict) -> None:  # what the transport does with a body, minus the checks
            protocol.handle_message(protocol.structure_message({"jsonrpc": "2.0", **message}))

        send({"id": 1, "method": "initialize", "params": {"processId": None, "rootUri": None, "capabilities": {}}})
        uri = "file:///m.py"
        send({"method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": "x = 1\n"}}})

        def burst(count: int, first_version: int) -> None:
            for i in range(count):
                send({"method": "textDocument/didChange", "params": {
                    "textDocument": {"uri": uri, "version": first_version + i},
                    "contentChanges": [{"range": {"start": {"line": 0, "character": 0},
                                                  "end": {"line": 0, "character": 1}}, "text": "y"}]}})
                send({"method": "workspace/didChangeConfiguration", "params": {"settings": {"infill": {"debounceMs": 5}}}})

        async def settle() -> None:  # settings are checked on a thread: let them all finish
            deadline = time.monotonic() + 60
            while len(asyncio.all_tasks()) > 1 and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.1)
            gc.collect()

        # Warm-up, twice as long as the measured burst: caches, the engine's import, and
        # the event loop's own containers reach their size (measured: flat after that).
        tracemalloc.start()
        for first_version in (2, 2000):
            burst(1500, first_version)
            await settle()
        before = tracemalloc.get_traced_memory()[0]
        burst(1500, 10_000)
        await settle()
        grown = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        return len(protocol._request_futures), grown

    in_flight, grown = asyncio.run(run())
    assert in_flight == 0
    assert grown < 50_000, f"{grown:,} bytes kept after 3,000 notifications"


def test_a_missing_model_is_reported_once_and_every_request_still_answered(tmp_path: Path) -> None:
    # From the editor's settings: a wrong `--model` on the command line is refused at start.
    client = _start(tmp_path, None)
    try:
        client.initialize({}, {"modelDir": str(tmp_path / "no-such-model")})
        client.wait_for_notification(lambda m: m.get("method") == "window/showMessage", timeout=60)
        client.open("file:///w/a.py", "def f(x):\n    return \n")
        for _ in range(20):
            answer = client.request("textDocument/inlineCompletion", {"textDocument": {"uri": "file:///w/a.py"},
                                    "position": {"line": 1, "character": 11}, "context": {"triggerKind": 1}})
            assert answer == {"items": []}
        popups = [m["params"]["message"] for m in client.messages("window/showMessage")]
        lines = [m["params"]["message"] for m in client.messages("window/logMessage") if "no completion" in m["params"]["message"]]
        assert len(popups) == 1 and "no-such-model" in popups[0]
        assert len(lines) == 1  # not one per keystroke
    finally:
        client.close()
    _no_traceback(tmp_path)
