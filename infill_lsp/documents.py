"""The open documents, kept in sync from didOpen/didChange/didClose."""
from __future__ import annotations

import itertools
from typing import Iterator, Sequence

from lsprotocol import types

from .text import UTF16, TextDocument


class UnknownDocument(LookupError):
    """A request or change named a document that was never opened (or was closed)."""


class DocumentStore:
    def __init__(self) -> None:
        self._documents: dict[str, TextDocument] = {}
        self._edit_clock = itertools.count(1)
        self._last_edit: dict[str, int] = {}  # uri -> tick of its last open/change
        self.encoding = UTF16  # the negotiated position encoding (set at initialize)

    def open(self, item: types.TextDocumentItem) -> TextDocument:
        document = TextDocument(item.uri, item.language_id, item.version, item.text)
        self._documents[item.uri] = document
        self._last_edit[item.uri] = next(self._edit_clock)
        return document

    def change(
        self,
        identifier: types.VersionedTextDocumentIdentifier,
        changes: Sequence[types.TextDocumentContentChangeEvent],
    ) -> TextDocument:
        document = self.get(identifier.uri)
        # Changes apply in order, each to the text the previous one left (LSP 3.x).
        for change in changes:
            document.apply_change(change, self.encoding)
        document.version = identifier.version
        self._last_edit[identifier.uri] = next(self._edit_clock)
        return document

    def close(self, uri: str) -> None:
        self._documents.pop(uri, None)
        self._last_edit.pop(uri, None)

    def get(self, uri: str) -> TextDocument:
        try:
            return self._documents[uri]
        except KeyError:
            raise UnknownDocument(f"document {uri} is not open (send textDocument/didOpen first)") from None

    def recently_edited(self, exclude: str) -> Iterator[TextDocument]:
        """Other open documents, most recently edited first."""
        for uri in sorted(self._last_edit, key=self._last_edit.__getitem__, reverse=True):
            if uri != exclude:
                yield self._documents[uri]

    def __len__(self) -> int:
        return len(self._documents)
