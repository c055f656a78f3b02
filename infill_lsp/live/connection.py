"""One WebSocket connection: reads client messages, keeps its sessions, routes engine frames.

Everything here runs on the event loop. The only cross-thread entries are the job's
engine events, which the request path (infill_lsp/request_path.py) hands from the engine
worker's thread to the loop through the hub's LoopInbox (one wakeup per pass) and
delivers to `_on_engine`. Supersede and cancel go through its lane: group = this
connection, key = the session.
"""
from __future__ import annotations

import asyncio
import json
import logging
from typing import Any, Optional, Protocol, Union

from engine.worker import EngineWorker, InfillCall, LoopInbox, Outcome

from ..request_path import ErrorCode, InFlight, Lane, user_error

from . import protocol as p
from .channel import Channel, ChannelClosed
from .document import Document
from .frames import result_payload, step_payload
from .limits import Limits, TokenBucket
from .outbox import BacklogOverflow, Outbox
from .session import ActiveRequest, Session

log = logging.getLogger("infill.live")

_CLOSE_MARK = "__close__"  # an outbox entry that makes the sender close after what precedes it


class Hub(Protocol):
    """What a connection needs from the server that owns it."""

    limits: Limits
    worker: EngineWorker
    inbox: LoopInbox  # engine events to the event loop, one wakeup per pass
    model_name: str

    def token_ok(self, token: Optional[str]) -> bool: ...
    def token_refusal(self, token: Optional[str], noun: str = ...) -> str: ...
    def reserve_session(self) -> bool: ...
    def release_session(self) -> None: ...
    def start_live_request(self, replacing: bool) -> bool: ...
    def end_live_request(self) -> None: ...
    def check_model_dir(self) -> None: ...


