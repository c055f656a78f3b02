"""End-to-end over stdio: a real `infill lsp` process with the real engine on a tiny
random model. Nothing here depends on what the model suggests, only on how it is served."""
from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from lsprotocol import types

from lab.fixtures.lsp_client import LspClient, LspResponseError

REPO = Path(__file__).resolve().parents[1]
CAPABILITIES = {"workspace": {"configuration": True}, "window": {"workDoneProgress": True}}
# Unconstrained: a random model's tokens rarely parse and the syntax constraint would veto
# them all, leaving nothing to check the serving of.
FAST = {"debounceMs": 0, "maxTokens": 8, "constrained": False}
# The tiny random model may end a middle at once; with `allowEnd` off it always fills
# maxTokens tokens, so a test that needs an answer gets one instead of looping over none.
ANSWERING = {**FAST, "allowEnd": False}
SOURCE = "import os\r\n\r\ndef greet(name):\r\n\tprint('héllo 😀', name)\r\n\treturn \r\n"


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), str(REPO)) if p)
    return env


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    from lab.fixtures.tiny_model import make_tiny_model_dir

    return make_tiny_model_dir(tmp_path_factory.mktemp("tiny") / "model")


def start(tmp_path: Path, model: Path | str, settings: dict | None = None, **initialize) -> LspClient:
    client = LspClient(
        [sys.executable, "-m", "infill_lsp", "--model", str(model)],
        configuration=settings if settings is not None else FAST,
        stderr_path=tmp_path / "server.err",
        cwd=str(tmp_path),
        env=_env(),
    )
    client.initialize_result = client.initialize(CAPABILITIES, **initialize)
    return client


def inline(client: LspClient, uri: str, line: int, character: int, timeout: float = 120) -> dict:
    return client.request(
        "textDocument/inlineCompletion",
        {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}, "context": {"triggerKind": 1}},
        timeout=timeout,
    )


def wait_loaded(client: LspClient, timeout: float = 120) -> dict:
    client.wait_for_notification(
        lambda m: m.get("method") == "$/progress" and m["params"]["value"]["kind"] == "end", timeout
    )
    stats = client.request("infill/stats")
    assert stats["model"], "the model did not load"
    return stats


def counts(client: LspClient) -> dict:
    return client.request("infill/stats")["counts"]


def test_initialize_answers_before_the_model_loads_and_reports_progress(tmp_path: Path, tiny_model: Path) -> None:
    started = time.perf_counter()
    client = start(tmp_path, tiny_model)
    try:
        capabilities = client.initialize_result["capabilities"]
        assert capabilities["positionEncoding"] == "utf-16"
        assert capabilities["textDocumentSync"]["change"] == types.TextDocumentSyncKind.Incremental.value
        assert "inlineCompletionProvider" in capabilities and "completionProvider" in capabilities
        assert "infill.accept" in capabilities["executeCommandProvider"]["commands"]
        assert client.initialize_result["serverInfo"]["name"] == "infill"
        wait_loaded(client)
        kinds = [m["params"]["value"]["kind"] for m in client.messages("$/progress")]
        assert kinds[0] == "begin" and kinds[-1] == "end"
        # The progress bar was created by a window/workDoneProgress/create request first.
        assert any(r["method"] == "window/workDoneProgress/create" for r in client.server_requests)
        assert any(r["method"] == "workspace/configuration" for r in client.server_requests)
    finally:
        assert client.close() == 0
    assert time.perf_counter() - started < 120


def test_inline_completion_range_is_the_cursor_in_utf16_on_crlf_emoji_lines(tmp_path: Path, tiny_model: Path) -> None:
    client = start(tmp_path, tiny_model, settings=ANSWERING)
    try:
        uri = "file:///w/greet.py"
        client.open(uri, SOURCE)
        wait_loaded(client)
        # Line 3 is "\tprint('héllo 😀', name)": the emoji is 2 UTF-16 units, so the line
        # is 24 units long; 99 is past its end and comes back clamped to 24; 15 is inside
        # the emoji's surrogate pair and comes back as 14, just before it.
        for character, expected in ((24, 24), (99, 24), (15, 14), (8, 8)):
            result = inline(client, uri, 3, character)
            assert len(result["items"]) == 1, (character, result)
            for item in result["items"]:
                assert item["range"] == {"start": {"line": 3, "character": expected}, "end": {"line": 3, "character": expected}}
                assert isinstance(item["insertText"], str) and item["insertText"]
                assert item["command"]["command"] == "infill.accept"
        assert counts(client)["model_runs"] >= 3
    finally:
        client.close()


