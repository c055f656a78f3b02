"""Open documents of the language server, addressed by LSP positions.

LSP positions are (line, character) pairs where `character` counts code units of the
negotiated position encoding: UTF-16 by default (as the spec requires), or UTF-8 / UTF-32
when the client offers them. Lines end at "\\r\\n", "\\r" or "\\n" only, and positions
outside the text are clamped, as the spec says. The mapping is the engine's one position
codec (engine/text.py, `TextIndex` with ANY_BREAK); this module adds lsprotocol's types
and didChange edits.
"""
from __future__ import annotations

from lsprotocol import types

from engine.text import ANY_BREAK, TextIndex

UTF8 = types.PositionEncodingKind.Utf8.value
UTF16 = types.PositionEncodingKind.Utf16.value
UTF32 = types.PositionEncodingKind.Utf32.value


class TextDocument:
    """One open document: its text and the index that maps positions to offsets."""

    def __init__(self, uri: str, language_id: str, version: int, text: str) -> None:
        self.uri = uri
        self.language_id = language_id
        self.version = version  # the client's number for this text (LSP says it grows; not trusted to)
        self.revision = 0  # ours: grows by one with every change, whatever version says
        self._index = TextIndex(text, ANY_BREAK)

    def __repr__(self) -> str:
        return f"TextDocument(uri={self.uri!r}, language_id={self.language_id!r}, version={self.version}, chars={len(self.text)})"

    @property
    def text(self) -> str:
        return self._index.text

    @text.setter
    def text(self, value: str) -> None:
        self._index = TextIndex(value, ANY_BREAK)  # the line index is rebuilt lazily

    # -- line index -------------------------------------------------------------------
    @property
    def line_starts(self) -> list[int]:
        """Offset of the first character of every line."""
        return self._index.line_starts

    @property
    def line_count(self) -> int:
        return self._index.line_count

    def line_text(self, line: int) -> str:
        """Text of `line` without its line break."""
        return self._index.line_text(line)

    # -- positions ----------------------------------------------------------------------
    def offset_at(self, position: types.Position, encoding: str = UTF16) -> int:
        """Offset in `text` of an LSP position, clamped into the document.

        A line past the last one means the end of the document; negative values mean 0.
        """
        return self._index.offset_at(position.line, position.character, encoding)

    def position_at(self, offset: int, encoding: str = UTF16) -> types.Position:
        """LSP position of an offset (clamped into the document)."""
        line, character = self._index.position_at(offset, encoding)
        return types.Position(line=line, character=character)

    # -- edits --------------------------------------------------------------------------
    def apply_change(self, change: types.TextDocumentContentChangeEvent, encoding: str = UTF16) -> None:
        """Apply one `didChange` content change (a ranged edit or a whole new text)."""
        if isinstance(change, types.TextDocumentContentChangePartial):
            start = self.offset_at(change.range.start, encoding)
            end = self.offset_at(change.range.end, encoding)
            if end < start:  # a reversed range: be lenient, treat it as the same span
                start, end = end, start
            self.text = self.text[:start] + change.text + self.text[end:]
        else:
            self.text = change.text
        self.revision += 1
