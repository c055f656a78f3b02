"""Checks on an incoming message before pygls sees it: the JSON-RPC envelope and the
LSP lifecycle. Pure functions and one small state machine; each refusal says whose
mistake it is (always the client's here) and which error answers it.

JSON-RPC 2.0 (https://www.jsonrpc.org/specification) and LSP 3.17 say:
* a body that is not JSON: Parse error (-32700), id null;
* JSON that is not a valid message (not an object, `jsonrpc` not "2.0", a method that is
  not a string, an id that is neither a string nor an integer): Invalid Request
  (-32600), with the request's id when it has a usable one, else null (as the spec's
  own example answers `{"jsonrpc": "2.0", "method": 1}`, which has no id at all);
* a batch (an array): LSP does not use batches, so each element that is a request gets
  an Invalid Request answer with its id, together in one array, as JSON-RPC answers a
  batch; an empty batch is one Invalid Request;
* before `initialize`: requests get ServerNotInitialized (-32002), notifications are
  dropped (except `exit`);
* `initialize` a second time: Invalid Request (the position encoding and capabilities
  were negotiated once; changing them mid-session would shift every position);
* `initialized` a second time: ignored (it would load the model again);
* after `shutdown`: requests get Invalid Request, notifications other than `exit` are
  dropped.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Union

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
SERVER_NOT_INITIALIZED = -32002
REQUEST_CANCELLED = -32800
CONTENT_MODIFIED = -32801

# Codes that mean "the client sent something wrong": logged as the client's mistake,
# never as an internal error, and never with a traceback.
CLIENT_FAULT_CODES = frozenset({
    PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, SERVER_NOT_INITIALIZED,
    REQUEST_CANCELLED, CONTENT_MODIFIED,
})

MessageId = Union[int, str]


@dataclass(frozen=True)
class Refusal:
    """A message refused before any handler ran."""

    code: int
    message: str
    id: MessageId | None  # the id to answer with; None answers with id null
    answer: bool  # False: a notification (or a response), nothing to answer, only log

    def response(self) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": self.id, "error": {"code": self.code, "message": self.message}}


def parse_body(body: bytes) -> tuple[Any, Refusal | None]:
    """The JSON value of a body, or a Parse error refusal."""
    try:
        return json.loads(body), None
    except (ValueError, RecursionError) as error:  # UnicodeDecodeError is a ValueError
        reason = "nested too deeply" if isinstance(error, RecursionError) else str(error).splitlines()[0][:120]
        return None, Refusal(PARSE_ERROR, f"the message body is not JSON ({reason})", None, True)


def usable_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def check_envelope(data: Any) -> Refusal | None:
    """None when `data` is a JSON-RPC 2.0 request, notification or response object."""
    if not isinstance(data, dict):
        return Refusal(INVALID_REQUEST, f"a message must be a JSON object, got {_kind(data)}", None, True)
    has_id = "id" in data
    message_id = data.get("id")
    answer_id = message_id if usable_id(message_id) else None
    is_request = has_id and "method" in data
    if data.get("jsonrpc") != "2.0":
        return Refusal(INVALID_REQUEST, f'"jsonrpc" must be "2.0", got {_short(data.get("jsonrpc"))}', answer_id, True)
    if has_id and message_id is not None and answer_id is None:
        return Refusal(INVALID_REQUEST, f'"id" must be a string or an integer, got {_kind(message_id)}', None, True)
    if "method" in data:
        if not isinstance(data["method"], str):
            return Refusal(INVALID_REQUEST, f'"method" must be a string, got {_kind(data["method"])}', answer_id, True)
        if is_request and message_id is None:
            return Refusal(INVALID_REQUEST, 'a request\'s "id" must not be null', None, True)
        params = data.get("params")
        if params is not None and not isinstance(params, (dict, list)):
            return Refusal(INVALID_REQUEST, f'"params" must be an object or an array, got {_kind(params)}',
                           answer_id, True)
        return None
    if has_id and ("result" in data or "error" in data):
        return None  # a response to one of our requests
    return Refusal(INVALID_REQUEST, 'a message needs a "method" (request, notification) or a "result"/"error" '
                   "(response)", answer_id, True)


def refuse_batch(items: list[Any]) -> tuple[list[dict[str, Any]], str]:
    """The array that answers a batch, and a line for the log."""
    if not items:
        return [Refusal(INVALID_REQUEST, "an empty batch", None, True).response()], "an empty batch"
    answers = []
    for item in items:
        if isinstance(item, dict) and "method" in item and "id" not in item:
            continue  # a notification: nothing to answer
        message_id = item.get("id") if isinstance(item, dict) else None
        answers.append(Refusal(
            INVALID_REQUEST, "batches are not part of the Language Server Protocol: send each message on its own",
            message_id if usable_id(message_id) else None, True).response())
    return answers, f"a batch of {len(items)} messages refused (LSP has no batches)"


class Lifecycle:
    """Where the session is: before `initialize`, running, or after `shutdown`."""

    def __init__(self) -> None:
        self.initialize_received = False
        self.initialized_received = False
        self.shutdown_received = False

    def admit(self, data: dict[str, Any]) -> Refusal | None:
        """None to let the message through; a refusal (answer or log line) otherwise.
        Call it only for messages that passed `check_envelope`."""
        method = data.get("method")
        if method is None or method == "exit":  # responses to our requests; exit always
            return None
        is_request = "id" in data
        message_id = data.get("id") if is_request else None
        if self.shutdown_received:
            return Refusal(INVALID_REQUEST, f"{method} after shutdown: the server is shutting down", message_id,
                           answer=is_request)
        if method == "initialize":
            if not is_request:
                return Refusal(INVALID_REQUEST, "initialize must be a request (with an id)", None, answer=False)
            if self.initialize_received:
                return Refusal(INVALID_REQUEST, "initialize was already received: a session is initialized once",
                               message_id, answer=is_request)
            self.initialize_received = True
            return None
        if not self.initialize_received:
            return Refusal(SERVER_NOT_INITIALIZED, f"{method} before initialize", message_id, answer=is_request)
        if method == "initialized":
            if self.initialized_received:
                return Refusal(INVALID_REQUEST, "initialized was already received: ignored", None, answer=False)
            self.initialized_received = True
        elif method == "shutdown" and is_request:
            self.shutdown_received = True
        return None


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "an array",
            dict: "an object"}.get(type(value), type(value).__name__)


def _short(value: Any) -> str:
    text = json.dumps(value) if isinstance(value, (str, int, float, bool, type(None))) else _kind(value)
    return text if len(text) <= 40 else text[:39] + "…"