def test_typing_the_suggestion_is_answered_from_cache_without_a_model_pass(tmp_path: Path, tiny_model: Path) -> None:
    client = start(tmp_path, tiny_model, settings=ANSWERING)
    try:
        uri = "file:///w/cache.py"
        client.open(uri, SOURCE)
        wait_loaded(client)
        line, character = 4, 8  # after "\treturn "
        items = inline(client, uri, line, character)["items"]
        assert len(items) == 1
        suggestion = items[0]["insertText"]
        # Typing its first character must be a cache hit: it has to be a character of this line.
        assert len(suggestion) >= 2 and suggestion[0] not in "\r\n", suggestion
        runs_before = counts(client)["model_runs"]
        typed = suggestion[0]
        client.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": uri, "version": 2},
                "contentChanges": [{"range": {"start": {"line": line, "character": character}, "end": {"line": line, "character": character}}, "text": typed}],
            },
        )
        width = 2 if ord(typed) > 0xFFFF else 1
        items = inline(client, uri, line, character + width)["items"]
        assert [item["insertText"] for item in items] == [suggestion[1:]]
        assert items[0]["range"]["start"] == {"line": line, "character": character + width}
        after = counts(client)
        assert after["model_runs"] == runs_before and after["cache_hits"] == 1
        # Accepting it is counted.
        assert client.request("workspace/executeCommand", {"command": "infill.accept", "arguments": items[0]["command"]["arguments"]}) == {"accepted": True}
        assert client.request("infill/stats")["accepted"] == 1
    finally:
        client.close()


def test_newer_request_supersedes_older_and_cancel_is_honoured(tmp_path: Path, tiny_model: Path) -> None:
    # A debounce far longer than the gap between two requests written back to back: a loaded
    # machine that let 300 ms pass between reading them ran the first (and the cancelled one).
    client = start(tmp_path, tiny_model, settings={**FAST, "debounceMs": 3000})
    try:
        uri = "file:///w/sup.py"
        client.open(uri, SOURCE)
        wait_loaded(client)
        before = counts(client)
        params = {"textDocument": {"uri": uri}, "position": {"line": 4, "character": 8}, "context": {"triggerKind": 2}}
        _, first = client.request_async("textDocument/inlineCompletion", params)
        _, second = client.request_async("textDocument/inlineCompletion", params)
        assert first.result(timeout=60) == {"items": []}  # dropped inside the debounce window
        second.result(timeout=120)
        after = counts(client)
        assert after["superseded_before_model"] - before.get("superseded_before_model", 0) == 1
        assert after["model_runs"] - before["model_runs"] == 1

        # Elsewhere in the file: the same cursor would be answered from the cache at once.
        params["position"] = {"line": 2, "character": 4}
        cancelled_id, cancelled = client.request_async("textDocument/inlineCompletion", params)
        client.cancel(cancelled_id)
        with pytest.raises(LspResponseError) as error:
            cancelled.result(timeout=60)
        assert error.value.code == types.LSPErrorCodes.RequestCancelled.value
        final = counts(client)
        assert final["cancelled_by_client"] == 1 and final["model_runs"] == after["model_runs"]
    finally:
        client.close()


def test_completion_fallback_edits_from_the_word_start(tmp_path: Path, tiny_model: Path) -> None:
    client = start(tmp_path, tiny_model)
    try:
        uri = "file:///w/words.py"
        client.open(uri, "def f(value):\n    return val\n")
        wait_loaded(client)
        result = client.request(
            "textDocument/completion",
            {"textDocument": {"uri": uri}, "position": {"line": 1, "character": 14}},
            timeout=120,
        )
        assert result["isIncomplete"] is True
        for item in result["items"]:
            edit = item["textEdit"]
            assert edit["range"] == {"start": {"line": 1, "character": 11}, "end": {"line": 1, "character": 14}}
            assert edit["newText"].startswith("val") and len(edit["newText"]) > 3
            assert item["filterText"] == edit["newText"]
    finally:
        client.close()


