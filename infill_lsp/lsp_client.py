"""A small synchronous LSP client over a subprocess's stdio.

Used by the typing benchmark and the end-to-end tests: it can also send raw bytes (for
malformed-message tests) and records the time each message arrives.
"""
from __future__ import annotations

import itertools
import json
import subprocess
import threading
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Callable, Sequence


def read_message(stream: Any) -> Any:
    """The next message the server wrote to `stream` (a blocking binary reader), or None
    at the end of its output. Headers other than Content-Length are skipped."""
    while True:
        length = None
        while True:
            line = stream.readline()
            if not line:
                return None
            if line in (b"\r\n", b"\n"):
                break
            name, _, value = line.decode("ascii", "replace").partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip())
        if length is not None:
            return json.loads(stream.read(length))


class LspResponseError(Exception):
    def __init__(self, error: dict) -> None:
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.code = error.get("code")
        self.error = error


class LspClient:
    def __init__(
        self,
        argv: Sequence[str],
        *,
        configuration: Any = None,
        stderr_path: Path | None = None,
        cwd: str | None = None,
        env: dict | None = None,
    ) -> None:
        self._stderr = open(stderr_path, "wb") if stderr_path else subprocess.DEVNULL
        self.process = subprocess.Popen(
            list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, cwd=cwd, env=env
        )
        self.configuration = configuration  # answer to workspace/configuration
        self._ids = itertools.count(1)
        self._pending: dict[Any, Future] = {}
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self.notifications: list[tuple[float, dict]] = []
        self.server_requests: list[dict] = []
        self.reply_ids: set = set()  # ids of every response seen (also to raw-sent requests)
        self.replies: list[dict] = []  # every response, in arrival order
        self.batch_answers: list[list] = []  # answers that came as a JSON array
        self._arrived = threading.Condition()
        self.responders: dict[str, Callable[[Any], Any]] = {
            "workspace/configuration": lambda params: [self.configuration for _ in params.get("items", [])],
        }
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()

    # -- sending --------------------------------------------------------------------------
    def send_bytes(self, data: bytes) -> None:
        with self._write_lock:
            assert self.process.stdin is not None
            self.process.stdin.write(data)
            self.process.stdin.flush()

    def send(self, message: dict) -> None:
        body = json.dumps(message).encode("utf-8")
        self.send_bytes(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def notify(self, method: str, params: Any = None) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request_async(self, method: str, params: Any = None) -> tuple[int, Future]:
        message_id = next(self._ids)
        future: Future = Future()
        with self._lock:
            self._pending[message_id] = future
        self.send({"jsonrpc": "2.0", "id": message_id, "method": method, "params": params})
        return message_id, future

    def request(self, method: str, params: Any = None, timeout: float = 60) -> Any:
        _, future = self.request_async(method, params)
        return future.result(timeout=timeout)

    def cancel(self, message_id: int) -> None:
        self.notify("$/cancelRequest", {"id": message_id})

    # -- lifecycle ------------------------------------------------------------------------
    def initialize(self, capabilities: dict | None = None, initialization_options: Any = None) -> dict:
        result = self.request(
            "initialize",
            {
                "processId": None,
                "rootUri": None,
                "capabilities": capabilities if capabilities is not None else {},
                "initializationOptions": initialization_options,
            },
        )
        self.notify("initialized", {})
        return result

    def open(self, uri: str, text: str, language_id: str = "python", version: int = 1) -> None:
        self.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": language_id, "version": version, "text": text}},
        )

    def close(self, timeout: float = 10) -> int:
        try:
            if self.process.poll() is None:
                self.request("shutdown", None, timeout=timeout)
                self.notify("exit", None)
            return self.process.wait(timeout=timeout)
        except Exception:
            self.process.kill()
            return self.process.wait(timeout=timeout)
        finally:
            if self._stderr is not subprocess.DEVNULL:
                self._stderr.close()

    # -- receiving ------------------------------------------------------------------------
    def wait_for_notification(self, predicate: Callable[[dict], bool], timeout: float = 60) -> dict:
        deadline = time.monotonic() + timeout
        seen = 0
        with self._arrived:
            while True:
                for _, message in self.notifications[seen:]:
                    if predicate(message):
                        return message
                seen = len(self.notifications)
                left = deadline - time.monotonic()
                if left <= 0 or self.process.poll() is not None:
                    raise TimeoutError("no matching notification arrived")
                self._arrived.wait(left)

    def messages(self, method: str) -> list[dict]:
        return [message for _, message in self.notifications if message.get("method") == method]

    def _read_loop(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        while True:
            message = read_message(stream)
            if message is None:
                self._fail_pending()
                return
            if isinstance(message, list):  # the answer to a batch
                self.batch_answers.append(message)
                for item in message:
                    self._dispatch(item)
            else:
                self._dispatch(message)

    def _dispatch(self, message: dict) -> None:
        if "method" in message and "id" in message:  # a request from the server
            self.server_requests.append(message)
            responder = self.responders.get(message["method"], lambda params: None)
            self.send({"jsonrpc": "2.0", "id": message["id"], "result": responder(message.get("params"))})
            return
        if "method" in message:
            with self._arrived:
                self.notifications.append((time.perf_counter(), message))
                self._arrived.notify_all()
            return
        with self._lock:
            self.reply_ids.add(message.get("id"))
            self.replies.append(message)
            future = self._pending.pop(message.get("id"), None)
        if future is None:
            return
        if "error" in message:
            future.set_exception(LspResponseError(message["error"]))
        else:
            future.set_result(message.get("result"))

    def _fail_pending(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(ConnectionError("the server closed its output"))
        with self._arrived:
            self._arrived.notify_all()
