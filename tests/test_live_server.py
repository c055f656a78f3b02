"""Protocol tests of `infill serve` with the websockets client, against the real engine on a
tiny random model (completion quality is irrelevant here; routing and lifecycle are not)."""
from __future__ import annotations

import asyncio
import json
from typing import Any, Callable, Iterator, Optional

import pytest
from websockets.asyncio.client import ClientConnection, connect

import engine
from lab.fixtures.faulty_model import ModelFaults
from lab.fixtures.tiny_model import make_tiny_model_dir
from infill_lsp.live.limits import Limits
from infill_lsp.live.server import LiveConfig, LiveServer
from lab.fixtures.live_server import ServerThread

TIMEOUT = 60.0  # generous: CI shares two cores with whatever else runs
# Requests meant to be cancelled mid-way: a random model rarely ends early, so these take over
# a hundred passes; the tests also hold the engine's passes (ModelFaults) until the cancel is in.
LONG = {"max_tokens": 256, "block_size": 8}


@pytest.fixture(scope="module")
def tiny_engine(tmp_path_factory: pytest.TempPathFactory) -> Any:
    model_dir = make_tiny_model_dir(tmp_path_factory.mktemp("live-model") / "model")
    return engine.load(model_dir=str(model_dir))


@pytest.fixture(scope="module")
def live(tiny_engine: Any) -> Iterator[LiveServer]:
    with ServerThread(tiny_engine, LiveConfig(port=0, limits=Limits(max_sessions_per_connection=4))) as server:
        yield server


@pytest.fixture()
def faults(tiny_engine: Any) -> Iterator[ModelFaults]:
    """The engine's passes, to hold: a request then cannot end before the test's next message
    reaches the server, however slow the machine makes that round trip."""
    wrapped = ModelFaults(tiny_engine.model)
    yield wrapped
    wrapped.restore()


def pos(line: int, character: int) -> dict[str, int]:
    return {"line": line, "character": character}


def rng(start: dict[str, int], end: Optional[dict[str, int]] = None) -> dict[str, Any]:
    return {"start": start, "end": end or start}


