"""Security tests of `infill serve`: every hostile or broken input is refused with its
documented error or close code, and the server keeps serving everyone else."""
from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from typing import Any, Iterator

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

import engine
from lab.fixtures.tiny_model import make_tiny_model_dir
from infill_lsp.live.limits import Limits
from infill_lsp.live.server import LiveConfig, LiveServer
from lab.fixtures.live_server import ServerThread

TIMEOUT = 60.0
LIMITS = Limits(max_message_bytes=64 * 1024, max_sessions_per_connection=3, max_document_chars=10_000)
# A server of its own for the flood test, so its tight rate does not trip the other tests.
# One message per 100 s after the burst: at 5 a second, a loaded machine that took 200 ms to
# handle the flood granted a message mid-way, which resets the strikes, and it never closed.
FLOOD_LIMITS = Limits(messages_per_second=0.01, message_burst=10, rate_strikes_before_close=15)


@pytest.fixture(scope="module")
def tiny_engine(tmp_path_factory: pytest.TempPathFactory) -> Any:
    model_dir = make_tiny_model_dir(tmp_path_factory.mktemp("live-sec-model") / "model")
    return engine.load(model_dir=str(model_dir))


@pytest.fixture(scope="module")
def live(tiny_engine: Any) -> Iterator[LiveServer]:
    config = LiveConfig(port=0, token="correct-horse-battery", allowed_origins=("https://editor.example",),
                        limits=LIMITS)
    with ServerThread(tiny_engine, config) as server:
        yield server


async def recv(ws: ClientConnection) -> dict[str, Any]:
    return json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))


async def hello(server: LiveServer, **kwargs: Any) -> ClientConnection:
    ws = await connect(server.websocket_url, **kwargs)
    assert (await recv(ws))["type"] == "hello"
    return ws


def open_message(session: str, token: Any, text: str = "x = 1\n") -> str:
    return json.dumps({"type": "open", "session": session, "token": token, "protocol": 1, "text": text,
                       "language": "python"})


async def closed_with(ws: ClientConnection) -> int:
    with pytest.raises(ConnectionClosed) as info:
        while True:
            await asyncio.wait_for(ws.recv(), TIMEOUT)
    assert info.value.rcvd is not None, f"closed without a close frame: {info.value!r}"
    return info.value.rcvd.code


async def still_serves(server: LiveServer) -> None:
    """A fresh, well-behaved client gets a full infill result."""
    async with await hello(server) as ws:
        await ws.send(open_message("ok", server.token, "def f():\n    \n"))
        assert (await recv(ws))["type"] == "opened"
        await ws.send(json.dumps({"type": "infill", "session": "ok", "id": 1, "settings": {"max_tokens": 4},
                                  "range": {"start": {"line": 1, "character": 4}, "end": {"line": 1, "character": 4}}}))
        while (frame := await recv(ws))["type"] not in ("result", "error", "cancelled"):
            pass
        assert frame["type"] == "result", frame


@pytest.mark.parametrize("token", [None, "", "wrong-token-value", 12345])
def test_missing_or_wrong_token_is_refused_and_closed_4001(live: LiveServer, token: Any) -> None:
    async def scenario() -> None:
        async with await hello(live) as ws:
            await ws.send(open_message("s", token))
            error = await recv(ws)
            assert error["type"] == "error" and error["code"] == "unauthorized" and error["session"] == "s"
            assert await closed_with(ws) == 4001
        await still_serves(live)

    asyncio.run(scenario())


def test_foreign_origin_is_refused_at_the_handshake(live: LiveServer) -> None:
    async def scenario() -> None:
        for origin in ("http://evil.example", f"http://evil.example:{live.port}", "null"):
            with pytest.raises(InvalidStatus) as info:
                await connect(live.websocket_url, origin=origin)  # type: ignore[arg-type]
            assert info.value.response.status_code == 403
        for origin in (f"http://127.0.0.1:{live.port}", f"http://localhost:{live.port}", "https://editor.example"):
            async with await hello(live, origin=origin):
                pass
        await still_serves(live)

    asyncio.run(scenario())


def test_oversized_message_closes_1009(live: LiveServer) -> None:
    async def scenario() -> None:
        async with await hello(live) as ws:
            await ws.send(open_message("big", live.token, "y" * (LIMITS.max_message_bytes + 10)))
            assert await closed_with(ws) == 1009
        await still_serves(live)

    asyncio.run(scenario())


def test_malformed_and_invalid_messages_get_errors_and_the_connection_lives_on(live: LiveServer) -> None:
    async def scenario() -> None:
        async with await hello(live) as ws:
            cases = [
                ("{oops", "bad_json"),
                (b"\x00\x01", "bad_message"),
                ('{"type":"open","session":"a","protocol":99,"token":"x"}', "unsupported_protocol"),
                ('{"type":"teleport","session":"a"}', "unknown_type"),
                ('{"type":"edit","session":"ghost","edits":[{"text":"x"}]}', "unknown_session"),
                ('{"type":"cancel","session":"ghost"}', "unknown_session"),
                ('{"type":"close","session":"ghost"}', "unknown_session"),
            ]
            for raw, code in cases:
                await ws.send(raw)
                frame = await recv(ws)
                assert frame["type"] == "error" and frame["code"] == code, (raw, frame)
            # The same connection still opens sessions and refuses bad edits without changing them.
            await ws.send(open_message("a", live.token, "abc\n"))
            assert (await recv(ws))["type"] == "opened"
            await ws.send(open_message("a", live.token))
            assert (await recv(ws))["code"] == "session_exists"
            await ws.send(json.dumps({"type": "edit", "session": "a", "edits": [
                {"range": {"start": {"line": 5, "character": 0}, "end": {"line": 5, "character": 0}}, "text": "z"}]}))
            assert (await recv(ws))["code"] == "out_of_range"
            await ws.send(json.dumps({"type": "edit", "session": "a", "edits": [{"text": "q" * 10_001}]}))
            assert (await recv(ws))["code"] == "too_large"
            await ws.send(json.dumps({"type": "infill", "session": "a", "id": 1, "settings": {"context_tokens": 9},
                                      "range": {"start": {"line": 0, "character": 0},
                                                "end": {"line": 0, "character": 0}}}))
            frame = await recv(ws)
            assert frame["code"] == "bad_settings" and frame["id"] == 1
            for index in range(2):  # the limit is 3 sessions: "a" plus these two
                await ws.send(open_message(f"b{index}", live.token))
                assert (await recv(ws))["type"] == "opened"
            await ws.send(open_message("c", live.token))
            assert (await recv(ws))["code"] == "too_many_sessions"
        await still_serves(live)

    asyncio.run(scenario())


