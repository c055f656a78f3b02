"""Fair queueing of infill jobs in front of a one-request-at-a-time engine.

Each session holds at most one pending job: a newer request replaces the queued one in
place (so a typing user keeps their turn but never piles up stale work). Turns go round
robin first across connections, then across the sessions of a connection, so a client
that opens many sessions cannot crowd out a client with one.
"""
from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Optional, Union

# (kind, payload) posted from the worker thread; kind is "step", "result" or "error".
Deliver = Callable[[str, dict[str, Any]], None]


@dataclass(eq=False)
class Job:
    connection: Hashable
    session: str
    request_id: Union[str, int]
    prefix: str
    suffix: str
    language: Optional[str]
    settings: dict[str, Any]
    deliver: Deliver  # called in the worker thread; must hand off to the event loop, never block
    received_at: float = field(default_factory=time.monotonic)
    started_at: Optional[float] = None
    cancel: threading.Event = field(default_factory=threading.Event)


class FairScheduler:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._pending: "OrderedDict[Hashable, OrderedDict[str, Job]]" = OrderedDict()
        self._closed = False

    def submit(self, job: Job) -> Optional[Job]:
        """Queue `job`; returns the older pending job of the same session that it replaced."""
        with self._cond:
            if self._closed:
                raise RuntimeError("scheduler is closed")
            sessions = self._pending.setdefault(job.connection, OrderedDict())
            replaced = sessions.get(job.session)
            sessions[job.session] = job  # an existing key keeps its place in the order
            self._cond.notify()
            return replaced

    def withdraw(self, connection: Hashable, session: str) -> Optional[Job]:
        """Remove and return the session's pending job, if it has not started yet."""
        with self._cond:
            sessions = self._pending.get(connection)
            if not sessions or session not in sessions:
                return None
            job = sessions.pop(session)
            if not sessions:
                del self._pending[connection]
            return job

    @property
    def closed(self) -> bool:
        with self._cond:
            return self._closed

    def pending(self) -> int:
        with self._cond:
            return sum(len(sessions) for sessions in self._pending.values())

    def next(self, timeout: Optional[float] = None) -> Optional[Job]:
        """The next job in round-robin order; None when closed or after `timeout` seconds idle."""
        with self._cond:
            deadline = None if timeout is None else time.monotonic() + timeout
            while not self._pending:
                if self._closed:
                    return None
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return None
                self._cond.wait(remaining)
            connection, sessions = self._pending.popitem(last=False)
            _, job = sessions.popitem(last=False)
            if sessions:
                self._pending[connection] = sessions  # back of the line: the others get a turn first
            return job

    def close(self) -> list[Job]:
        """Stop handing out jobs; returns the ones still pending so callers can cancel them."""
        with self._cond:
            self._closed = True
            left = [job for sessions in self._pending.values() for job in sessions.values()]
            self._pending.clear()
            self._cond.notify_all()
            return left