class Client:
    """A protocol client that collects frames and waits for the ones a test cares about."""

    def __init__(self, ws: ClientConnection, token: str) -> None:
        self.ws, self.token = ws, token
        self.frames: list[dict[str, Any]] = []

    async def send(self, **message: Any) -> None:
        await self.ws.send(json.dumps(message))

    async def open(self, session: str, text: str, language: Optional[str] = "python") -> None:
        await self.send(type="open", session=session, token=self.token, protocol=1, text=text, language=language)
        await self.wait(lambda f: f["type"] == "opened" and f["session"] == session)

    async def wait(self, predicate: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        async with asyncio.timeout(TIMEOUT):
            while True:
                frame = json.loads(await self.ws.recv())
                self.frames.append(frame)
                if predicate(frame):
                    return frame

    async def finish(self, session: str, request_id: Any) -> dict[str, Any]:
        return await self.wait(lambda f: f.get("session") == session and f.get("id") == request_id
                               and f["type"] in ("result", "cancelled", "error"))

    def of(self, session: str, request_id: Any, kind: Optional[str] = None) -> list[dict[str, Any]]:
        return [f for f in self.frames if f.get("session") == session and f.get("id") == request_id
                and (kind is None or f["type"] == kind)]


async def client(server: LiveServer, **kwargs: Any) -> tuple[ClientConnection, Client]:
    ws = await connect(server.websocket_url, **kwargs)
    hello = json.loads(await ws.recv())
    assert hello["type"] == "hello" and hello["protocol"] == 1
    return ws, Client(ws, server.token)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_infill_streams_steps_then_one_result(live: LiveServer) -> None:
    async def scenario() -> None:
        ws, c = await client(live)
        async with ws:
            text = "def add(a, b):\n    return \n"
            await c.open("s", text)
            await c.send(type="infill", session="s", id=7, range=rng(pos(1, 11)), settings={"max_tokens": 12})
            result = await c.finish("s", 7)
            assert result["type"] == "result", result
            assert result["range"] == rng(pos(1, 11)) and result["version"] == 0
            assert isinstance(result["text"], str)
            stats = result["stats"]
            assert stats["forwards"] >= 1 and 0 <= stats["tokens"] <= 12 and stats["ms"] > 0
            assert result["elapsed_ms"] >= result["queue_ms"] >= 0
            assert [f["type"] for f in c.of("s", 7)][0] == "queued"
            steps = c.of("s", 7, "step")
            assert steps, "no step frames before the result"
            for frame in steps:
                assert frame["masked"] == sum(1 for piece in frame["canvas"] if piece is None)
                for change in frame["changes"]:
                    # The canvas stops at the end of the middle: an `end` sits right after its last entry.
                    last = len(frame["canvas"]) if change["kind"] == "end" else len(frame["canvas"]) - 1
                    assert 0 <= change["position"] <= last and 0.0 <= change["confidence"] <= 1.0, (change, frame)
                    assert change["kind"] in ("commit", "edit", "end")
            await asyncio.sleep(0.3)  # nothing may follow the terminal frame
            assert c.of("s", 7)[-1] is result

    run(scenario())


def test_rewrite_of_a_range_reports_that_range(live: LiveServer) -> None:
    async def scenario() -> None:
        ws, c = await client(live)
        async with ws:
            await c.open("r", "x = 1\ny = old_value\n")
            where = rng(pos(1, 4), pos(1, 13))
            await c.send(type="infill", session="r", id="rw", range=where, settings={"max_tokens": 8})
            result = await c.finish("r", "rw")
            assert result["type"] == "result" and result["range"] == where

    run(scenario())


def test_newer_request_and_edits_cancel_the_running_one(live: LiveServer, faults: ModelFaults) -> None:
    async def scenario() -> None:
        ws, c = await client(live)
        async with ws:
            await c.open("s", "def f():\n    \n")
            faults.hold()  # requests 1 and 2 cannot end before the supersede and the edit arrive
            await c.send(type="infill", session="s", id=1, range=rng(pos(1, 4)), settings=LONG)
            await c.send(type="infill", session="s", id=2, range=rng(pos(1, 4)), settings=LONG)
            first = await c.finish("s", 1)
            assert first["type"] == "cancelled" and first["reason"] == "superseded"
            await c.send(type="edit", session="s", edits=[{"range": rng(pos(1, 4)), "text": "return"}])
            second = await c.finish("s", 2)
            # The edit landed while request 2 was queued or running: it must be cancelled, not answered.
            assert second["type"] == "cancelled" and second["reason"] == "edit"
            edited = await c.wait(lambda f: f["type"] == "edited")
            assert edited["version"] == 1
            faults.release()
            await c.send(type="infill", session="s", id=3, range=rng(pos(1, 10)), settings={"max_tokens": 4})
            third = await c.finish("s", 3)
            assert third["type"] == "result" and third["version"] == 1
            faults.hold()  # request 4 cannot end before the cancel arrives
            await c.send(type="infill", session="s", id=4, range=rng(pos(1, 10)), settings=LONG)
            await c.send(type="cancel", session="s")
            assert (await c.finish("s", 4))["reason"] == "cancel"
            faults.release()
            await asyncio.sleep(0.3)
            for request_id in (1, 2, 4):  # nothing after the terminal frame of a cancelled request
                assert c.of("s", request_id)[-1]["type"] == "cancelled"

    run(scenario())


def test_sessions_on_one_connection_get_their_own_results(live: LiveServer) -> None:
    async def scenario() -> None:
        ws, c = await client(live)
        async with ws:
            for index in range(3):
                await c.open(f"s{index}", "\n" * index + "print()\n")
            for index in range(3):
                await c.send(type="infill", session=f"s{index}", id=index, range=rng(pos(index, 0)),
                             settings={"max_tokens": 6})
            results = [await c.finish(f"s{index}", index) for index in range(3)]
            for index, result in enumerate(results):
                assert result["type"] == "result" and result["range"] == rng(pos(index, 0))
            for frame in c.frames:
                if "id" in frame and "session" in frame:
                    assert frame["session"] == f"s{frame['id']}"  # never another session's frame
            await c.send(type="close", session="s1")
            await c.wait(lambda f: f["type"] == "closed" and f["session"] == "s1")
            await c.send(type="infill", session="s1", id=9, range=rng(pos(0, 0)))
            error = await c.wait(lambda f: f["type"] == "error")
            assert error["code"] == "unknown_session" and error["session"] == "s1"

    run(scenario())


def test_an_unknown_language_is_refused_and_a_known_one_is_reported(live: LiveServer) -> None:
    """Issue 26 (4): `open` with `cobol` used to open a session that ran unconstrained."""
    async def scenario() -> None:
        ws, c = await client(live)
        async with ws:
            await c.send(type="open", session="c", token=live.token, protocol=1, text="x = \n", language="cobol")
            error = await c.wait(lambda f: f["type"] == "error")
            assert error["code"] == "unknown_language" and error["session"] == "c"
            assert "'cobol'" in error["message"] and "python" in error["message"]
            await c.send(type="infill", session="c", id=1, range=rng(pos(0, 4)))
            assert (await c.wait(lambda f: f["type"] == "error"))["code"] == "unknown_session"  # never opened
            await c.open("p", "def add(a, b):\n    return \n", language="python")
            await c.send(type="infill", session="p", id=2, range=rng(pos(1, 11)), settings={"max_tokens": 4})
            result = await c.finish("p", 2)
            assert result["type"] == "result" and result["stats"]["language"] == "python"

    run(scenario())


def test_a_client_that_stops_reading_does_not_stall_others(tiny_engine: Any) -> None:
    """On a server that runs one request at a time (max_batch=1), so the turns are exact:
    batched, the slow client's four requests (the same text) end in the same pass, and
    whether that pass fell while the fast request ran depended on how long the fast
    client's `open` round trip took."""
    async def scenario(live: LiveServer) -> None:
        # The stalled client's receive buffer is one frame, so it pushes back on the server at once.
        # It never reads, so it cannot finish a closing handshake either: do not wait long for one.
        slow_ws, slow = await client(live, max_queue=1, close_timeout=0.5)
        fast_ws, fast = await client(live)
        async with slow_ws, fast_ws:
            for index in range(4):
                await slow.send(type="open", session=f"slow{index}", token=live.token, protocol=1,
                                text="def h():\n    \n", language="python")
            for index in range(4):
                await slow.send(type="infill", session=f"slow{index}", id=index, range=rng(pos(1, 4)),
                                settings={"max_tokens": 48})
            await fast.open("f", "def g():\n    \n")
            completed_before = live.worker.completed
            await fast.send(type="infill", session="f", id="mine", range=rng(pos(1, 4)), settings={"max_tokens": 8})
            result = await fast.finish("f", "mine")
            assert result["type"] == "result"
            # Round robin across connections: the fast request waited for at most the slow job
            # that was running, not for all four queued ones (FIFO would make this 5).
            assert live.worker.completed - completed_before <= 3

    config = LiveConfig(port=0, max_batch=1, limits=Limits(max_sessions_per_connection=4))
    with ServerThread(tiny_engine, config) as one_at_a_time:
        run(scenario(one_at_a_time))