def test_flooding_is_rate_limited_then_closed_4029(tiny_engine: Any, live: LiveServer) -> None:
    async def scenario(flooded: LiveServer) -> None:
        async with await hello(flooded) as ws:
            for _ in range(FLOOD_LIMITS.message_burst + FLOOD_LIMITS.rate_strikes_before_close + 10):
                await ws.send('{"type":"cancel","session":"nobody"}')
            codes = []
            with pytest.raises(ConnectionClosed) as info:
                while True:
                    codes.append((await recv(ws))["code"])
            assert "rate_limited" in codes and codes.count("unknown_session") >= FLOOD_LIMITS.message_burst
            assert info.value.rcvd is not None and info.value.rcvd.code == 4029
        await still_serves(flooded)  # the flooder is gone; others on that server carry on

    with ServerThread(tiny_engine, LiveConfig(port=0, limits=FLOOD_LIMITS)) as flooded:
        asyncio.run(scenario(flooded))


def test_http_side_serves_the_page_with_a_strict_policy_and_404s_the_rest(live: LiveServer) -> None:
    base = f"http://127.0.0.1:{live.port}"
    with urllib.request.urlopen(base + "/", timeout=TIMEOUT) as response:
        body = response.read().decode()
        assert "<textarea" in body and "playground.js" in body
        policy = response.headers["Content-Security-Policy"]
        assert "default-src 'none'" in policy and "connect-src 'self'" in policy
    with urllib.request.urlopen(base + "/playground.js", timeout=TIMEOUT) as response:
        assert response.headers["Content-Type"].startswith("text/javascript")
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(base + "/../../etc/passwd", timeout=TIMEOUT)
    assert info.value.code == 404
    info.value.close()  # an unclosed error response keeps its socket, and the server waits for it


def test_input_the_engine_refuses_is_an_engine_error_for_that_request_only(live: LiveServer) -> None:
    async def scenario() -> None:
        async with await hello(live) as ws:
            await ws.send(open_message("bin", live.token, "data = '\x00\x00'\n"))
            assert (await recv(ws))["type"] == "opened"
            await ws.send(json.dumps({"type": "infill", "session": "bin", "id": "b", "range": {
                "start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 0}}}))
            while (frame := await recv(ws))["type"] == "queued":
                pass
            assert frame["type"] == "error" and frame["code"] == "engine_error" and frame["id"] == "b"
            assert "binary" in frame["message"]
        await still_serves(live)

    asyncio.run(scenario())


def test_serve_main_reports_a_missing_model_dir_without_a_traceback(tmp_path: Any,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    from infill_lsp.live.server import main

    assert main(["--port", "0", "--model", str(tmp_path / "no-such-model")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("infill serve: ") and "Traceback" not in err
    assert main(["--port", "70000"]) == 2
    assert main(["--token", "short"]) == 2


def test_a_client_that_never_reads_is_closed_4008_and_its_connection_freed(tiny_engine: Any) -> None:
    """Nothing read at all (a tiny receive buffer, no pongs): the server's keepalive ping
    goes unanswered and the connection is closed with 4008, also when the kernel's
    buffers swallow every frame (websockets' own keepalive would close with 1011, and its
    ping could wait forever behind unread frames)."""
    import socket

    limits = Limits(keepalive_seconds=1.0, send_stall_seconds=5.0)
    with ServerThread(tiny_engine, LiveConfig(port=0, token="correct-horse-battery", limits=limits)) as server:
        async def scenario() -> None:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.setblocking(False)
            await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", server.port))
            ws = await connect(server.websocket_url, sock=sock, max_queue=1, ping_interval=None, close_timeout=2)
            await ws.send(open_message("s", server.token, "def f():\n    \n"))
            for index in range(20):
                await ws.send(json.dumps({"type": "infill", "session": "s", "id": index, "settings": {"max_tokens": 64},
                                          "range": {"start": {"line": 1, "character": 4}, "end": {"line": 1, "character": 4}}}))
            # Reads nothing: the ping at 1 s is unanswered at 2 s; the server drops the connection
            # 10 s after that (ws_protocol.abort_after_s), so reading at 6 s leaves 4 s either side.
            await asyncio.sleep(6.0)
            assert await closed_with(ws) == 4008  # reading again within the close window shows why
            deadline = asyncio.get_running_loop().time() + 60
            while server.connections and asyncio.get_running_loop().time() < deadline:
                await asyncio.sleep(0.05)
            assert server.connections == 0 and server.sessions_open == 0
            await still_serves(server)

        asyncio.run(scenario())
