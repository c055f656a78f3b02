"""`infill lsp --remote URL`: a real language-server process whose completions come from
a real `infill serve` (in a thread here, tiny random model) or another OpenAI-style
server over loopback HTTP: ghost text, supersede aborting the server's work, and server
down / slow / wrong token reaching the user as one message while typing goes on."""
from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest

from infill_lsp.live.server import LiveConfig, LiveServer
from lab.fixtures.live_server import ServerThread
from lab.fixtures.lsp_client import LspClient

REPO = Path(__file__).resolve().parents[1]
TOKEN = "remote-lsp-test-token"
CAPABILITIES = {"workspace": {"configuration": True}, "window": {"workDoneProgress": True}}
FAST = {"debounceMs": 0, "maxTokens": 8, "constrained": False}
SOURCE = "def add(a, b):\n    return \n\nprint(add(1, 2))\n"
URI = "file:///w/remote.py"


@pytest.fixture(scope="module")
def served(tiny_engine: Any) -> Iterator[LiveServer]:
    with ServerThread(tiny_engine, LiveConfig(port=0, token=TOKEN)) as server:
        yield server


def start_lsp(tmp_path: Path, url: str, *extra: str, token: str | None = TOKEN, settings: dict | None = None) -> LspClient:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), str(REPO)) if p)
    env.pop("INFILL_TOKEN", None)
    if token is not None:
        env["INFILL_TOKEN"] = token
    client = LspClient([sys.executable, "-m", "infill_lsp", "--remote", url, "--log-file", str(tmp_path / "lsp.log"),
                        *extra], configuration=settings if settings is not None else FAST,
                       stderr_path=tmp_path / "lsp.err", cwd=str(tmp_path), env=env)
    client.initialize(CAPABILITIES)
    # As with a local model: the first completion comes after the client's settings and the
    # "load" (here: asking the server which model it serves), whose end is reported as progress.
    client.wait_for_notification(
        lambda m: m.get("method") == "$/progress" and m["params"]["value"]["kind"] == "end", timeout=60)
    return client


def inline(client: LspClient, line: int = 1, character: int = 11, timeout: float = 60) -> dict:
    return client.request("textDocument/inlineCompletion", {
        "textDocument": {"uri": URI}, "position": {"line": line, "character": character},
        "context": {"triggerKind": 1}}, timeout=timeout)


def health(server: LiveServer) -> dict:
    return httpx.get(server.base_url + "/health", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30).json()


def popups(client: LspClient) -> list[str]:
    return [m["params"]["message"] for m in client.messages("window/showMessage")]


def test_remote_completions_are_the_servers_answer(tmp_path: Path, served: LiveServer) -> None:
    client = start_lsp(tmp_path, served.base_url)
    try:
        client.open(URI, SOURCE)
        requests_before = health(served)["counters"].get("http_requests", 0)
        items = inline(client)["items"]
        direct = httpx.post(served.base_url + "/v1/completions", headers={"Authorization": f"Bearer {TOKEN}"},
                            json={"prompt": "def add(a, b):\n    return ", "suffix": "\n\nprint(add(1, 2))\n",
                                  "max_tokens": 8, "infill": {"language": "python", "constrained": False}},
                            timeout=60).json()["choices"][0]["text"]
        assert health(served)["counters"]["http_requests"] >= requests_before + 2
        assert [item["insertText"] for item in items] == ([direct] if direct else [])
        stats = client.request("infill/stats")
        assert served.model_name in stats["model"] and stats["counts"]["model_runs"] >= 1
        assert popups(client) == []
    finally:
        assert client.close() == 0
    for log_file in ("lsp.log", "lsp.err"):
        assert TOKEN not in (tmp_path / log_file).read_text(errors="replace"), f"the token leaked into {log_file}"


def test_a_superseded_request_is_aborted_on_the_server(tmp_path: Path, served: LiveServer, tiny_faults: Any) -> None:
    # 256 tokens with a random model: over a hundred passes; and the engine's passes are held
    # while the second request supersedes it, so the first is still running however slow the
    # round trips through the language server are.
    client = start_lsp(tmp_path, served.base_url, settings={**FAST, "maxTokens": 256, "blockSize": 8})
    try:
        client.open(URI, SOURCE)
        inline(client, 3, 0)  # warm (elsewhere: the same cursor would be answered from the cache)
        cancelled_before = health(served)["counters"].get("http_cancelled", 0)
        params = {"textDocument": {"uri": URI}, "position": {"line": 1, "character": 11}, "context": {"triggerKind": 2}}
        tiny_faults.hold()
        _, first = client.request_async("textDocument/inlineCompletion", params)
        deadline = time.monotonic() + 30
        while health(served)["http_in_flight"] == 0:  # wait until the server is working on it
            assert time.monotonic() < deadline and not first.done()
            time.sleep(0.01)
        client.notify("workspace/didChangeConfiguration", {"settings": {"infill": FAST}})
        _, second = client.request_async("textDocument/inlineCompletion", params)
        assert first.result(timeout=60) == {"items": []}  # superseded
        deadline = time.monotonic() + 60
        while health(served)["counters"].get("http_cancelled", 0) < cancelled_before + 1:
            assert time.monotonic() < deadline, "the server never saw the superseded request go away"
            time.sleep(0.05)
        tiny_faults.release()
        second.result(timeout=60)
        assert client.request("infill/stats")["counts"].get("cancelled_during_model", 0) >= 1
    finally:
        client.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_server_down_is_one_message_and_typing_goes_on(tmp_path: Path) -> None:
    # A remote timeout far longer than the bound below: a refused connection must be answered
    # at once, not after waiting out the timeout (the default, 10 s, was the bound itself).
    client = start_lsp(tmp_path, f"http://127.0.0.1:{free_port()}", "--remote-timeout", "600")
    try:
        client.open(URI, SOURCE)
        for _ in range(3):
            started = time.monotonic()
            assert inline(client, timeout=120) == {"items": []}
            assert time.monotonic() - started < 60
        client.wait_for_notification(lambda m: m.get("method") == "window/showMessage", timeout=30)
        shown = popups(client)
        assert len(shown) == 1 and "cannot reach the server" in shown[0] and "connection refused" in shown[0]
        assert client.request("infill/stats")["counts"]["requests"] == 3  # still answering
    finally:
        assert client.close() == 0


