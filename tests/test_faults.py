"""Injected faults: what breaks under the engine and what the user sees. Each fault and
its outcome is also a row of the table in docs/reliability.md."""
from __future__ import annotations

import asyncio
import json
import os
import shutil
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest
import torch
from lsprotocol import types
from websockets.asyncio.client import connect

import engine
from engine.batching import PACKED_MIN_ROWS, BatchRunner
from engine.model_dir_watch import ModelDirWatch
from engine.types import ModelFailure
from engine.worker import EngineWorker, InfillCall, Job, Outcome
from infill_lsp.live.limits import Limits
from infill_lsp.live.server import LiveConfig
from infill_lsp.server import InfillServer
from lab.fixtures.faulty_model import ModelFaults
from lab.fixtures.live_server import ServerThread

PREFIX, SUFFIX = "def add(a, b):\n    return ", "\n\nprint(add(1, 2))\n"
SETTINGS = {"max_tokens": 6, "constrained": False}
TOKEN = "fault-test-token-0001"
OOM_CUDA = torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
OOM_CPU = RuntimeError("[enforce fail at alloc_cpu.cpp:117] DefaultCPUAllocator: can't allocate memory: "
                       "you tried to allocate 34359738368 bytes")
TIMEOUT = TimeoutError("the device did not answer within 30 s")
BUG = RuntimeError("shape mismatch in a pass")


@pytest.fixture()
def own_model_dir(tmp_path: Path) -> Path:
    from lab.fixtures.tiny_model import make_tiny_model_dir

    return make_tiny_model_dir(tmp_path / "model")


@pytest.mark.parametrize("fault", ["deleted", "truncated", "overwritten"])
def test_a_loaded_model_keeps_serving_when_its_directory_goes_bad(own_model_dir: Path, fault: str) -> None:
    eng = engine.load(own_model_dir)
    before = eng.infill("def f(x):\n    return ", "\n", max_tokens=4, constrained=False, seed=1).middle
    weights = own_model_dir / "model.safetensors"
    if fault == "deleted":
        shutil.rmtree(own_model_dir)
    elif fault == "truncated":
        with open(weights, "r+b") as handle:
            handle.truncate(0)
    else:
        size = weights.stat().st_size
        with open(weights, "r+b") as handle:
            handle.write(os.urandom(size))
    # The weights were copied at load: nothing is read from the directory any more.
    assert eng.infill("def f(x):\n    return ", "\n", max_tokens=4, constrained=False, seed=1).middle == before


def test_model_dir_watch_reports_each_change_once(own_model_dir: Path) -> None:
    clock = [0.0]
    watch = ModelDirWatch(own_model_dir, interval_s=5.0, clock=lambda: clock[0])
    assert watch.check() is None
    (own_model_dir / "model.safetensors").write_bytes(b"new weights")
    assert watch.check() is None  # not yet: at most every interval_s
    clock[0] += 6
    message = watch.check()
    assert message is not None and "changed while in use" in message and "model.safetensors" in message
    clock[0] += 6
    assert watch.check() is None  # told once
    shutil.rmtree(own_model_dir)
    clock[0] += 6
    message = watch.check()
    assert message is not None and "disappeared" in message
    clock[0] += 6
    assert watch.check() is None
    own_model_dir.mkdir()
    (own_model_dir / "config.json").write_text("{}")
    clock[0] += 6
    assert "changed" in (watch.check() or "")


def test_the_language_server_tells_the_user_once_when_its_model_directory_goes(own_model_dir: Path) -> None:
    server = InfillServer(model_dir=str(own_model_dir))
    told: list[str] = []
    server.tell_user = lambda message, *args, **kwargs: told.append(message)  # type: ignore[method-assign]
    server.tell_log = lambda message, *args, **kwargs: None  # type: ignore[method-assign]

    async def scenario() -> list[Any]:
        await server.engine.load(str(own_model_dir))
        server.engine.dir_watch.interval_s = 0  # look on every request, not every 5 s
        uri = "file:///w/a.py"
        server.documents.open(types.TextDocumentItem(uri=uri, language_id="python", version=1,
                                                     text="def f(x):\n    return \n"))
        server.settings = replace(server.settings, debounce_ms=0)
        server.sampler_overrides = {"max_tokens": 4, "constrained": False}
        at = types.Position(line=1, character=11)
        answers = [await server.suggest(uri, at)]
        shutil.rmtree(own_model_dir)
        answers += [await server.suggest(uri, at), await server.suggest(uri, at)]
        return answers

    try:
        answers = asyncio.run(scenario())
    finally:
        server.engine.close()
    assert all(answer is not None for answer in answers)  # the loaded model keeps serving
    assert len(told) == 1 and "disappeared while in use" in told[0] and str(own_model_dir) in told[0], told


