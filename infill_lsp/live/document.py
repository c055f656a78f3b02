"""A session's document: text addressed by (line, UTF-16 character) positions.

Positions count UTF-16 code units, as LSP and JavaScript strings do, so a browser can send
`textarea.selectionStart`-derived positions without converting. Lines end at "\\n" only;
a "\\r" is an ordinary character (browsers normalise textarea line ends to "\\n").
Out-of-range positions are refused rather than clamped: a client whose copy has drifted
from the server's should learn it at once, not get a completion spliced in the wrong place.
"""
from __future__ import annotations

from typing import Optional

from .protocol import E_OUT_OF_RANGE, E_TOO_LARGE, Position, ProtocolError, Range, TextEdit


class Document:
    def __init__(self, text: str, *, max_chars: int) -> None:
        self.max_chars = max_chars
        if len(text) > max_chars:
            raise ProtocolError(E_TOO_LARGE, f"document has {len(text)} characters; the limit is {max_chars}")
        self._text = text
        self._line_starts: Optional[list[int]] = None
        self.version = 0  # bumped by every accepted edit message

    @property
    def text(self) -> str:
        return self._text

    def _starts(self) -> list[int]:
        # Recomputed lazily after an edit: typing sends many edits between two requests.
        if self._line_starts is None:
            starts = [0]
            index = self._text.find("\n")
            while index != -1:
                starts.append(index + 1)
                index = self._text.find("\n", index + 1)
            self._line_starts = starts
        return self._line_starts

    def offset_at(self, position: Position) -> int:
        """The Python string index of `position`; ProtocolError(out_of_range) if it is not in the text."""
        starts = self._starts()
        if position.line >= len(starts):
            raise ProtocolError(E_OUT_OF_RANGE, f"line {position.line} is past the end of the document "
                                f"({len(starts)} lines)")
        start = starts[position.line]
        end = starts[position.line + 1] - 1 if position.line + 1 < len(starts) else len(self._text)
        line = self._text[start:end]
        if line.isascii():
            if position.character > len(line):
                raise ProtocolError(E_OUT_OF_RANGE, f"character {position.character} is past the end of line "
                                    f"{position.line} ({len(line)} UTF-16 units)")
            return start + position.character
        units = 0
        for index, char in enumerate(line):
            if units == position.character:
                return start + index
            units += 2 if ord(char) > 0xFFFF else 1
            if units > position.character:
                raise ProtocolError(E_OUT_OF_RANGE, f"character {position.character} on line {position.line} "
                                    "splits a surrogate pair")
        if units == position.character:
            return end
        raise ProtocolError(E_OUT_OF_RANGE, f"character {position.character} is past the end of line "
                            f"{position.line} ({units} UTF-16 units)")

    def span(self, where: Range) -> tuple[int, int]:
        start, end = self.offset_at(where.start), self.offset_at(where.end)
        if end < start:
            raise ProtocolError(E_OUT_OF_RANGE, "range end is before its start")
        return start, end

    def apply(self, edits: tuple[TextEdit, ...]) -> int:
        """Apply edits in order (each against the result of the previous), all or nothing."""
        text = self._text
        scratch = Document.__new__(Document)
        scratch.max_chars, scratch._text, scratch._line_starts, scratch.version = self.max_chars, text, None, 0
        for edit in edits:
            if edit.range is None:
                text = edit.text
            else:
                start, end = scratch.span(edit.range)
                text = text[:start] + edit.text + text[end:]
            if len(text) > self.max_chars:
                raise ProtocolError(E_TOO_LARGE, f"the edit would make the document {len(text)} characters; "
                                    f"the limit is {self.max_chars}")
            scratch._text, scratch._line_starts = text, None
        self._text, self._line_starts = text, None
        self.version += 1
        return self.version
