"""Document text and LSP positions.

LSP positions are (line, character) pairs where `character` counts code units of the
negotiated position encoding: UTF-16 by default (as the spec requires), or UTF-8 / UTF-32
when the client offers them. Lines end at "\\r\\n", "\\r" or "\\n" only: Python's
`str.splitlines` also splits on form feeds, U+2028 and others, which would put every
later line off by one for a client, so it is not used here.
"""
from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field

from lsprotocol import types

_LINE_BREAK = re.compile(r"\r\n|\r|\n")

UTF8 = types.PositionEncodingKind.Utf8.value
UTF16 = types.PositionEncodingKind.Utf16.value
UTF32 = types.PositionEncodingKind.Utf32.value


def code_units(char: str, encoding: str) -> int:
    """How many code units one Python character (a code point) takes in `encoding`."""
    point = ord(char)
    if encoding == UTF16:
        return 2 if point > 0xFFFF else 1
    if encoding == UTF8:
        if point < 0x80:
            return 1
        if point < 0x800:
            return 2
        return 3 if point < 0x10000 else 4
    return 1


def units_in(text: str, encoding: str) -> int:
    """Length of `text` in code units of `encoding`."""
    if encoding == UTF32 or text.isascii():
        return len(text)
    if encoding == UTF16:
        return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)
    return len(text.encode("utf-8", "surrogatepass"))


def column_to_index(line: str, column: int, encoding: str) -> int:
    """Index into `line` (no line break) of an LSP column.

    A column past the end means the end of the line (as the spec says); a column inside
    a multi-unit character (half of a surrogate pair) is rounded down to that character.
    """
    if column <= 0:
        return 0
    if encoding == UTF32 or line.isascii():
        return min(column, len(line))
    units = 0
    for index, char in enumerate(line):
        units += code_units(char, encoding)
        if units > column:
            return index
        if units == column:
            return index + 1
    return len(line)


@dataclass
class TextDocument:
    """One open document: its text and the index that maps positions to offsets."""

    uri: str
    language_id: str
    version: int  # the client's number for this text (LSP says it grows; not trusted to)
    text: str
    revision: int = 0  # ours: grows by one with every change, whatever version says
    _line_starts: list[int] | None = field(default=None, repr=False)

    # -- line index -------------------------------------------------------------------
    @property
    def line_starts(self) -> list[int]:
        """Offset of the first character of every line (recomputed lazily after edits)."""
        if self._line_starts is None:
            self._line_starts = [0] + [m.end() for m in _LINE_BREAK.finditer(self.text)]
        return self._line_starts

    @property
    def line_count(self) -> int:
        return len(self.line_starts)

    def line_text(self, line: int) -> str:
        """Text of `line` without its line break."""
        starts = self.line_starts
        start = starts[line]
        end = starts[line + 1] if line + 1 < len(starts) else len(self.text)
        # Strip the break that ends this line ("\r\n", "\r" or "\n").
        if end > start and self.text[end - 1] == "\n":
            end -= 1
        if end > start and self.text[end - 1] == "\r":
            end -= 1
        return self.text[start:end]

    # -- positions ----------------------------------------------------------------------
    def offset_at(self, position: types.Position, encoding: str = UTF16) -> int:
        """Offset in `text` of an LSP position, clamped into the document.

        A line past the last one means the end of the document; negative values mean 0.
        """
        if position.line < 0:
            return 0
        if position.line >= self.line_count:
            return len(self.text)
        line = self.line_text(position.line)
        return self.line_starts[position.line] + column_to_index(line, position.character, encoding)

    def position_at(self, offset: int, encoding: str = UTF16) -> types.Position:
        """LSP position of an offset (clamped into the document)."""
        offset = max(0, min(offset, len(self.text)))
        line = bisect_right(self.line_starts, offset) - 1
        start = self.line_starts[line]
        # An offset between "\r" and "\n" belongs to the end of the line before the break.
        line_text = self.line_text(line)
        column_chars = min(offset - start, len(line_text))
        return types.Position(line=line, character=units_in(line_text[:column_chars], encoding))

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
        self._line_starts = None
        self.revision += 1
