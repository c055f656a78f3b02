"""`infill/nextEdit`: where the user's next edit near the cursor probably is.

    params: {textDocument: {uri, version}, position}      (shaped like Copilot's inline edit request)
    result: {edits: [{range, newText, confidence, kind}], version, ms}

The document's recent edits come from the server's own didChange history
(infill_lsp/edit_history.py). As for inline completion, through the request path of every
front end (infill_lsp/request_path.py): a newer request for the same document supersedes
older ones, the server waits `debounceMs` first, `$/cancelRequest` stops the model at its
next pass; and a request for a version other than the document's current one (or a
document that changed while the model ran) gets no edits. The work is the engine's
`next_edit` method.
"""
from __future__ import annotations

import time
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from engine.worker import NextEditCall

from ..documents import UnknownDocument
from ..request_path import ErrorCode, Request
from .host import LspServer


NEXT_EDIT_METHOD = "infill/nextEdit"


def _field(value: Any, name: str) -> Any:
    """A field of params, which pygls hands over as an object for custom methods."""
    if isinstance(value, dict):
        return value.get(name)
    return getattr(value, name, None)


def _parse(params: Any) -> tuple[str, int | None, types.Position]:
    document = _field(params, "textDocument")
    uri = _field(document, "uri")
    version = _field(document, "version")
    position = _field(params, "position")
    line, character = _field(position, "line"), _field(position, "character")
    if not isinstance(uri, str):
        raise JsonRpcInvalidParams("infill/nextEdit needs textDocument.uri")
    if version is not None and (isinstance(version, bool) or not isinstance(version, int)):
        raise JsonRpcInvalidParams("textDocument.version must be an integer")
    if any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in (line, character)):
        raise JsonRpcInvalidParams("position must be {line, character} with non-negative integers")
    return uri, version, types.Position(line=line, character=character)


def _empty(version: int | None, reason: str) -> dict:
    return {"edits": [], "version": version, "reason": reason}


def register(server: "LspServer") -> None:
    @server.feature(NEXT_EDIT_METHOD)
    async def next_edit(ls: "LspServer", params: Any) -> dict:
        started = time.perf_counter()
        uri, version, position = _parse(params)
        ls.stats.count("next_edit_requests")
        try:
            document = ls.documents.get(uri)
        except UnknownDocument as error:
            ls.tell_log(str(error), types.MessageType.Warning)
            return _empty(version, "unknown document")
        if version is not None and version != document.version:
            ls.stats.count("next_edit_stale")
            return _empty(version, "stale version")
        # The request path (infill_lsp/request_path.py): the newest request for a document
        # is the only one worth answering; debounce; run; drop a stale answer.
        async with Request(ls.engine, ("next_edit", uri)) as request:
            try:
                if not await request.debounce(ls.settings.debounce_ms):
                    return _empty(version, "superseded")
                text, at_version = document.text, document.version
                offset = document.offset_at(position, ls.documents.encoding)
                call = NextEditCall(text, offset, ls.edit_history.entries(uri), ls.language_for(document.language_id), dict(ls.settings.next_edit))
                answer = await request.run(call, still_current=lambda: document.version == at_version and document.text == text)
            except Exception as error:  # a bad limit, a model failure, an engine bug: log it, answer nothing
                return _empty(version, _REASONS.get(ls.report_failure("next edit", error).code, "error"))
        if answer.status == "stale":
            ls.stats.count("next_edit_stale")
            return _empty(version, "document changed meanwhile")
        if answer.status != "ok":
            return _empty(version, "superseded")
        encoding = ls.documents.encoding
        edits = [
            {
                "range": {"start": _point(document, e.start, encoding), "end": _point(document, e.end, encoding)},
                "newText": e.text,
                "confidence": round(e.confidence, 4),
                "kind": e.kind,
            }
            for e in answer.result.edits
        ]
        ls.stats.count("next_edit_shown" if edits else "next_edit_empty")
        return {"edits": edits, "version": at_version, "ms": round((time.perf_counter() - started) * 1000, 1)}


_REASONS = {ErrorCode.UNAVAILABLE: "model unavailable", ErrorCode.MODEL_FAILED: "model failed", ErrorCode.MODEL_ERROR: "model failed"}


def _point(document: Any, offset: int, encoding: str) -> dict:
    position = document.position_at(offset, encoding)
    return {"line": position.line, "character": position.character}

