"""A session's cached context lives as long as the session: closed live sessions and
connections, answered HTTP requests and closed LSP documents give theirs back. (The
one-hour soak found the live server's memory climbing ~250 MB: every reconnecting
client's context stayed in the engine's cache until its 256 MB budget pushed it out.)"""
from __future__ import annotations

import asyncio
import json
import time
from dataclasses import replace
from typing import Any

import httpx
import pytest
from lsprotocol import types
from websockets.asyncio.client import connect

import engine
from engine.worker import EngineWorker, InfillCall, Job
from infill_lsp.live.server import LiveConfig
from infill_lsp.server import InfillServer
from lab.fixtures.live_server import ServerThread
from lab.fixtures.tiny_model import make_tiny_model_dir

TOKEN = "context-lifetime-token"
PREFIX, SUFFIX = "def add(a, b):\n    return ", "\n\nprint(add(1, 2))\n"
SETTINGS = {"max_tokens": 4, "constrained": False}


@pytest.fixture(scope="module")
def own_engine(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return engine.load(make_tiny_model_dir(tmp_path_factory.mktemp("lifetime") / "model"))


def _settle(condition: Any, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_the_worker_drops_a_forgotten_keys_context_also_when_idle(own_engine: Any) -> None:
    worker = EngineWorker(own_engine, name="lifetime-test")
    try:
        for key in ("a", "b"):
            done = []
            worker.submit(Job("g", key, InfillCall(PREFIX, SUFFIX, "python", SETTINGS), on_done=done.append))
            _settle(lambda: done)
        assert {("g", "a"), ("g", "b")} <= set(own_engine.contexts)
        bytes_before = own_engine.contexts.keyed_bytes
        worker.forget("g", "a")  # the worker sleeps: the nudge wakes it
        _settle(lambda: ("g", "a") not in own_engine.contexts)
        assert ("g", "b") in own_engine.contexts and own_engine.contexts.keyed_bytes < bytes_before
    finally:
        worker.close()
        worker.join(30)


def test_live_sessions_and_connections_give_their_contexts_back(own_engine: Any) -> None:
    own_engine.forget_context()
    with ServerThread(own_engine, LiveConfig(port=0, token=TOKEN)) as server:
        async def client(round_: int, close_politely: bool) -> None:
            async with connect(server.websocket_url) as ws:
                for session in ("s1", "s2"):
                    await ws.send(json.dumps({"type": "open", "session": session, "token": TOKEN, "protocol": 1,
                                              "text": f"# round {round_}\n" + PREFIX + SUFFIX, "language": "python"}))
                    await ws.send(json.dumps({"type": "infill", "session": session, "id": 1, "settings": SETTINGS,
                                              "range": {"start": {"line": 2, "character": 11},
                                                        "end": {"line": 2, "character": 11}}}))
                results = 0
                while results < 2:
                    frame = json.loads(await asyncio.wait_for(ws.recv(), 60))
                    assert frame["type"] != "error", frame
                    results += frame["type"] == "result"
                if close_politely:
                    await ws.send(json.dumps({"type": "close", "session": "s1"}))
                # s2 (and s1 when not closed) go with the connection

        for round_ in range(6):
            asyncio.run(client(round_, close_politely=round_ % 2 == 0))
        _settle(lambda: server.connections == 0 and not own_engine.contexts)
        assert own_engine.contexts.keyed_bytes == 0


def test_answered_http_requests_leave_no_context_behind(own_engine: Any) -> None:
    own_engine.forget_context()
    body = {"prompt": PREFIX, "suffix": SUFFIX, "max_tokens": 4, "infill": {"constrained": False}}
    with ServerThread(own_engine, LiveConfig(port=0, token=TOKEN)) as server, \
            httpx.Client(base_url=server.base_url, timeout=60, headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        for index in range(8):
            assert client.post("/v1/completions", json={**body, "prompt": f"# {index}\n{PREFIX}"}).status_code == 200
        with client.stream("POST", "/v1/completions", json={**body, "stream": True}) as streamed:
            assert streamed.status_code == 200 and list(streamed.iter_lines())
        _settle(lambda: not own_engine.contexts)


def test_a_closed_lsp_document_gives_its_context_back(own_engine: Any) -> None:
    own_engine.forget_context()
    server = InfillServer()
    server.tell_log = lambda *args, **kwargs: None  # type: ignore[method-assign]

    async def scenario() -> None:
        server.engine._install(1, own_engine, None)
        server.settings = replace(server.settings, debounce_ms=0)
        server.sampler_overrides = dict(SETTINGS)
        uris = [f"file:///w/{name}.py" for name in ("a", "b")]
        for uri in uris:
            server.documents.open(types.TextDocumentItem(uri=uri, language_id="python", version=1, text=PREFIX + SUFFIX))
            assert await server.suggest(uri, types.Position(line=1, character=11)) is not None
        assert len(own_engine.contexts) == 2
        server.documents.close(uris[0])
        server.completions.forget(uris[0])  # what textDocument/didClose does
        await asyncio.to_thread(_settle, lambda: len(own_engine.contexts) == 1)

    try:
        asyncio.run(scenario())
    finally:
        server.engine.close()
