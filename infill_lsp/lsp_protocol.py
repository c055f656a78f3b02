"""pygls' protocol with the changes this server needs.

1. Text sync goes to our own `DocumentStore` (infill_lsp.text: line breaks and position
   encodings per the spec) instead of pygls' workspace, so each change is applied once.
2. Every body the transport (infill_lsp/transport.py) hands over goes through `receive`:
   the JSON-RPC envelope and the LSP lifecycle are checked first (infill_lsp/messages.py),
   so a wrong message gets the error the specs name instead of being dropped, crashing a
   handler, or switching the session's position encoding.
3. Malformed params never go unanswered: a request whose params do not fit its method
   gets InvalidParams (pygls would log it and leave the client waiting forever).
4. The client's mistakes are logged as the client's, in one line: never as an internal
   error, never with a traceback (pygls logs a traceback for each).
5. pygls keeps the future of every notification handler that is a coroutine or a
   generator (didOpen, didChange, didClose, didChangeConfiguration) in its table of
   requests in flight, under a fresh uuid, and never removes it: ~1.5 KB per message,
   found with tracemalloc (docs/reliability.md). `_execute_handler` removes it when done.
"""
from __future__ import annotations

import logging
from typing import Any, Callable

import attrs
import cattrs
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.protocol import LanguageServerProtocol, lsp_method
from pygls.protocol.json_rpc import JsonRPCNotification, JsonRPCRequestMessage, JsonRPCResponseMessage

from . import messages
from .messages import CLIENT_FAULT_CODES, Refusal

log = logging.getLogger(__name__)


@attrs.define
class MalformedMessage:
    """A message that parsed as JSON but not as the LSP message its method names."""

    id: Any
    method: str
    problem: str
    is_request: bool


