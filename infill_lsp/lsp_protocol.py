"""pygls' protocol with two changes this server needs.

1. Text sync goes to our own `DocumentStore` (infill_lsp.text: line breaks and position
   encodings per the spec) instead of pygls' workspace, so each change is applied once.
2. Malformed messages never go unanswered or take anything down: a request whose params
   do not fit its method gets an InvalidParams error reply (pygls would log it and leave
   the client waiting forever), and JSON that is not a message object is logged and
   dropped.
"""
from __future__ import annotations

import logging
from typing import Any

import attrs
import cattrs
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pygls.protocol import LanguageServerProtocol, lsp_method

log = logging.getLogger(__name__)


@attrs.define
class MalformedMessage:
    """A message that parsed as JSON but not as the LSP message its method names."""

    id: Any
    method: str
    problem: str
    is_request: bool


class InfillProtocol(LanguageServerProtocol):
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

    # -- robustness -----------------------------------------------------------------------
    def structure_message(self, data: dict[str, Any]):
        try:
            return super().structure_message(data)
        except Exception as error:
            method = data.get("method")
            message_id = data.get("id")
            if not isinstance(message_id, (str, int)) or isinstance(message_id, bool):
                message_id = None
            cause = error.__cause__ or error
            return MalformedMessage(
                id=message_id,
                method=method if isinstance(method, str) else repr(method),
                problem=_first_line(cause),
                is_request="id" in data and "method" in data,
            )

    def handle_message(self, message: Any):
        if isinstance(message, MalformedMessage):
            log.warning("malformed %s: %s", message.method, message.problem)
            if message.is_request and message.id is not None:
                error = JsonRpcInvalidParams(
                    f"invalid params for {message.method}: {message.problem}"
                ).to_response_error()
                self._send_response(message.id, error=error)
            return
        if not hasattr(message, "jsonrpc"):
            log.warning("dropped a message that is not a JSON-RPC object: %.200r", message)
            return
        super().handle_message(message)


def _first_line(error: BaseException) -> str:
    if isinstance(error, cattrs.BaseValidationError):
        # cattrs names the offending field: "expected int @ $.params.position.line"
        details = cattrs.transform_error(error, path="$")
        return "; ".join(details)[:300]
    text = str(error).strip().splitlines()
    return (text[0] if text else type(error).__name__)[:300]
