"""What every request to one engine shares: the token, the Origin policy, the limits, the
engine worker (fair queue and thread), and the counters `/health` reports.

One Hub per engine: `infill serve` has one (in `LiveServer`); under Ray Serve every
replica builds its own (infill_lsp/live/cluster.py), with the same token and policy.
Model work of live sessions and HTTP completions alike runs on the hub's engine worker
(engine/worker.py), which takes turns across connections and requests.
"""
from __future__ import annotations

import hmac
import logging
import itertools
import os
import socket
import threading
from collections import Counter
from typing import Any, Optional

from engine.model_dir_watch import ModelDirWatch
from engine.worker import EngineWorker, LoopInbox

from .channel import Channel
from .limits import Limits
from .pages import OriginPolicy


log = logging.getLogger("infill.live")


def default_replica_id() -> str:
    return f"{socket.gethostname()}/{os.getpid()}"


class Hub:
    def __init__(self, engine: Any, *, token: str, limits: Limits = Limits(),
                 origins: OriginPolicy = OriginPolicy(frozenset()), replica_id: Optional[str] = None,
                 max_batch: Optional[int] = None, token_generated: bool = True) -> None:
        self.engine = engine
        self.token = token
        self.token_generated = token_generated  # made at start and printed, or given with --token
        self.limits = limits
        self.origins = origins
        self.model_name = str(getattr(engine, "model_name", "unknown"))
        self.replica_id = replica_id or default_replica_id()
        # Every model call (live sessions and HTTP), batched across requests (max_batch: None =
        # the worker's default, 1 = one at a time); engine events reach the loop once per pass.
        self.inbox = LoopInbox()
        self.worker = EngineWorker(engine, name="infill-live-engine", max_batch=max_batch, after_pass=self.inbox.wake)
        self.sessions_open = 0
        self.connections = 0
        self.channels: set[Channel] = set()  # open live sockets, closed with 1001 at shutdown
        self.http_in_flight = 0
        self.live_in_flight = 0  # live infill jobs submitted and not yet done (ended on the worker thread)
        self._live_lock = threading.Lock()
        self.counters: Counter[str] = Counter()  # http_* figures, for /health
        self._http_ids = itertools.count(1)
        model_dir = getattr(engine, "model_dir", None)
        self.dir_watch = ModelDirWatch(model_dir) if model_dir is not None else None
        self.model_dir_notice: Optional[str] = None  # the last change of the model directory, for /health

    # -- what a live connection needs (connection.Hub) ---------------------------------

    def token_ok(self, token: Optional[str]) -> bool:
        # Constant time (hmac.compare_digest); surrogatepass: a JSON "\udc80" in a guess
        # must be refused like any wrong token, not raise.
        if not isinstance(token, str):
            return False
        return hmac.compare_digest(token.encode("utf-8", "surrogatepass"), self.token.encode("utf-8", "surrogatepass"))

    def token_refusal(self, token: Optional[str], noun: str = "token") -> str:
        """Why a token is refused and where the right one is: the start banner printed a
        generated token, but with --token it printed none (the user chose it)."""
        reason = f"{'missing' if not token else 'wrong'} {noun}"
        if self.token_generated:
            return f"{reason}: use the token `infill serve` printed at start (its `token:` line)"
        return f"{reason}: use the token `infill serve` was started with (its --token option; it prints none)"

    def check_model_dir(self) -> None:
        """Called with every model request (a few stat calls at most every 5 s): a model
        directory that disappeared or was replaced is logged once per change and shown by
        /health; the model loaded from it keeps serving."""
        notice = self.dir_watch.check() if self.dir_watch is not None else None
        if notice is not None:
            log.warning("%s", notice)
            self.model_dir_notice = notice

    def reserve_session(self) -> bool:
        if self.sessions_open >= self.limits.max_sessions_total:
            return False
        self.sessions_open += 1
        return True

    def release_session(self) -> None:
        self.sessions_open -= 1

    def start_live_request(self, replacing: bool) -> bool:
        """Room for one more live infill? Refused (the caller answers `server_busy`) once
        `max_live_requests` are queued or running, unless it replaces its session's
        running request, which it cancels: the queue stays bounded either way."""
        with self._live_lock:
            if self.live_in_flight >= self.limits.max_live_requests and not replacing:
                return False
            self.live_in_flight += 1
            return True

    def end_live_request(self) -> None:
        """A live infill job ended (any thread: the worker calls its on_done)."""
        with self._live_lock:
            self.live_in_flight -= 1

    # -- HTTP requests --------------------------------------------------------------------

    def next_http_id(self) -> int:
        return next(self._http_ids)

    def health(self, detailed: bool) -> dict[str, Any]:
        """`/health`: "ok" for anyone; model, replica, queue and counters for token holders."""
        body: dict[str, Any] = {"status": "ok"}
        if detailed:
            body.update({"model": self.model_name, "replica": self.replica_id, "pending": self.worker.pending(),
                         "http_in_flight": self.http_in_flight,
                         "live_in_flight": self.live_in_flight, "live_connections": self.connections,
                         "completed": self.worker.completed, "counters": dict(self.counters)})
            if self.model_dir_notice is not None:
                body["model_dir"] = self.model_dir_notice
        return body

    # -- lifecycle ------------------------------------------------------------------------

    def stop_engine(self, timeout: float = 10.0) -> None:
        """Cancel what is queued and running and let the engine thread finish (blocking)."""
        self.worker.close()  # pending jobs end cancelled, a running one at its next pass
        self.worker.join(timeout)
