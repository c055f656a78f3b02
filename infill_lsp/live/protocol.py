"""The live-session wire protocol, version 1: parsing client messages and naming errors.

Pure functions and dataclasses, no I/O, so the rules can be tested without a socket.
docs/live-protocol.md is the reference for clients; keep the two in step.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Optional, Union

from engine.language import UnknownLanguage, check_language
from engine.types import MAX_TOKENS, SamplerSettings, SettingsError, brief, check_knobs, client_knobs

PROTOCOL_VERSION = 1
WEBSOCKET_PATH = "/ws"

# Close codes (RFC 6455 private range 4000-4999 for ours, standard ones where they fit).
CLOSE_NORMAL = 1000
CLOSE_GOING_AWAY = 1001  # the server is shutting down
CLOSE_TOO_BIG = 1009  # a message over the size limit (sent by the websockets library itself)
CLOSE_INTERNAL = 1011
CLOSE_UNAUTHORIZED = 4001  # an `open` without the right token
CLOSE_TOO_SLOW = 4008  # the client did not read its frames and the backlog overflowed
CLOSE_RATE_LIMIT = 4029  # kept sending far past the rate limit after being told

# Error codes carried by `error` frames.
E_BAD_JSON = "bad_json"
E_BAD_MESSAGE = "bad_message"
E_UNKNOWN_TYPE = "unknown_type"
E_UNSUPPORTED_PROTOCOL = "unsupported_protocol"
E_UNAUTHORIZED = "unauthorized"
E_UNKNOWN_SESSION = "unknown_session"
E_SESSION_EXISTS = "session_exists"
E_TOO_MANY_SESSIONS = "too_many_sessions"
E_SERVER_FULL = "server_full"
E_RATE_LIMITED = "rate_limited"
E_OUT_OF_RANGE = "out_of_range"
E_TOO_LARGE = "too_large"
E_BAD_SETTINGS = "bad_settings"
E_UNKNOWN_LANGUAGE = "unknown_language"  # `open` named a language no grammar is registered for
E_ENGINE = "engine_error"
E_MODEL_FAILED = "model_failed"  # out of memory or a timed-out forward pass: this request only, retry
E_BUSY = "server_busy"  # as many requests queued or running as the server takes: retry shortly
E_INTERNAL = "internal_error"

_SESSION_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")
_LANGUAGE = re.compile(r"^[A-Za-z0-9_+#.-]{1,32}$")
_MAX_REQUEST_ID_CHARS = 64

# Sampler knobs a client may set: those the engine's settings schema marks `client`
# (engine/types.py). The rest (context sizes, candidates) stay the server's business:
# they bound the work one request can cost.
CLIENT_SETTINGS = client_knobs(SamplerSettings)


class ProtocolError(Exception):
    """A message the server refuses. `fatal` ones close the connection with `close_code`."""

    def __init__(self, code: str, message: str, *, session: Optional[str] = None,
                 request_id: Union[str, int, None] = None, fatal: bool = False,
                 close_code: int = CLOSE_NORMAL) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.session = session
        self.request_id = request_id
        self.fatal = fatal
        self.close_code = close_code

    def frame(self) -> dict[str, Any]:
        return error_frame(self.code, self.message, session=self.session, request_id=self.request_id)


def error_frame(code: str, message: str, *, session: Optional[str] = None,
                request_id: Union[str, int, None] = None) -> dict[str, Any]:
    frame: dict[str, Any] = {"type": "error", "code": code, "message": message}
    if session is not None:
        frame["session"] = session
    if request_id is not None:
        frame["id"] = request_id
    return frame


@dataclass(frozen=True)
class Position:
    line: int  # 0-based
    character: int  # 0-based, in UTF-16 code units (as in LSP and JavaScript strings)


@dataclass(frozen=True)
class Range:
    start: Position
    end: Position

    def to_json(self) -> dict[str, Any]:
        return {"start": {"line": self.start.line, "character": self.start.character},
                "end": {"line": self.end.line, "character": self.end.character}}


@dataclass(frozen=True)
class TextEdit:
    range: Optional[Range]  # None replaces the whole document
    text: str


@dataclass(frozen=True)
class OpenMessage:
    session: str
    token: Optional[str]
    protocol: int
    text: str
    language: Optional[str]
    settings: dict[str, Any]


@dataclass(frozen=True)
class EditMessage:
    session: str
    edits: tuple[TextEdit, ...]


@dataclass(frozen=True)
class InfillMessage:
    session: str
    request_id: Union[str, int]
    range: Range
    settings: dict[str, Any]


@dataclass(frozen=True)
class CancelMessage:
    session: str


@dataclass(frozen=True)
class CloseMessage:
    session: str


ClientMessage = Union[OpenMessage, EditMessage, InfillMessage, CancelMessage, CloseMessage]


def parse_message(raw: Union[str, bytes], *, max_request_tokens: int = MAX_TOKENS) -> ClientMessage:
    """Decode and validate one client text frame; raises ProtocolError with a precise code."""
    if isinstance(raw, (bytes, bytearray)):
        raise ProtocolError(E_BAD_MESSAGE, "binary frames are not part of the protocol; send JSON text frames")
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise ProtocolError(E_BAD_JSON, f"message is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ProtocolError(E_BAD_MESSAGE, "a message must be a JSON object with a \"type\" field")
    kind = data.get("type")
    if not isinstance(kind, str):
        raise ProtocolError(E_BAD_MESSAGE, "missing string field \"type\"")
    parser = _PARSERS.get(kind)
    if parser is None:
        raise ProtocolError(E_UNKNOWN_TYPE, f"unknown message type {brief(kind)}; expected one of {', '.join(sorted(_PARSERS))}")
    session = data.get("session")
    if not isinstance(session, str) or not _SESSION_ID.match(session):
        raise ProtocolError(E_BAD_MESSAGE, "\"session\" must be 1-64 characters of A-Z a-z 0-9 _ . : -")
    return parser(data, session, max_request_tokens)


def _parse_open(data: dict[str, Any], session: str, max_request_tokens: int) -> OpenMessage:
    protocol = data.get("protocol")
    if protocol != PROTOCOL_VERSION or isinstance(protocol, bool):
        raise ProtocolError(E_UNSUPPORTED_PROTOCOL, f"this server speaks protocol {PROTOCOL_VERSION}; got {brief(protocol)}",
                            session=session)
    token = data.get("token")
    if token is not None and not isinstance(token, str):
        token = None  # treated as missing: refused as unauthorized by the connection
    text = data.get("text", "")
    if not isinstance(text, str):
        raise ProtocolError(E_BAD_MESSAGE, "\"text\" must be a string", session=session)
    language = data.get("language")
    if language is not None and (not isinstance(language, str) or not _LANGUAGE.match(language)):
        raise ProtocolError(E_BAD_MESSAGE, "\"language\" must be null or a short identifier such as \"python\"",
                            session=session)
    if language is not None:
        try:
            language = check_language(language)  # the registry's name ("typescriptreact" -> "tsx")
        except UnknownLanguage as exc:
            raise ProtocolError(E_UNKNOWN_LANGUAGE, str(exc), session=session) from None
    settings = parse_settings(data.get("settings"), session=session, request_id=None,
                              max_request_tokens=max_request_tokens)
    return OpenMessage(session, token, protocol, text, language, settings)


def _parse_edit(data: dict[str, Any], session: str, max_request_tokens: int) -> EditMessage:
    edits = data.get("edits")
    if not isinstance(edits, list) or not edits:
        raise ProtocolError(E_BAD_MESSAGE, "\"edits\" must be a non-empty list of {range?, text}", session=session)
    parsed = []
    for index, edit in enumerate(edits):
        if not isinstance(edit, dict) or not isinstance(edit.get("text"), str):
            raise ProtocolError(E_BAD_MESSAGE, f"edits[{index}] must be an object with a string \"text\"",
                                session=session)
        where = None if edit.get("range") is None else parse_range(edit["range"], session=session, request_id=None)
        parsed.append(TextEdit(where, edit["text"]))
    return EditMessage(session, tuple(parsed))


def _parse_infill(data: dict[str, Any], session: str, max_request_tokens: int) -> InfillMessage:
    request_id = data.get("id")
    if isinstance(request_id, bool) or not (
        (isinstance(request_id, int) and abs(request_id) < 2**53)
        or (isinstance(request_id, str) and 0 < len(request_id) <= _MAX_REQUEST_ID_CHARS)
    ):
        raise ProtocolError(E_BAD_MESSAGE, "\"id\" must be an integer or a string of 1-64 characters", session=session)
    if "range" not in data:
        raise ProtocolError(E_BAD_MESSAGE, "\"range\" is required (an empty range infills at the cursor)",
                            session=session, request_id=request_id)
    where = parse_range(data["range"], session=session, request_id=request_id)
    settings = parse_settings(data.get("settings"), session=session, request_id=request_id,
                              max_request_tokens=max_request_tokens)
    return InfillMessage(session, request_id, where, settings)


def _parse_cancel(data: dict[str, Any], session: str, max_request_tokens: int) -> CancelMessage:
    return CancelMessage(session)


def _parse_close(data: dict[str, Any], session: str, max_request_tokens: int) -> CloseMessage:
    return CloseMessage(session)


_PARSERS = {"open": _parse_open, "edit": _parse_edit, "infill": _parse_infill,
            "cancel": _parse_cancel, "close": _parse_close}


def parse_range(value: Any, *, session: Optional[str], request_id: Union[str, int, None]) -> Range:
    if not isinstance(value, dict):
        raise ProtocolError(E_BAD_MESSAGE, "a range must be {\"start\": position, \"end\": position}",
                            session=session, request_id=request_id)
    start = _parse_position(value.get("start"), "start", session, request_id)
    end = _parse_position(value.get("end"), "end", session, request_id)
    if (end.line, end.character) < (start.line, start.character):
        raise ProtocolError(E_OUT_OF_RANGE, "range end is before its start", session=session, request_id=request_id)
    return Range(start, end)


def _parse_position(value: Any, name: str, session: Optional[str], request_id: Union[str, int, None]) -> Position:
    if not isinstance(value, dict):
        raise ProtocolError(E_BAD_MESSAGE, f"range.{name} must be {{\"line\": int, \"character\": int}}",
                            session=session, request_id=request_id)
    line, character = value.get("line"), value.get("character")
    for field_name, field_value in (("line", line), ("character", character)):
        if isinstance(field_value, bool) or not isinstance(field_value, int) or not 0 <= field_value < 2**31:
            raise ProtocolError(E_BAD_MESSAGE, f"range.{name}.{field_name} must be a non-negative integer",
                                session=session, request_id=request_id)
    return Position(line, character)


def parse_settings(value: Any, *, session: Optional[str], request_id: Union[str, int, None],
                   max_request_tokens: int) -> dict[str, Any]:
    """Validate client sampler settings with the engine's schema (engine.types.check_knobs):
    unknown, server-only or out-of-bounds knobs are refused; max_tokens is further capped
    by the server's `max_request_tokens`."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ProtocolError(E_BAD_SETTINGS, "\"settings\" must be an object", session=session, request_id=request_id)
    try:
        return check_knobs(SamplerSettings, value, allowed=CLIENT_SETTINGS, upper={"max_tokens": max_request_tokens})
    except SettingsError as error:
        raise ProtocolError(E_BAD_SETTINGS, str(error), session=session, request_id=request_id) from None