def test_bad_settings_and_missing_model_reach_the_user_without_a_crash(tmp_path: Path, tiny_model: Path) -> None:
    # The model directory comes from the editor's settings here: a wrong `--model` on the
    # command line is refused at start instead (test_lsp_robustness.py).
    client = LspClient(
        [sys.executable, "-m", "infill_lsp"],
        configuration={**FAST, "modelDir": str(tmp_path / "no-such-model")},
        stderr_path=tmp_path / "server.err", cwd=str(tmp_path), env=_env(),
    )
    client.initialize(CAPABILITIES)
    try:
        error = client.wait_for_notification(lambda m: m.get("method") == "window/showMessage", 120)
        assert error["params"]["type"] == types.MessageType.Error.value and "no-such-model" in error["params"]["message"]
        uri = "file:///w/x.py"
        client.open(uri, "x = ")
        assert inline(client, uri, 0, 4) == {"items": []}
        client.notify("workspace/didChangeConfiguration", {"settings": {"infill": {"debounceMs": "soon", "bogusKnob": 1}}})
        warning = client.wait_for_notification(
            lambda m: m.get("method") == "window/showMessage" and "debounceMs" in m["params"]["message"], 60
        )
        assert warning["params"]["type"] == types.MessageType.Warning.value
        client.wait_for_notification(
            lambda m: m.get("method") == "window/showMessage" and "bogus_knob" in m["params"]["message"], 60
        )
        assert client.request("infill/stats")["counts"]["model_unavailable"] >= 1
    finally:
        assert client.close() == 0


def test_model_dir_from_settings_is_loaded_in_the_background(tmp_path: Path, tiny_model: Path) -> None:
    """No --model: the directory comes through workspace/configuration."""
    client = LspClient(
        [sys.executable, "-m", "infill_lsp"],
        configuration={**FAST, "modelDir": str(tiny_model), "maxTokens": 4},
        stderr_path=tmp_path / "server.err", cwd=str(tmp_path), env=_env(),
    )
    try:
        client.initialize(CAPABILITIES)
        stats = wait_loaded(client)
        assert stats["model"]
    finally:
        client.close()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_tcp_transport_binds_loopback_and_speaks_lsp_to_pygls_client(tmp_path: Path, tiny_model: Path) -> None:
    """pygls' own client parses every reply into lsprotocol types: a shape check too."""
    from pygls.lsp.client import LanguageClient

    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "infill_lsp", "--tcp", "--port", str(port), "--model", str(tiny_model)],
        cwd=tmp_path, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        assert b"127.0.0.1" in server.stderr.readline()

        async def session() -> types.InlineCompletionList:
            client = LanguageClient("infill-test", "1")
            for _ in range(100):
                try:
                    await client.start_tcp("127.0.0.1", port)
                    break
                except OSError:
                    await asyncio.sleep(0.1)
            await client.initialize_async(types.InitializeParams(capabilities=types.ClientCapabilities()))
            client.initialized(types.InitializedParams())
            uri = "file:///w/tcp.py"
            client.text_document_did_open(
                types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "python", 1, "def f():\n    return "))
            )
            result = await asyncio.wait_for(
                client.text_document_inline_completion_async(
                    types.InlineCompletionParams(
                        context=types.InlineCompletionContext(trigger_kind=types.InlineCompletionTriggerKind.Invoked),
                        text_document=types.TextDocumentIdentifier(uri),
                        position=types.Position(1, 11),
                    )
                ),
                120,
            )
            await client.shutdown_async(None)
            client.exit(None)
            await client.stop()
            return result

        result = asyncio.run(session())
        assert isinstance(result, types.InlineCompletionList)
        for item in result.items:
            assert item.range == types.Range(types.Position(1, 11), types.Position(1, 11))
    finally:
        server.kill()
        server.wait(timeout=10)
