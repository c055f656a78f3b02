"""The soak's clients: an asyncio LSP client over a subprocess's stdio, and the typing
replays that drive it and the live server (lab/soak/run.py starts them).

Latency is measured from sending a request to its answer; a request overtaken by the
next keystroke is cancelled, as editors do, and counted as cancelled, not answered.
"""
from __future__ import annotations

import asyncio
import itertools
import json
import random
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

EXPECTED_LSP_ERRORS = {-32800}  # RequestCancelled: the client cancelled it
EXPECTED_LIVE_ERRORS = {"rate_limited"}  # only the slow client floods on purpose


@dataclass
class Recorder:
    """Everything the clients observed, time-stamped from the start of the soak."""

    started: float = field(default_factory=time.monotonic)
    latencies: list[tuple[float, str, float]] = field(default_factory=list)  # (t, channel, ms)
    counts: dict[str, int] = field(default_factory=dict)
    unexpected: list[tuple[float, str, str]] = field(default_factory=list)  # (t, channel, what)

    def now(self) -> float:
        return time.monotonic() - self.started

    def answered(self, channel: str, ms: float) -> None:
        self.latencies.append((self.now(), channel, ms))
        self.count(f"{channel} answered")

    def count(self, what: str, amount: int = 1) -> None:
        self.counts[what] = self.counts.get(what, 0) + amount

    def error(self, channel: str, what: str) -> None:
        self.unexpected.append((self.now(), channel, what[:300]))
        self.count(f"{channel} unexpected errors")


# -- typing material ------------------------------------------------------------------------
def regions(files: list[Path], seed: int, length: int = 160) -> "itertools.cycle":
    """(text, start, end) stretches of real files to delete and type back, forever."""
    rng = random.Random(seed)
    chosen = []
    for path in files:
        text = path.read_text(encoding="utf-8")
        for _ in range(8):
            start = text.find("\n", rng.randrange(max(1, len(text) - length))) + 1
            chosen.append((text, start, min(len(text), start + length)))
    rng.shuffle(chosen)
    return itertools.cycle(chosen)


def typing_pause(rng: random.Random, interval_s: float, char: str) -> float:
    """The time before the next key: around `interval_s`, with the longer pauses people
    make at the end of a line and now and then mid-line (where suggestions get read)."""
    if char == "\n" or rng.random() < 0.08:
        return rng.uniform(0.6, 1.5)
    return rng.uniform(0.6, 1.6) * interval_s


def position(text: str, offset: int) -> dict:
    """LSP position (UTF-16 columns) of `offset` in `text` (lines end at \\n here)."""
    line = text.count("\n", 0, offset)
    start = text.rfind("\n", 0, offset) + 1
    return {"line": line, "character": len(text[start:offset].encode("utf-16-le")) // 2}


# -- LSP over stdio ---------------------------------------------------------------------------
class AsyncLspClient:
    def __init__(self, process: asyncio.subprocess.Process, settings: dict) -> None:
        self.process = process
        self.settings = settings
        self._ids = itertools.count(1)
        self.pending: dict[int, asyncio.Future] = {}
        self.log_messages: list[str] = []
        self.reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        try:
            while True:
                length = None
                while True:
                    line = await stream.readline()
                    if not line:
                        raise ConnectionError("the language server closed its output")
                    if line in (b"\r\n", b"\n"):
                        break
                    name, _, value = line.decode("ascii", "replace").partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value)
                message = json.loads(await stream.readexactly(length or 0))
                self._dispatch(message)
        except (ConnectionError, asyncio.IncompleteReadError) as error:
            for future in self.pending.values():
                if not future.done():
                    future.set_exception(ConnectionError(str(error)))

    def _dispatch(self, message: dict) -> None:
        if "method" in message and "id" in message:  # the server asks (workspace/configuration)
            items = (message.get("params") or {}).get("items", [])
            result = [self.settings for _ in items] if message["method"] == "workspace/configuration" else None
            self.send({"jsonrpc": "2.0", "id": message["id"], "result": result})
        elif "method" in message:
            if message["method"] in ("window/logMessage", "window/showMessage"):
                self.log_messages.append(str(message["params"].get("message")))
        else:
            future = self.pending.pop(message.get("id"), None)
            if future is not None and not future.done():
                future.set_result(message)

    def send(self, message: dict) -> None:
        body = json.dumps(message).encode()
        assert self.process.stdin is not None
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def request(self, method: str, params: Any) -> tuple[int, asyncio.Future]:
        message_id = next(self._ids)
        future = asyncio.get_running_loop().create_future()
        self.pending[message_id] = future
        self.send({"jsonrpc": "2.0", "id": message_id, "method": method, "params": params})
        return message_id, future

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def initialize(self) -> None:
        _, answer = self.request("initialize", {"processId": None, "rootUri": None, "capabilities": {
            "workspace": {"configuration": True}}, "initializationOptions": self.settings})
        await asyncio.wait_for(answer, 120)
        self.notify("initialized", {})
        deadline = time.monotonic() + 180
        while not any("ready in" in line or "not loaded" in line for line in self.log_messages):
            if time.monotonic() > deadline:
                raise TimeoutError("the language server did not load its model")
            await asyncio.sleep(0.1)

    async def shutdown(self) -> Optional[int]:
        try:
            _, answer = self.request("shutdown", None)
            await asyncio.wait_for(answer, 30)
            self.notify("exit", None)
            return await asyncio.wait_for(self.process.wait(), 30)
        except (asyncio.TimeoutError, ConnectionError):
            self.process.kill()
            return None