class InfillProtocol(LanguageServerProtocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lifecycle = messages.Lifecycle()
        # Where the client's mistakes are told to the user (set by the server): one line each.
        self.on_client_mistake: Callable[[str], None] = lambda line: None

    # -- text sync: user handlers only (see infill_lsp/handlers/text_sync.py) ------------
    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: types.DidOpenTextDocumentParams):
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_OPEN)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams):
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: types.DidCloseTextDocumentParams):
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CLOSE)) is not None:
            yield handler, (params,), None

    @lsp_method(types.SHUTDOWN)
    def lsp_shutdown(self, *args):
        """pygls' shutdown, over a copy of the requests in flight: cancelling one runs its
        callbacks at once, which remove it from the table being iterated."""
        if (handler := self.fm.features.get(types.SHUTDOWN)) is not None:
            yield handler, args, None
        current_id = self.msg_id
        for msg_id, future in list(self._request_futures.items()):
            if msg_id != current_id and not future.done():
                future.cancel()
        self._shutdown = True

    # -- the way in -----------------------------------------------------------------------
    def receive(self, body: bytes) -> None:
        """One framed message body from the transport."""
        data, refusal = messages.parse_body(body)
        if refusal is not None:
            self.refuse(refusal)
            return
        if isinstance(data, list):
            answers, line = messages.refuse_batch(data)
            self.client_mistake(line)
            if answers:
                self._send_data(answers)
            return
        refusal = messages.check_envelope(data) or self._duplicate_id(data) or self.lifecycle.admit(data)
        if refusal is not None:
            self.refuse(refusal)
            return
        self.handle_message(self.structure_message(data))

    def framing_error(self, problem: str) -> None:
        """Bytes that were not a well-framed message (infill_lsp/framing.py)."""
        self.client_mistake(f"skipped input that is not a message: {problem}")

    def refuse(self, refusal: Refusal) -> None:
        self.client_mistake(refusal.message)
        if refusal.answer:
            self._send_data(refusal.response())

    def client_mistake(self, line: str) -> None:
        log.warning("client error: %s", line)
        self.on_client_mistake(line)

    def _duplicate_id(self, data: dict[str, Any]) -> Refusal | None:
        message_id = data.get("id")
        if "method" not in data or not messages.usable_id(message_id):
            return None
        running = self._request_futures.get(message_id)
        if running is not None and not running.done():
            return Refusal(messages.INVALID_REQUEST, f"request id {message_id!r} is already in use by a request in "
                           "flight", message_id, True)
        return None

    # -- structuring without tracebacks ---------------------------------------------------
    def structure_message(self, data: dict[str, Any]):
        """The typed message for `data` (top level only: `receive` parses the JSON), or a
        MalformedMessage naming what did not fit."""
        try:
            if "id" in data and "method" not in data:
                if "error" in data:
                    return self._converter.structure(data, types.ResponseErrorMessage)
                response_type = self._result_types.pop(data["id"], None) or JsonRPCResponseMessage
                return self._converter.structure(data, response_type)
            fallback = JsonRPCRequestMessage if "id" in data else JsonRPCNotification
            if "params" not in data:  # JSON-RPC lets a request omit params; pygls' fallback types need the key
                data = {**data, "params": None}
            return self._converter.structure(data, self.get_message_type(data["method"]) or fallback)
        except Exception as error:
            method = data.get("method")
            message_id = data.get("id")
            cause = error.__cause__ or error
            return MalformedMessage(
                id=message_id if messages.usable_id(message_id) else None,
                method=method if isinstance(method, str) else repr(method),
                problem=_first_line(cause),
                is_request="id" in data and "method" in data,
            )

    def handle_message(self, message: Any):
        if isinstance(message, MalformedMessage):
            line = f"invalid params for {message.method}: {message.problem}"
            self.client_mistake(line)
            if message.is_request and message.id is not None:
                self._send_response(message.id, error=JsonRpcInvalidParams(line).to_response_error())
            return
        super().handle_message(message)

    # -- results and the table of requests in flight --------------------------------------
    def _execute_handler(self, msg_id, handler, callback, args=None, kwargs=None):
        def forget_then(future: Any) -> None:
            # pygls stores coroutine and generator handlers' futures under msg_id and
            # removes only requests' ones: notifications' would stay forever.
            if self._request_futures.get(msg_id) is future:
                del self._request_futures[msg_id]
            callback(future)

        super()._execute_handler(msg_id, handler, forget_then, args, kwargs)

    def _send_handler_result(self, future, *, msg_id):
        """A handler's JsonRpcException for the client's mistake (bad params in a custom
        request) is answered and logged in one line; pygls logs a traceback for it."""
        error = None if future.cancelled() else future.exception()
        if isinstance(error, JsonRpcException) and error.code in CLIENT_FAULT_CODES:
            self._request_futures.pop(msg_id, None)
            self.client_mistake(f"request {msg_id!r}: {error.message}")
            self._send_response(msg_id, error=error.to_response_error())
            return
        super()._send_handler_result(future, msg_id=msg_id)

    def _handle_cancel_notification(self, msg_id):
        # A cancel for a request already answered is normal (the answer crossed it).
        future = self._request_futures.pop(msg_id, None)
        if future is not None:
            future.cancel()

    def _handle_request(self, msg_id, method_name, params):
        if self._get_handler_or_none(method_name) is None:
            self.client_mistake(f"unknown method {method_name!r} (request {msg_id!r})")
            self._send_response(msg_id, error=types.ResponseError(
                code=messages.METHOD_NOT_FOUND, message=f"Method Not Found: {method_name}"))
            return
        super()._handle_request(msg_id, method_name, params)

    def _handle_notification(self, method_name, params):
        if method_name != types.CANCEL_REQUEST and self._get_handler_or_none(method_name) is None:
            # LSP: notifications the server does not know are ignored ("$/..." ones silently).
            if not method_name.startswith("$/"):
                log.info("ignored notification %r (no handler)", method_name)
            return
        super()._handle_notification(method_name, params)

    def _get_handler_or_none(self, method_name: str):
        return self.fm.builtin_features.get(method_name) or self.fm.features.get(method_name)


def _first_line(error: BaseException) -> str:
    if isinstance(error, cattrs.BaseValidationError):
        # cattrs names the offending field: "expected int @ $.params.position.line"
        details = cattrs.transform_error(error, path="$")
        return "; ".join(details)[:300]
    text = str(error).strip().splitlines()
    return (text[0] if text else type(error).__name__)[:300]
