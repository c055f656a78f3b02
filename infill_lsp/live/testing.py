"""Run a LiveServer on its own event loop in a background thread (tests, the load test),
or `infill serve` as a child process.

Blocking test code (Playwright's sync API, plain pytest functions) can then talk to it
like any client would, over loopback.
"""
from __future__ import annotations

import asyncio
import re
import signal
import subprocess
import sys
import threading
from typing import Any, Optional

from .server import LiveConfig, LiveServer


class ServerThread:
    def __init__(self, engine: Any, config: LiveConfig = LiveConfig(port=0), *,
                 error_type: Optional[type[BaseException]] = None) -> None:
        self._engine, self._config, self._error_type = engine, config, error_type
        self._ready = threading.Event()
        self._failure: Optional[BaseException] = None
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._stop: Optional[asyncio.Event] = None
        self.server: Optional[LiveServer] = None
        self._thread = threading.Thread(target=self._run, name="infill-live-server", daemon=True)

    def __enter__(self) -> LiveServer:
        self._thread.start()
        self._ready.wait(30)
        if self._failure is not None:
            raise RuntimeError(f"live server failed to start: {self._failure}") from self._failure
        assert self.server is not None
        return self.server

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)

    def _run(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        try:
            self.server = LiveServer(self._engine, self._config, error_type=self._error_type)
            await self.server.start()
        except BaseException as exc:  # report to the waiting test instead of dying silently
            self._failure = exc
            self._ready.set()
            return
        self._ready.set()
        await self._stop.wait()
        await self.server.stop()


class ServeProcess:
    """`infill serve` as a child process on a free loopback port (tests of clients that
    talk to a real server: the editors with --remote). Context manager; `.url`, `.token`."""

    def __init__(self, model_dir: str, token: str, *extra: str, start_timeout: float = 120.0) -> None:
        self.command = [sys.executable, "-m", "infill_lsp.live.server", "--host", "127.0.0.1", "--port", "0",
                        f"--token={token}", "--model", model_dir, *extra]
        self.token = token
        self.start_timeout = start_timeout
        self.url = ""
        self.process: Optional[subprocess.Popen[str]] = None

    def __enter__(self) -> "ServeProcess":
        self.process = subprocess.Popen(self.command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                        start_new_session=True)
        found: list[str] = []

        def read() -> None:  # readline blocks: a thread keeps the deadline below honest
            assert self.process is not None and self.process.stdout is not None
            for line in self.process.stdout:
                match = re.search(r"api:\s+(http://\S+)/v1", line)
                if match:
                    found.append(match.group(1))
                    return

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(self.start_timeout)
        if not found:
            self.__exit__()
            raise RuntimeError(f"`infill serve` did not start within {self.start_timeout:g} s")
        self.url = found[0]
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
