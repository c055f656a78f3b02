"""Text positions: the one codec between (line, character) positions and string offsets.

Every front end addresses text by (line, character) pairs, each in its own dialect:

- LSP: `character` counts code units of the negotiated encoding (UTF-16 unless the
  client offers UTF-8 or UTF-32); lines end at "\\r\\n", "\\r" or "\\n"; a position past
  the end of its line or of the document is clamped (the spec says so).
- the live protocol: UTF-16 units, lines end at "\\n" only (browsers normalise textarea
  line ends), and a position outside the text is refused, not clamped: a client whose
  copy drifted must learn it at once.
- next-edit and the `infill next-edit-batch` contract: code points (UTF-32), "\\n" lines.
- `infill complete --line L --column C`: 1-based code points, lines as editors show them.

They all go through `TextIndex`; the dialect is its arguments. Python's `str.splitlines`
is never used: it also splits at form feeds, U+2028 and others, which would put every
later line off by one for a client. Pure Python, no torch: front ends import it freely.
"""
from __future__ import annotations

import re
from bisect import bisect_right
from typing import Optional

UTF8 = "utf-8"
UTF16 = "utf-16"
UTF32 = "utf-32"

ANY_BREAK = re.compile(r"\r\n|\r|\n")  # LSP: "\r\n", "\r" and "\n" all end a line
NEWLINE = re.compile(r"\n")  # the live protocol, next-edit: "\r" is an ordinary character


class PositionOutOfRange(ValueError):
    """A strict lookup of a position that is not in the text. The message says where it
    falls outside, in the units the caller used."""


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
    """Index into `line` (no line break) of a column, clamped: a column past the end means
    the end of the line; one inside a multi-unit character (half of a surrogate pair)
    rounds down to that character."""
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


def exact_column_index(line: str, column: int, encoding: str) -> Optional[int]:
    """Index into `line` of a column that falls exactly on a character boundary inside
    the line (its end included); None when it is past the end or splits a character."""
    if column < 0:
        return None
    if encoding == UTF32 or line.isascii():
        return column if column <= len(line) else None
    units = 0
    for index, char in enumerate(line):
        if units == column:
            return index
        units += code_units(char, encoding)
        if units > column:
            return None
    return len(line) if units == column else None


class TextIndex:
    """One text and the index of its line starts (built lazily, once per text).

    `breaks` is the line-break rule: ANY_BREAK (LSP, editors) or NEWLINE (the live
    protocol, next-edit)."""

    def __init__(self, text: str, breaks: re.Pattern[str] = ANY_BREAK) -> None:
        self.text = text
        self.breaks = breaks
        self._line_starts: Optional[list[int]] = None

    @property
    def line_starts(self) -> list[int]:
        """Offset of the first character of every line."""
        if self._line_starts is None:
            self._line_starts = [0] + [m.end() for m in self.breaks.finditer(self.text)]
        return self._line_starts

    @property
    def line_count(self) -> int:
        return len(self.line_starts)

    def line_text(self, line: int) -> str:
        """Text of `line` without its line break."""
        starts = self.line_starts
        start = starts[line]
        end = starts[line + 1] if line + 1 < len(starts) else len(self.text)
        # Strip the break that ends this line ("\r\n", "\r" or "\n" under ANY_BREAK).
        if end > start and self.text[end - 1] == "\n":
            end -= 1
        if end > start and self.text[end - 1] == "\r" and self.breaks is ANY_BREAK:
            end -= 1
        return self.text[start:end]

    def offset_at(self, line: int, character: int, encoding: str = UTF16) -> int:
        """Offset of a position, clamped into the text (the LSP rule): a line before the
        first means 0, a line past the last means the end of the text, a character past
        the end of its line means the end of that line (before its break)."""
        if line < 0:
            return 0
        if line >= self.line_count:
            return len(self.text)
        return self.line_starts[line] + column_to_index(self.line_text(line), character, encoding)

    def exact_offset(self, line: int, character: int, encoding: str = UTF16) -> int:
        """Offset of a position that must lie in the text; PositionOutOfRange otherwise."""
        if line < 0 or line >= self.line_count:
            raise PositionOutOfRange(f"line {line} is past the end of the document ({self.line_count} lines)")
        text = self.line_text(line)
        index = exact_column_index(text, character, encoding)
        if index is not None:
            return self.line_starts[line] + index
        if character < 0:
            raise PositionOutOfRange(f"character {character} on line {line} is negative")
        length = units_in(text, encoding)
        if character > length:
            raise PositionOutOfRange(f"character {character} is past the end of line {line} ({length} {_unit_name(encoding)})")
        raise PositionOutOfRange(f"character {character} on line {line} splits a surrogate pair")

    def position_at(self, offset: int, encoding: str = UTF16) -> tuple[int, int]:
        """(line, character) of an offset, clamped into the text. An offset between "\\r"
        and "\\n" belongs to the end of the line before the break."""
        offset = max(0, min(offset, len(self.text)))
        line = bisect_right(self.line_starts, offset) - 1
        line_text = self.line_text(line)
        column_chars = min(offset - self.line_starts[line], len(line_text))
        return line, units_in(line_text[:column_chars], encoding)


def _unit_name(encoding: str) -> str:
    return {UTF16: "UTF-16 units", UTF8: "UTF-8 bytes"}.get(encoding, "characters")
