"""`infill/nextEdit`: where the user's next edit near the cursor probably is.

    params: {textDocument: {uri, version}, position}      (shaped like Copilot's inline edit request)
    result: {edits: [{range, newText, confidence, kind}], version, ms}

The document's recent edits come from the server's own didChange history
(infill_lsp/edit_history.py). As for inline completion: a newer request for the same
document supersedes older ones (the engine worker's supersede, engine/worker.py), the
server waits `debounceMs` first, `$/cancelRequest` stops the model at its next pass; and
a request for a version other than the document's current one (or a document that
changed while the model ran) gets no edits. The work is the engine's `next_edit` method.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from engine.types import InfillError, ModelFailure
from engine.worker import NextEditCall

from ..documents import UnknownDocument
from ..engine_host import EngineUnavailable

if TYPE_CHECKING:
    from ..server import InfillServer

NEXT_EDIT_METHOD = "infill/nextEdit"
log = logging.getLogger(__name__)


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


def register(server: "InfillServer") -> None:
    @server.feature(NEXT_EDIT_METHOD)
    async def next_edit(ls: "InfillServer", params: Any) -> dict:
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
        # Supersede: the newest request for a document is the only one worth answering.
        cancel = ls.engine.supersede(("next_edit", uri))
        try:
            if ls.settings.debounce_ms > 0:
                await asyncio.sleep(ls.settings.debounce_ms / 1000)
            if cancel.is_set():
                return _empty(version, "superseded")
            text, at_version = document.text, document.version
            offset = document.offset_at(position, ls.documents.encoding)
            call = NextEditCall(text, offset, ls.edit_history.entries(uri), _language(ls, document.language_id), dict(ls.settings.next_edit))
            outcome = await ls.engine.run(("next_edit", uri), call, cancel)
            if outcome.error is not None:
                raise outcome.error
            result = outcome.result
            if result is None or cancel.is_set():
                return _empty(version, "superseded")
            if document.version != at_version or document.text != text:
                ls.stats.count("next_edit_stale")
                return _empty(version, "document changed meanwhile")
            encoding = ls.documents.encoding
            edits = [
                {
                    "range": {"start": _point(document, e.start, encoding), "end": _point(document, e.end, encoding)},
                    "newText": e.text,
                    "confidence": round(e.confidence, 4),
                    "kind": e.kind,
                }
                for e in result.edits
            ]
            ls.stats.count("next_edit_shown" if edits else "next_edit_empty")
            return {"edits": edits, "version": at_version, "ms": round((time.perf_counter() - started) * 1000, 1)}
        except EngineUnavailable as error:
            ls.tell_log_once(f"no next edit: {error}", types.MessageType.Warning)
            return _empty(version, "model unavailable")
        except asyncio.CancelledError:
            cancel.set()
            raise
        except ModelFailure as error:  # out of memory, a failed forward pass: this request only (worker logged it)
            ls.stats.count("model_failures" if error.retryable else "errors")
            ls.tell_log(f"no next edit: {error}", types.MessageType.Warning)
            return _empty(version, "model failed")
        except Exception as error:  # a bad limit (InfillError) or an engine bug: log it, answer nothing
            if not isinstance(error, InfillError):
                log.exception("next edit failed")
                ls.stats.count("errors")
            ls.tell_log(f"next edit failed: {type(error).__name__}: {error}", types.MessageType.Warning)
            return _empty(version, "error")


def _point(document: Any, offset: int, encoding: str) -> dict:
    position = document.position_at(offset, encoding)
    return {"line": position.line, "character": position.character}


def _language(ls: "InfillServer", language_id: str) -> str | None:
    from ..languages import language_for_lsp_id

    return language_for_lsp_id(language_id)