async def lsp_typist(lsp: AsyncLspClient, files: list[Path], recorder: Recorder, until: float,
                     interval_s: float, seed: int) -> None:
    """Type stretches of real files one key at a time; each key asks for a suggestion and
    cancels the request the key overtook."""
    uri, version = "file:///soak/typed.py", 1
    rng = random.Random(seed)
    source = regions(files, seed)
    text, start, end = next(source)
    document = text[:start] + text[end:]
    lsp.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": version,
                                                         "text": document}})
    in_flight: Optional[tuple[int, asyncio.Future, float]] = None
    keys = 0
    while recorder.now() < until:
        text, start, end = next(source)
        document = text[:start] + text[end:]
        version += 1
        lsp.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                              "contentChanges": [{"text": document}]})
        for cursor in range(start, end):
            if recorder.now() >= until:
                break
            char = text[cursor]
            at = position(document, cursor)
            document = document[:cursor] + char + document[cursor:]
            version += 1
            lsp.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version}, "contentChanges": [
                {"range": {"start": at, "end": at}, "text": char}]})
            if in_flight is not None and not in_flight[1].done():
                lsp.notify("$/cancelRequest", {"id": in_flight[0]})
            keys += 1
            method = "textDocument/completion" if keys % 25 == 0 else "textDocument/inlineCompletion"
            params = {"textDocument": {"uri": uri}, "position": position(document, cursor + 1)}
            if method.endswith("inlineCompletion"):
                params["context"] = {"triggerKind": 2}
            message_id, answer = lsp.request(method, params)
            in_flight = (message_id, answer, time.perf_counter())
            answer.add_done_callback(_lsp_outcome(recorder, in_flight[2]))
            recorder.count("lsp requests")
            await asyncio.sleep(typing_pause(rng, interval_s, char))
    lsp.notify("textDocument/didClose", {"textDocument": {"uri": uri}})


def _lsp_outcome(recorder: Recorder, sent: float) -> Callable[[asyncio.Future], None]:
    def done(future: asyncio.Future) -> None:
        if future.cancelled() or future.exception() is not None:
            recorder.error("lsp", f"no answer: {future.exception() if not future.cancelled() else 'cancelled'}")
            return
        message = future.result()
        error = message.get("error")
        if error is None:
            recorder.answered("lsp", (time.perf_counter() - sent) * 1000)
        elif error.get("code") in EXPECTED_LSP_ERRORS:
            recorder.count("lsp cancelled")
        else:
            recorder.error("lsp", json.dumps(error))
    return done


# -- the live server over WebSocket -----------------------------------------------------------
class LiveSession:
    """One connection with one session; a reader task settles requests by id."""

    def __init__(self, ws: ClientConnection, recorder: Recorder, channel: str) -> None:
        self.ws, self.recorder, self.channel = ws, recorder, channel
        self.sent: dict[Any, float] = {}
        self.finished: dict[Any, asyncio.Future] = {}
        self.reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        try:
            async for raw in self.ws:
                frame = json.loads(raw)
                kind = frame.get("type")
                if kind in ("result", "cancelled", "error") and "id" in frame:
                    sent = self.sent.pop(frame["id"], None)
                    if kind == "result" and sent is not None:
                        self.recorder.answered(self.channel, (time.perf_counter() - sent) * 1000)
                    elif kind == "cancelled":
                        self.recorder.count(f"{self.channel} cancelled")
                    future = self.finished.pop(frame["id"], None)
                    if future is not None and not future.done():
                        future.set_result(frame)
                if kind == "error" and frame.get("code") not in EXPECTED_LIVE_ERRORS:
                    self.recorder.error(self.channel, json.dumps(frame))
        except ConnectionClosed:
            pass

    async def send(self, **frame: Any) -> None:
        await self.ws.send(json.dumps(frame))

    async def infill(self, session: str, request_id: Any, at: dict, max_tokens: int = 16) -> asyncio.Future:
        future = asyncio.get_running_loop().create_future()
        self.finished[request_id] = future
        self.sent[request_id] = time.perf_counter()
        await self.send(type="infill", session=session, id=request_id, range={"start": at, "end": at},
                        settings={"max_tokens": max_tokens})
        self.recorder.count(f"{self.channel} requests")
        return future