class LiveConnection:
    def __init__(self, hub: Hub, ws: Channel) -> None:
        self.hub = hub
        self.ws = ws
        self.limits = hub.limits
        self.sessions: dict[str, Session] = {}
        self.outbox = Outbox(self.limits.max_backlog_frames)
        self.bucket = TokenBucket(self.limits.messages_per_second, self.limits.message_burst)
        self.strikes = 0
        self.closing = False
        self._close_task: Optional[asyncio.Task[None]] = None  # held so it is not garbage-collected
        self.loop = asyncio.get_running_loop()
        self.hub.inbox.attach(self.loop)  # the hub's engine events come to this loop
        self.lane = Lane(hub.worker, id(self), hub.inbox.post)  # this connection's turn on the worker

    async def serve(self) -> None:
        sender = asyncio.create_task(self._send_loop())
        self.send({"type": "hello", "protocol": p.PROTOCOL_VERSION, "server": "infill-live",
                   "model": self.hub.model_name, "limits": self.limits.public()})
        try:
            async for raw in self.ws:
                if self.closing:
                    # Keep draining (and ignoring) what is in flight: the client's close frame
                    # sits behind it, and the closing handshake cannot finish until it is read.
                    continue
                self._handle(raw)
        except ChannelClosed:
            pass
        finally:
            self._teardown()
            if self.closing:
                # Let the sender deliver the error frame and close with the documented code.
                try:
                    await asyncio.wait_for(sender, timeout=5.0)
                except (asyncio.TimeoutError, ChannelClosed):
                    pass
            sender.cancel()

    # -- outgoing -------------------------------------------------------------------------

    def send(self, frame: dict[str, Any]) -> None:
        if self.closing:
            return
        try:
            self.outbox.put(frame)
        except BacklogOverflow as exc:
            log.warning("closing a live connection that stopped reading: %s", exc)
            self.closing = True
            self._close_task = self.loop.create_task(
                self._close_in_time(p.CLOSE_TOO_SLOW, "client too slow: frame backlog overflowed"))

    def close_after_flush(self, code: int, reason: str) -> None:
        if self.closing:
            return
        # Close reasons must fit a control frame (123 bytes); error messages are ASCII.
        self.outbox.put_control({"type": _CLOSE_MARK, "code": code, "reason": reason[:120]})
        self.closing = True

    async def _send_loop(self) -> None:
        try:
            while True:
                frame = await self.outbox.get()
                if frame["type"] == _CLOSE_MARK:
                    await self._close_in_time(frame["code"], frame["reason"])
                    return
                try:
                    # A client that reads nothing stalls this send for good: give up after a while.
                    await asyncio.wait_for(self.ws.send(_dumps(frame)), self.limits.send_stall_seconds)
                except asyncio.TimeoutError:
                    log.warning("closing a live connection that stopped reading: a frame waited %g s to be sent",
                                self.limits.send_stall_seconds)
                    self.closing = True
                    await self._close_in_time(p.CLOSE_TOO_SLOW, "client too slow: nothing read for "
                                              f"{self.limits.send_stall_seconds:g} s")
                    return
        except ChannelClosed:
            pass

    async def _close_in_time(self, code: int, reason: str) -> None:
        """Close with `code`. The close frame waits behind unread data: a client that still
        reads nothing is dropped by the server's keepalive (infill_lsp/live/ws_protocol.py),
        so this gives up waiting after a while rather than hold the connection's task."""
        try:
            await asyncio.wait_for(self.ws.close(code, reason), self.limits.send_stall_seconds)
        except (asyncio.TimeoutError, ChannelClosed):
            pass

    # -- incoming -------------------------------------------------------------------------

    def _handle(self, raw: Union[str, bytes]) -> None:
        if not self.bucket.take():
            self.strikes += 1
            if self.strikes >= self.limits.rate_strikes_before_close:
                self.send(p.error_frame(p.E_RATE_LIMITED, "rate limit exceeded repeatedly; closing"))
                self.close_after_flush(p.CLOSE_RATE_LIMIT, "rate limit exceeded repeatedly")
            else:
                self.send(p.error_frame(p.E_RATE_LIMITED, f"more than {self.limits.messages_per_second:g} messages "
                                        f"per second; retry in {self.bucket.retry_after():.3f} s"))
            return
        self.strikes = 0
        session_id: Optional[str] = None
        try:
            message = p.parse_message(raw, max_request_tokens=self.limits.max_request_tokens)
            session_id = message.session
            if isinstance(message, p.OpenMessage):
                self._open(message)
            elif isinstance(message, p.EditMessage):
                self._edit(message)
            elif isinstance(message, p.InfillMessage):
                self._infill(message)
            elif isinstance(message, p.CancelMessage):
                self._cancel_active(self._session(message.session), "cancel")
            elif isinstance(message, p.CloseMessage):
                self._close_session(message.session)
        except p.ProtocolError as err:
            if err.session is None:
                err.session = session_id
            self.send(err.frame())
            if err.fatal:
                self.close_after_flush(err.close_code, err.message)
        except Exception:
            log.exception("live message handling failed")
            self.send(p.error_frame(p.E_INTERNAL, "the server failed on this message; see its log",
                                    session=session_id))

    def _session(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise p.ProtocolError(p.E_UNKNOWN_SESSION, f"no open session {session_id!r} on this connection",
                                  session=session_id)
        return session

    def _open(self, message: p.OpenMessage) -> None:
        if not self.hub.token_ok(message.token):
            raise p.ProtocolError(p.E_UNAUTHORIZED, self.hub.token_refusal(message.token),
                                  session=message.session, fatal=True, close_code=p.CLOSE_UNAUTHORIZED)
        if message.session in self.sessions:
            raise p.ProtocolError(p.E_SESSION_EXISTS, f"session {message.session!r} is already open")
        if len(self.sessions) >= self.limits.max_sessions_per_connection:
            raise p.ProtocolError(p.E_TOO_MANY_SESSIONS, f"at most {self.limits.max_sessions_per_connection} "
                                  "sessions per connection; close one first")
        document = Document(message.text, max_chars=self.limits.max_document_chars)
        if not self.hub.reserve_session():
            raise p.ProtocolError(p.E_SERVER_FULL, "the server has as many sessions as it allows; try later")
        self.sessions[message.session] = Session(message.session, document, message.language, message.settings)
        self.send({"type": "opened", "session": message.session, "version": document.version,
                   "language": message.language})

    def _edit(self, message: p.EditMessage) -> None:
        session = self._session(message.session)
        version = session.document.apply(message.edits)  # all or nothing: a bad edit changes nothing
        self._cancel_active(session, "edit")
        self.send({"type": "edited", "session": session.id, "version": version})

    def _infill(self, message: p.InfillMessage) -> None:
        session = self._session(message.session)
        try:
            start, end = session.document.span(message.range)
        except p.ProtocolError as err:
            err.request_id = message.request_id
            raise
        # Load shedding: past max_live_requests the request is refused now, with nothing
        # changed, rather than queued behind a backlog that only grows.
        if not self.hub.start_live_request(replacing=session.active is not None):
            raise p.ProtocolError(p.E_BUSY, f"the server is busy: {self.limits.max_live_requests} requests are queued "
                                  "or running, the most it takes; retry shortly", session=session.id,
                                  request_id=message.request_id)
        self.hub.check_model_dir()
        self._cancel_active(session, "superseded")
        # The whole text around the range: the engine decides the window (engine/window.py).
        text = session.document.text
        call = InfillCall(text[:start], text[end:], session.language, {**session.settings, **message.settings})
        try:
            flight = self.lane.submit(session.id, call, steps=True, on_event=self._on_engine,
                                      on_finished=lambda outcome: self.hub.end_live_request())
        except RuntimeError:  # the worker is closed: the server is shutting down
            self.hub.end_live_request()
            raise
        session.active = ActiveRequest(flight, message.request_id, message.range, session.document.version)
        self.send({"type": "queued", "session": session.id, "id": message.request_id,
                   "pending": self.hub.worker.pending()})

    def _cancel_active(self, session: Session, reason: str) -> None:
        active = session.active
        if active is None:
            return
        session.active = None
        self.lane.cancel(session.id)
        self.outbox.drop_request(session.id, active.request_id)
        self.send({"type": "cancelled", "session": session.id, "id": active.request_id, "reason": reason})

    def _close_session(self, session_id: str) -> None:
        session = self._session(session_id)
        self._cancel_active(session, "close")
        del self.sessions[session_id]
        self.lane.forget(session_id)  # its cached context is of no more use
        self.hub.release_session()
        self.send({"type": "closed", "session": session_id})

    def _teardown(self) -> None:
        for session in self.sessions.values():
            if session.active is not None:
                self.lane.cancel(session.id)
                session.active = None
            self.lane.forget(session.id)
            self.hub.release_session()
        self.sessions.clear()

    # -- engine events, on the loop ---------------------------------------------------------------

    def _on_engine(self, flight: InFlight, kind: str, payload: Any) -> None:
        session = self.sessions.get(flight.job.key)  # type: ignore[arg-type]
        if session is None or session.active is None or session.active.flight is not flight or flight.cancelled:
            return  # superseded, cancelled or closed: its terminal frame was already sent
        active, job = session.active, flight.job
        if kind == "step":
            self.send({"type": "step", "session": session.id, "id": active.request_id, **step_payload(payload, job)})
            return
        session.active = None
        outcome: Outcome = payload
        failure = user_error(outcome)
        if failure is None:
            self.send({"type": "result", "session": session.id, "id": active.request_id, "version": active.version,
                       "range": active.range.to_json(), **result_payload(outcome.result, job)})
        else:
            self.send(p.error_frame(_ERROR_CODES.get(failure.code, p.E_INTERNAL), failure.message, session=session.id,
                                    request_id=active.request_id))


# The request path's errors as live protocol codes; the rest (a bug, a run without a result) is internal.
_ERROR_CODES = {ErrorCode.REFUSED: p.E_ENGINE, ErrorCode.MODEL_FAILED: p.E_MODEL_FAILED}


def _dumps(frame: dict[str, Any]) -> str:
    return json.dumps(frame, ensure_ascii=False, separators=(",", ":"))