def test_wrong_or_missing_token_says_401_once(tmp_path: Path, served: LiveServer) -> None:
    for token in ("not-the-token", None):
        where = tmp_path / str(token)
        where.mkdir()
        client = start_lsp(where, served.base_url, token=token)
        try:
            client.open(URI, SOURCE)
            assert inline(client) == {"items": []} and inline(client) == {"items": []}
            client.wait_for_notification(lambda m: m.get("method") == "window/showMessage", timeout=30)
            time.sleep(0.2)
            shown = popups(client)
            assert len(shown) == 1 and "HTTP 401" in shown[0] and "INFILL_TOKEN" in shown[0], shown
        finally:
            client.close()
        if token:
            for log_file in ("lsp.log", "lsp.err"):
                assert token not in (where / log_file).read_text(errors="replace")


def test_a_server_that_never_answers_times_out(tmp_path: Path) -> None:
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)  # accepts connections (the kernel does) and never says a word
    try:
        client = start_lsp(tmp_path, f"http://127.0.0.1:{silent.getsockname()[1]}", "--remote-timeout", "1")
        try:
            client.open(URI, SOURCE)
            started = time.monotonic()
            assert inline(client) == {"items": []}
            assert time.monotonic() - started < 8
            client.wait_for_notification(lambda m: m.get("method") == "window/showMessage", timeout=30)
            assert any("did not answer within 1 s" in message for message in popups(client)), popups(client)
        finally:
            client.close()
    finally:
        silent.close()


class _OtherServer(BaseHTTPRequestHandler):
    """A stand-in for someone else's OpenAI-compatible server: fixed answers, bodies recorded."""

    bodies: list[dict] = []

    def do_GET(self) -> None:  # noqa: N802 (the http.server convention)
        self._json({"object": "list", "data": [{"id": "other-fim-model", "object": "model", "owned_by": "someone"}]})

    def do_POST(self) -> None:  # noqa: N802
        self.bodies.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        self._json({"id": "x", "object": "text_completion", "choices": [{"index": 0, "text": "a + b",
                                                                           "finish_reason": "stop"}]})

    def _json(self, data: dict) -> None:
        raw = json.dumps(data).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: Any) -> None:
        pass


def test_any_openai_compatible_server_gets_the_standard_fields_only(tmp_path: Path) -> None:
    other = ThreadingHTTPServer(("127.0.0.1", 0), _OtherServer)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    try:
        client = start_lsp(tmp_path, f"http://127.0.0.1:{other.server_address[1]}/v1", token=None)
        try:
            client.open(URI, SOURCE)
            assert [item["insertText"] for item in inline(client)["items"]] == ["a + b"]
            client.open("file:///w/helpers.py", "def scale(x, k):\n    return x * k\n")
            assert [item["insertText"] for item in inline(client, 3, 0)["items"]] == ["a + b"]
        finally:
            client.close()
    finally:
        other.shutdown()
    first, second = _OtherServer.bodies
    assert first == {"prompt": "def add(a, b):\n    return ", "suffix": "\n\nprint(add(1, 2))\n", "stream": False,
                     "model": "other-fim-model", "max_tokens": 8}
    # Another open file's outline rides in front of the prompt, as comment lines.
    assert set(second) == set(first) and second["prompt"].startswith("# Context from helpers.py:\n# def scale(x, k):")
    assert second["prompt"].endswith(SOURCE[:SOURCE.index("print")])


@pytest.mark.parametrize("argv, message", [
    (["--remote", "ftp://x"], "http:// or https://"),
    (["--remote", "http://127.0.0.1:1", "--remote-token-file", "/no/such/token"], "cannot read the token file /no/such/token"),
    (["--remote-model", "m"], "need --remote"),
])
def test_bad_remote_options_are_one_line_errors(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    from infill_lsp.server import main

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