async def open_live(url: str, token: str, recorder: Recorder, channel: str, session: str, text: str,
                    **connect_args: Any) -> LiveSession:
    ws = await connect(url, **connect_args)
    hello = json.loads(await asyncio.wait_for(ws.recv(), 60))
    assert hello["type"] == "hello", hello
    live = LiveSession(ws, recorder, channel)
    await live.send(type="open", session=session, token=token, protocol=1, text=text, language="python")
    return live


async def live_typist(url: str, token: str, files: list[Path], recorder: Recorder, until: float,
                      interval_s: float, seed: int) -> None:
    """Type into a live session: an edit and an infill per key; now and then a cancel."""
    rng = random.Random(seed)
    source = regions(files, seed)
    text, start, end = next(source)
    document = text[:start] + text[end:]
    live = await open_live(url, token, recorder, "live", "typing", document)
    ids = itertools.count(1)
    try:
        while recorder.now() < until:
            text, start, end = next(source)
            document = text[:start] + text[end:]
            await live.send(type="edit", session="typing", edits=[{"text": document}])
            for cursor in range(start, end):
                if recorder.now() >= until:
                    break
                at = position(document, cursor)
                document = document[:cursor] + text[cursor] + document[cursor:]
                await live.send(type="edit", session="typing", edits=[{"range": {"start": at, "end": at},
                                                                       "text": text[cursor]}])
                await live.infill("typing", next(ids), position(document, cursor + 1))
                if rng.random() < 0.05:
                    await live.send(type="cancel", session="typing")
                await asyncio.sleep(typing_pause(rng, interval_s, text[cursor]))
    finally:
        await live.ws.close()
        await asyncio.gather(live.reader, return_exceptions=True)


async def reconnector(url: str, token: str, recorder: Recorder, until: float, pause_s: float, seed: int) -> None:
    """Connect, ask once, and leave: politely or by dropping the TCP connection."""
    rng = random.Random(seed)
    round_number = 0
    while recorder.now() < until:
        round_number += 1
        try:
            live = await open_live(url, token, recorder, "reconnect", "r", "def f(x):\n    return \n")
            done = await live.infill("r", round_number, {"line": 1, "character": 11}, max_tokens=8)
            await asyncio.wait_for(done, max(30.0, until - recorder.now() + 10))
            if rng.random() < 0.5:
                live.ws.transport.abort()  # vanish without a close frame
                recorder.count("reconnect dropped")
            else:
                await live.ws.close()
            await asyncio.gather(live.reader, return_exceptions=True)
            recorder.count("reconnects")
        except (OSError, InvalidHandshake, ConnectionClosed, asyncio.TimeoutError) as error:
            recorder.error("reconnect", f"{type(error).__name__}: {error}")
        await asyncio.sleep(pause_s)


async def slow_reader(url: str, token: str, recorder: Recorder, server_log: Path, deadline_s: float = 90) -> None:
    """A client that stops reading: it floods requests from a socket with a tiny receive
    buffer and reads nothing until the server says (in its log) that it is closing it;
    then it reads, and must find close code 4008."""
    host, port = url.split("//")[1].split("/")[0].rsplit(":", 1)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, (host, int(port)))
    # No keepalive pings from this side: a client that reads nothing would time its own pings out.
    ws = await connect(url, sock=sock, max_queue=1, close_timeout=2, ping_interval=None)
    await asyncio.wait_for(ws.recv(), 60)  # hello
    log_lines_before = _closing_lines(server_log)
    started = time.monotonic()
    sessions = [f"slow{i}" for i in range(8)]
    request = 0
    try:
        for session in sessions:
            await ws.send(json.dumps({"type": "open", "session": session, "token": token, "protocol": 1,
                                      "text": "def f(x):\n    \n" * 40, "language": "python"}))
        while time.monotonic() - started < deadline_s and _closing_lines(server_log) == log_lines_before:
            request += 1
            session = sessions[request % len(sessions)]
            # Long canvases make big step frames: the socket's buffers fill in seconds, not minutes.
            await ws.send(json.dumps({"type": "infill", "session": session, "id": request, "settings": {
                "max_tokens": 256}, "range": {"start": {"line": 1, "character": 4}, "end": {"line": 1, "character": 4}}}))
            await asyncio.sleep(1 / 30)  # under the rate limit: the backlog, not the rate, must end it
    except ConnectionClosed:
        pass  # closed by the server while we flooded; its close frame is read below
    recorder.count("slow requests", request)
    code = None
    try:
        while True:
            await asyncio.wait_for(ws.recv(), 30)
    except ConnectionClosed as closed:
        code = closed.rcvd.code if closed.rcvd is not None else None
    except asyncio.TimeoutError:
        pass
    recorder.count("slow clients")
    if code == 4008:
        recorder.count("slow clients closed 4008")
    else:
        recorder.error("slow", f"a client that stopped reading was not closed with 4008 (got {code}) after "
                               f"{time.monotonic() - started:.0f} s")


def _closing_lines(server_log: Path) -> int:
    try:
        return server_log.read_text(errors="replace").count("stopped reading")
    except OSError:
        return 0
