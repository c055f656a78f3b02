"""Run a LiveServer on its own event loop in a background thread (tests, the load test).

Blocking test code (Playwright's sync API, plain pytest functions) can then talk to it
like any client would, over loopback.
"""
from __future__ import annotations

import asyncio
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
