"""The server's read loops (stdio and TCP), in place of pygls' own.

pygls reads a line at a time and trusts the header it finds (see infill_lsp/framing.py
for what that costs); here input is read in chunks, cut into messages by `FrameDecoder`,
and each body goes to `InfillProtocol.receive`. Nothing a client sends ends the loop:
only the end of input, `exit`, or the server shutting down.
"""
from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
from typing import IO, Awaitable, Callable, Optional

from .framing import Frame, FrameDecoder

log = logging.getLogger(__name__)

READ_CHUNK = 64 * 1024


async def pump(read: Callable[[], Awaitable[bytes]], protocol, stop: threading.Event) -> Optional[int]:
    """Read until the input ends or `exit` arrives; returns exit's status code, if any."""
    decoder = FrameDecoder()
    while not stop.is_set():
        data = await read()
        events = decoder.feed(data) if data else decoder.finish()
        for event in events:
            try:
                if isinstance(event, Frame):
                    protocol.receive(event.body)
                else:
                    protocol.framing_error(event.problem)
            except SystemExit as exiting:  # the `exit` notification
                return exiting.code if isinstance(exiting.code, int) else 0
            except Exception:  # a bug of ours: report it, keep reading
                log.exception("internal error while handling a message")
            # Let the tasks this message started take their first step before the next
            # message (a cancel right behind its request then finds it running).
            await asyncio.sleep(0)
        if not data:
            return None
    return None


class _StdinChunks:
    """Chunks of stdin, read on a daemon thread of its own: a pipe read blocks, and a
    thread of an executor would be joined at exit while still waiting for input. One
    chunk is read per call, so a fast client cannot fill memory ahead of the server."""

    def __init__(self, stream: IO[bytes]) -> None:
        read1 = getattr(stream, "read1", None)
        self._read: Callable[[int], bytes] = read1 if read1 is not None else (lambda n: os.read(stream.fileno(), n))
        self._wanted = threading.Semaphore(0)
        self._waiting: tuple[asyncio.AbstractEventLoop, asyncio.Future[bytes]] | None = None
        self._thread: threading.Thread | None = None

    async def __call__(self) -> bytes:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[bytes] = loop.create_future()
        self._waiting = (loop, future)
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="infill-stdin", daemon=True)
            self._thread.start()
        self._wanted.release()
        return await future

    def _run(self) -> None:
        while True:
            self._wanted.acquire()
            try:
                data = self._read(READ_CHUNK)
            except (OSError, ValueError):  # closed underneath us: the same as the end of input
                data = b""
            assert self._waiting is not None
            loop, future = self._waiting
            try:
                loop.call_soon_threadsafe(_settle, future, data)
            except RuntimeError:  # the loop is gone: the server is exiting
                return
            if not data:
                return


def _settle(future: "asyncio.Future[bytes]", data: bytes) -> None:
    if not future.done():
        future.set_result(data)


class StdoutWriter:
    """pygls' writer interface over a binary stream."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream

    def close(self) -> None:
        self._stream.close()

    def write(self, data: bytes) -> None:
        self._stream.write(data)
        self._stream.flush()


def serve_stdio(server, stdin: IO[bytes] | None = None, stdout: IO[bytes] | None = None) -> int:
    """Serve one client over stdin/stdout; returns the process exit status LSP asks for
    (0 after shutdown + exit, 1 for exit without shutdown or input that just ended)."""
    server._stop_event = stop = threading.Event()
    server.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
    reader = _StdinChunks(stdin or sys.stdin.buffer)
    try:
        code = asyncio.run(pump(reader, server.protocol, stop))
    except BrokenPipeError:
        log.error("the client closed its end of the connection; shutting down")
        code = None
    except KeyboardInterrupt:
        code = None
    finally:
        server.shutdown()
    return code if code is not None else (0 if server.protocol.lifecycle.shutdown_received else 1)


def serve_tcp(server, host: str, port: int) -> int:
    """Serve one client at a time on host:port (loopback by default); as pygls does, the
    server stops when its client disconnects."""
    server._stop_event = stop = threading.Event()
    outcome: dict[str, Optional[int]] = {"code": None}

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        server.protocol.set_writer(writer)
        try:
            outcome["code"] = await pump(lambda: reader.read(READ_CHUNK), server.protocol, stop)
        except (ConnectionError, OSError) as error:
            log.warning("connection lost: %s", error)
        finally:
            writer.close()
            tcp.close()

    async def main() -> None:
        nonlocal tcp
        tcp = await asyncio.start_server(connection, host, port)
        async with tcp:
            try:
                await tcp.serve_forever()
            except asyncio.CancelledError:
                pass

    tcp: asyncio.Server
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
    code = outcome["code"]
    return code if code is not None else (0 if server.protocol.lifecycle.shutdown_received else 1)