def test_infill_serve_reports_a_replaced_model_directory_in_its_log_and_health(
        own_model_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    eng = engine.load(own_model_dir)
    body = {"prompt": "def f(x):\n    return ", "suffix": "\n", "max_tokens": 4, "infill": {"constrained": False}}
    with ServerThread(eng, LiveConfig(port=0, token=TOKEN)) as server, \
            httpx.Client(base_url=server.base_url, timeout=60, headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        server.dir_watch.interval_s = 0
        assert client.post("/v1/completions", json=body).status_code == 200
        assert "model_dir" not in client.get("/health").json()
        weights = own_model_dir / "model.safetensors"
        weights.write_bytes(os.urandom(weights.stat().st_size))  # replaced by something else
        assert client.post("/v1/completions", json=body).status_code == 200  # still served from memory
        assert client.post("/v1/completions", json=body).status_code == 200
        health = client.get("/health").json()
    assert "changed while in use" in health["model_dir"] and "model.safetensors" in health["model_dir"]
    warnings = [r.getMessage() for r in caplog.records if "changed while in use" in r.getMessage()]
    assert len(warnings) == 1, warnings


# -- faults inside a forward pass ------------------------------------------------------------
# Each injected where a real one happens (lab/fixtures/faulty_model.py): the prefill on a
# pass of its own (`encode_context`: a keyed request whose key's context is cached), the
# prefill merged into a request's first pass (`encode_with_canvas`: a context new to its
# key, as every HTTP request's is), one request's pass (`canvas_logits`), a batched pass.

@pytest.fixture(scope="module")
def faulty(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, ModelFaults]]:
    """An engine of its own (its model's passes wrapped), shared by this module's tests."""
    from lab.fixtures.tiny_model import make_tiny_model_dir

    eng = engine.load(make_tiny_model_dir(tmp_path_factory.mktemp("faulty") / "model"))
    faults = ModelFaults(eng.model)
    yield eng, faults
    faults.restore()


@pytest.fixture()
def faults(faulty: tuple[Any, ModelFaults]) -> Iterator[ModelFaults]:
    yield faulty[1]
    faulty[1].disarm()
    faulty[1].release()


def _run(worker: EngineWorker, key: str) -> Outcome:
    done: list[Outcome] = []
    ended = threading.Event()
    job = Job("test", key, InfillCall(PREFIX, SUFFIX, "python", SETTINGS),
              on_done=lambda outcome: (done.append(outcome), ended.set()))
    worker.submit(job)
    assert ended.wait(120), "the job never ended"
    return done[0]


@pytest.mark.parametrize("where, error, kind", [
    ("encode_context", OOM_CUDA, "out_of_memory"),
    ("encode_with_canvas", OOM_CPU, "out_of_memory"),
    ("canvas_logits", MemoryError(), "out_of_memory"),
    ("canvas_logits", OOM_CPU, "out_of_memory"),
    ("canvas_logits", TIMEOUT, "timeout"),
    ("encode_context", TIMEOUT, "timeout"),
    ("canvas_logits", BUG, "error"),
], ids=["prefill-cuda-oom", "merged-prefill-cpu-oom", "pass-memoryerror", "pass-cpu-oom", "pass-timeout", "prefill-timeout", "pass-bug"])
def test_a_fault_in_a_forward_pass_fails_that_request_and_the_worker_serves_the_next(
        faulty: tuple[Any, ModelFaults], faults: ModelFaults, where: str, error: BaseException, kind: str) -> None:
    eng = faulty[0]
    expected = eng.infill(PREFIX, SUFFIX, "python", **SETTINGS).middle
    if where == "encode_with_canvas":
        eng.forget_context()  # a new context: encoded in the request's first pass, not on its own
    worker = EngineWorker(eng, name="fault-test")
    try:
        if where == "encode_context":
            # A keyed request builds only on its own key's context (engine/api.py _reusable):
            # with "a"'s cached, the request encodes it on a pass of its own.
            assert _run(worker, "a").result.middle == expected
        faults.arm(where, error)
        failed = _run(worker, "a")
        assert failed.result is None and isinstance(failed.error, ModelFailure), failed
        assert failed.error.kind == kind and failed.error.__cause__ is error
        assert failed.error.retryable == (kind != "error")
        message = str(failed.error)
        assert {"out_of_memory": "ran out of memory", "timeout": "timed out",
                "error": "RuntimeError"}[kind] in message and "Traceback" not in message
        again = _run(worker, "a")  # the same session again, then another one: both served
        other = _run(worker, "b")
        assert again.error is None and again.result.middle == expected
        assert other.error is None and other.result.middle == expected
    finally:
        worker.close()
        worker.join(30)


def test_a_fault_in_a_batched_pass_fails_only_the_request_it_hits(
        faulty: tuple[Any, ModelFaults], faults: ModelFaults) -> None:
    """A batched pass that runs out of memory is retried one request at a time; the one
    that fails alone ends with its error, the others give their fault-free middles."""
    eng = faulty[0]
    # Canvases of 8 rows: tinier ones have their passes alone, never packed (batching.PACKED_MIN_ROWS).
    settings = {**SETTINGS, "max_tokens": PACKED_MIN_ROWS}
    requests = [(PREFIX, SUFFIX), ("for i in range(10):\n    ", "\n"), ("xs = [1, 2, 3]\nys = [x * 2 for x in ", "]\n")]
    solo = [eng.infill(p, s, "python", **settings).middle for p, s in requests]
    runner = BatchRunner(eng, max_batch=8)
    tickets = [runner.submit(eng.job(p, s, "python", **settings)) for p, s in requests]
    runner.run_pass()  # the first pass: a request whose context is new encodes it with its first canvas, alone
    assert runner.in_flight == 3
    faults.arm("canvas_logits_many", OOM_CUDA)
    faults.arm("canvas_logits", OOM_CUDA)  # the first request's pass alone fails too
    while runner.has_work():
        runner.run_pass()
    with pytest.raises(torch.OutOfMemoryError):
        tickets[0].wait(0)
    assert [t.wait(0).middle for t in tickets[1:]] == solo[1:]
    assert faults.calls["canvas_logits_many"] >= 2  # batched passes resumed after the fault


# -- what the servers' users see -----------------------------------------------------------------
def _infill_frame(session: str, request_id: Any) -> str:
    return json.dumps({"type": "infill", "session": session, "id": request_id, "settings": SETTINGS,
                       "range": {"start": {"line": 1, "character": 11}, "end": {"line": 1, "character": 11}}})


async def _open(ws: Any, session: str) -> None:
    await ws.send(json.dumps({"type": "open", "session": session, "token": TOKEN, "protocol": 1,
                              "text": PREFIX + SUFFIX, "language": "python"}))
    assert (await _frame(ws, "opened"))["session"] == session


async def _frame(ws: Any, *types: str) -> dict[str, Any]:
    """The next frame of one of `types`, skipping steps and `queued`."""
    while True:
        frame = json.loads(await asyncio.wait_for(ws.recv(), 60))
        if frame["type"] in types:
            return frame
        assert frame["type"] in ("step", "queued", "hello", "cancelled"), frame


def test_live_clients_see_a_model_failure_for_that_request_and_are_served_after_it(
        faulty: tuple[Any, ModelFaults], faults: ModelFaults) -> None:
    with ServerThread(faulty[0], LiveConfig(port=0, token=TOKEN)) as server:
        async def scenario() -> None:
            async with connect(server.websocket_url) as ws:
                await _open(ws, "s")
                for request_id, error, code, words in ((1, OOM_CUDA, "model_failed", "ran out of memory"),
                                                       (2, TIMEOUT, "model_failed", "timed out"),
                                                       (3, BUG, "internal_error", "engine failed")):
                    faults.arm("canvas_logits", error)
                    await ws.send(_infill_frame("s", request_id))
                    frame = await _frame(ws, "result", "error")
                    assert frame["type"] == "error" and frame["code"] == code and frame["id"] == request_id, frame
                    assert words in frame["message"] and "Traceback" not in frame["message"]
                    await ws.send(_infill_frame("s", f"after-{request_id}"))
                    frame = await _frame(ws, "result", "error")
                    assert frame["type"] == "result" and frame["id"] == f"after-{request_id}", frame

        asyncio.run(scenario())
        assert server.live_in_flight == 0


def test_http_clients_get_503_for_memory_and_timeouts_500_for_a_bug_and_are_served_after(
        faulty: tuple[Any, ModelFaults], faults: ModelFaults) -> None:
    body = {"prompt": PREFIX, "suffix": SUFFIX, "max_tokens": 6, "infill": {"language": "python", "constrained": False}}
    with ServerThread(faulty[0], LiveConfig(port=0, token=TOKEN)) as server, \
            httpx.Client(base_url=server.base_url, timeout=60, headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        for error, status, code, words in ((OOM_CPU, 503, "model_failed", "ran out of memory"),
                                           (TIMEOUT, 503, "model_failed", "timed out"),
                                           (BUG, 500, "internal_error", "engine failed")):
            faults.arm("encode_with_canvas", error)  # each HTTP request's context is its own, new: its prefill
            answer = client.post("/v1/completions", json=body)
            assert answer.status_code == status, answer.text
            assert answer.json()["error"]["code"] == code and words in answer.json()["error"]["message"]
            assert client.post("/v1/completions", json=body).status_code == 200


def test_the_language_server_logs_a_model_failure_and_answers_the_next_request(
        faulty: tuple[Any, ModelFaults], faults: ModelFaults, tmp_path: Path) -> None:
    server = InfillServer()
    logged: list[str] = []
    server.tell_log = lambda message, *args, **kwargs: logged.append(message)  # type: ignore[method-assign]
    server.tell_user = lambda message, *args, **kwargs: logged.append("POPUP " + message)  # type: ignore[method-assign]

    async def scenario() -> list[Any]:
        server.engine._install(1, faulty[0], None)  # the faulty engine, as if loaded
        uri = "file:///w/a.py"
        server.documents.open(types.TextDocumentItem(uri=uri, language_id="python", version=1, text=PREFIX + SUFFIX))
        server.settings = replace(server.settings, debounce_ms=0)
        server.sampler_overrides = dict(SETTINGS)
        at = types.Position(line=1, character=11)
        faults.arm("canvas_logits", OOM_CUDA)
        first = await server.suggest(uri, at)
        second = await server.suggest(uri, at)
        return [first, second]

    try:
        first, second = asyncio.run(scenario())
    finally:
        server.engine.close()
    assert first is None and second is not None and second.text
    assert any(line.startswith("no completion: the model ran out of memory") for line in logged), logged
    assert not any(line.startswith("POPUP") for line in logged)
    counts = server.stats.snapshot()["counts"]
    assert counts["model_failures"] == 1 and counts["errors"] == 0


# -- load shedding ---------------------------------------------------------------------------------
def _wait_until(condition: Any, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.02)


def test_live_server_sheds_load_with_server_busy_and_a_bounded_queue(
        faulty: tuple[Any, ModelFaults], faults: ModelFaults) -> None:
    limits = Limits(max_live_requests=2)
    with ServerThread(faulty[0], LiveConfig(port=0, token=TOKEN, limits=limits)) as server:
        async def scenario() -> None:
            async with connect(server.websocket_url) as ws:
                for session in ("a", "b", "c"):
                    await _open(ws, session)
                faults.hold()  # the engine is busy: nothing finishes
                await ws.send(_infill_frame("a", 1))
                await ws.send(_infill_frame("b", 2))
                await ws.send(_infill_frame("c", 3))
                busy = await _frame(ws, "error")
                assert busy["code"] == "server_busy" and busy["id"] == 3 and busy["session"] == "c", busy
                assert "busy" in busy["message"] and "retry" in busy["message"]
                assert server.live_in_flight == 2 and server.worker.pending() + len(server.worker.in_batch) <= 2
                await ws.send(_infill_frame("a", 4))  # a newer request of a session replaces its own
                assert (await _frame(ws, "cancelled", "error"))["type"] == "cancelled"
                faults.release()
                answers = {}
                while len(answers) < 2:
                    frame = await _frame(ws, "result", "error")
                    answers[frame["id"]] = frame["type"]
                assert answers == {2: "result", 4: "result"}
                await ws.send(_infill_frame("c", 5))  # room again
                assert (await _frame(ws, "result", "error"))["type"] == "result"

        asyncio.run(scenario())
        _wait_until(lambda: server.live_in_flight == 0)


def test_http_server_sheds_load_with_429_server_busy(faulty: tuple[Any, ModelFaults], faults: ModelFaults) -> None:
    limits = Limits(max_http_requests=2)
    body = {"prompt": PREFIX, "suffix": SUFFIX, "max_tokens": 6, "infill": {"language": "python", "constrained": False}}
    with ServerThread(faulty[0], LiveConfig(port=0, token=TOKEN, limits=limits)) as server, \
            httpx.Client(base_url=server.base_url, timeout=60, headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        faults.hold()
        held: list[httpx.Response] = []
        threads = [threading.Thread(target=lambda: held.append(client.post("/v1/completions", json=body)))
                   for _ in range(2)]
        for thread in threads:
            thread.start()
        _wait_until(lambda: server.http_in_flight == 2)
        busy = client.post("/v1/completions", json=body)
        assert busy.status_code == 429 and busy.json()["error"]["code"] == "server_busy", busy.text
        faults.release()
        for thread in threads:
            thread.join(60)
        assert [r.status_code for r in held] == [200, 200]
        assert client.post("/v1/completions", json=body).status_code == 200


# -- slow HTTP clients ----------------------------------------------------------------------------
def _raw_post(port: int, body: bytes) -> tuple[Any, bytes]:
    """A socket with the request's head sent, and the body to send (by the caller, slowly)."""
    import socket

    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    head = (f"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {TOKEN}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n")
    sock.sendall(head.encode())
    return sock, body


def test_slow_http_clients_hold_up_nobody_and_leave_nothing_behind(faulty: tuple[Any, ModelFaults]) -> None:
    """A body trickling in byte by byte, one that stops half-way and hangs up, and a
    streamed answer nobody reads: the others are served meanwhile, and every request's
    place is given back."""
    body = json.dumps({"prompt": PREFIX, "suffix": SUFFIX, "max_tokens": 6,
                       "infill": {"language": "python", "constrained": False}}).encode()
    with ServerThread(faulty[0], LiveConfig(port=0, token=TOKEN)) as server, \
            httpx.Client(base_url=server.base_url, timeout=60, headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        trickling, rest = _raw_post(server.port, body)
        quitter, half = _raw_post(server.port, body)
        quitter.sendall(half[: len(half) // 2])
        streamed = json.loads(body)
        streamed["stream"] = True
        unread, streamed_body = _raw_post(server.port, json.dumps(streamed).encode())
        unread.sendall(streamed_body)  # and never reads the answer
        for index, byte in enumerate(rest):
            trickling.sendall(bytes([byte]))
            if index % 40 == 0:  # others are served while the slow ones take their time
                assert client.post("/v1/completions", json=json.loads(body)).status_code == 200
            time.sleep(0.005)
        quitter.close()
        answer = b""
        while b"\r\n\r\n" not in answer:
            answer += trickling.recv(65536)
        assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
        trickling.close()
        unread.close()
        _wait_until(lambda: server.http_in_flight == 0)
        assert client.post("/v1/completions", json=json.loads(body)).status_code == 200


def test_live_connections_and_sessions_past_their_limits_are_refused_clearly(faulty: tuple[Any, ModelFaults]) -> None:
    from websockets.exceptions import InvalidStatus

    limits = Limits(max_connections=2, max_sessions_total=2)
    with ServerThread(faulty[0], LiveConfig(port=0, token=TOKEN, limits=limits)) as server:
        async def scenario() -> None:
            async with connect(server.websocket_url) as first, connect(server.websocket_url) as second:
                with pytest.raises(InvalidStatus) as refused:
                    async with connect(server.websocket_url):
                        pass
                assert refused.value.response.status_code == 503
                await _open(first, "a")
                await _open(second, "b")
                await first.send(json.dumps({"type": "open", "session": "c", "token": TOKEN, "protocol": 1,
                                             "text": "x = 1\n", "language": "python"}))
                full = await _frame(first, "error")
                assert full["code"] == "server_full" and full["session"] == "c", full
                await second.send(json.dumps({"type": "close", "session": "b"}))
                assert (await _frame(second, "closed"))["session"] == "b"
                await _open(first, "c")  # a place was given back
            async with connect(server.websocket_url) as third:  # and so were the connections
                await _open(third, "d")

        asyncio.run(scenario())
