"""`infill/documentState`: the server's copy of an open document, as a checksum.

    params: {textDocument: {uri}}
    result: {uri, version, length, sha256, positionEncoding}   (length in code points)

A client (or a test, or the fuzzer in lab/fuzz/) compares it with its own text to prove
that incremental sync kept both copies equal; the text itself is never sent back.
"""
from __future__ import annotations

import hashlib
from typing import Any

from pygls.exceptions import JsonRpcInvalidParams

from ..documents import UnknownDocument
from .next_edit import _field
from .host import LspServer


DOCUMENT_STATE_METHOD = "infill/documentState"


def text_digest(text: str) -> str:
    """SHA-256 of the text as UTF-8 (lone surrogates as their surrogatepass bytes)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def register(server: "LspServer") -> None:
    @server.feature(DOCUMENT_STATE_METHOD)
    def document_state(ls: "LspServer", params: Any) -> dict:
        uri = _field(_field(params, "textDocument"), "uri")
        if not isinstance(uri, str):
            raise JsonRpcInvalidParams("infill/documentState needs textDocument.uri")
        try:
            doc = ls.documents.get(uri)
        except UnknownDocument as error:
            raise JsonRpcInvalidParams(str(error)) from None
        return {
            "uri": uri,
            "version": doc.version,
            "length": len(doc.text),
            "sha256": text_digest(doc.text),
            "positionEncoding": ls.documents.encoding,
        }
