"""A session's document: text addressed by (line, UTF-16 character) positions.

Positions count UTF-16 code units, as LSP and JavaScript strings do, so a browser can send
`textarea.selectionStart`-derived positions without converting. Lines end at "\\n" only;
a "\\r" is an ordinary character (browsers normalise textarea line ends to "\\n").
Out-of-range positions are refused rather than clamped: a client whose copy has drifted
from the server's should learn it at once, not get a completion spliced in the wrong place.
The mapping itself is the engine's one position codec (engine/text.py).
"""
from __future__ import annotations

from engine.text import NEWLINE, UTF16, PositionOutOfRange, TextIndex

from .protocol import E_OUT_OF_RANGE, E_TOO_LARGE, Position, ProtocolError, Range, TextEdit


class Document:
    def __init__(self, text: str, *, max_chars: int) -> None:
        self.max_chars = max_chars
        if len(text) > max_chars:
            raise ProtocolError(E_TOO_LARGE, f"document has {len(text)} characters; the limit is {max_chars}")
        self._index = TextIndex(text, NEWLINE)  # built lazily: typing sends many edits between two requests
        self.version = 0  # bumped by every accepted edit message

    @property
    def text(self) -> str:
        return self._index.text

    def offset_at(self, position: Position) -> int:
        """The Python string index of `position`; ProtocolError(out_of_range) if it is not in the text."""
        return _exact_offset(self._index, position)

    def span(self, where: Range) -> tuple[int, int]:
        return _span(self._index, where)

    def apply(self, edits: tuple[TextEdit, ...]) -> int:
        """Apply edits in order (each against the result of the previous), all or nothing."""
        index = self._index
        for edit in edits:
            if edit.range is None:
                text = edit.text
            else:
                start, end = _span(index, edit.range)
                text = index.text[:start] + edit.text + index.text[end:]
            if len(text) > self.max_chars:
                raise ProtocolError(E_TOO_LARGE, f"the edit would make the document {len(text)} characters; "
                                    f"the limit is {self.max_chars}")
            index = TextIndex(text, NEWLINE)
        self._index = index
        self.version += 1
        return self.version


def _exact_offset(index: TextIndex, position: Position) -> int:
    try:
        return index.exact_offset(position.line, position.character, UTF16)
    except PositionOutOfRange as error:
        raise ProtocolError(E_OUT_OF_RANGE, str(error)) from None


def _span(index: TextIndex, where: Range) -> tuple[int, int]:
    start, end = _exact_offset(index, where.start), _exact_offset(index, where.end)
    if end < start:
        raise ProtocolError(E_OUT_OF_RANGE, "range end is before its start")
    return start, end
