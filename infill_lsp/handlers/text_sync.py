"""Text sync: didOpen / didChange (incremental) / didClose into the DocumentStore."""
from __future__ import annotations

from lsprotocol import types

from ..documents import UnknownDocument
from .host import LspServer


def register(server: "LspServer") -> None:
    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: "LspServer", params: types.DidOpenTextDocumentParams) -> None:
        ls.documents.open(params.text_document)
        ls.edit_history.opened(params.text_document.uri, params.text_document.text)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: "LspServer", params: types.DidChangeTextDocumentParams) -> None:
        try:
            before = ls.documents.get(params.text_document.uri).text
            after = ls.documents.change(params.text_document, params.content_changes).text
            ls.edit_history.record(params.text_document.uri, before, after)  # for infill/nextEdit
        except UnknownDocument as error:
            ls.tell_log(f"change ignored: {error}", types.MessageType.Warning)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: "LspServer", params: types.DidCloseTextDocumentParams) -> None:
        ls.documents.close(params.text_document.uri)
        ls.edit_history.closed(params.text_document.uri)
        ls.completions.forget(params.text_document.uri)
        ls.engine.cancel(("next_edit", params.text_document.uri))
