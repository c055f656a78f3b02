"""The fuzzer's own model of a document: text, version and LSP positions.

Written independently of infill_lsp/text.py (it encodes each line and counts code units
instead of walking characters), so that agreement between the two means something. The
conventions are the spec's, plus the two the server documents for what the spec leaves
open: a line past the last one means the end of the document, and a reversed range is
taken as the same span.
"""
from __future__ import annotations

import hashlib
import re

_BREAK = re.compile(r"\r\n|\r|\n")
_UNIT_BYTES = {"utf-8": 1, "utf-16": 2, "utf-32": 4}
_CODEC = {"utf-8": "utf-8", "utf-16": "utf-16-le", "utf-32": "utf-32-le"}


def encode_units(text: str, encoding: str) -> bytes:
    return text.encode(_CODEC[encoding], "surrogatepass")


def unit_count(text: str, encoding: str) -> int:
    return len(encode_units(text, encoding)) // _UNIT_BYTES[encoding]


def lines_of(text: str) -> list[tuple[int, int]]:
    """(start, end) offsets of each line's content, line breaks excluded."""
    spans, start = [], 0
    for match in _BREAK.finditer(text):
        spans.append((start, match.start()))
        start = match.end()
    spans.append((start, len(text)))
    return spans


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class ReferenceDocument:
    def __init__(self, uri: str, language_id: str, version: int, text: str) -> None:
        self.uri, self.language_id, self.version, self.text = uri, language_id, version, text

    def offset(self, line: int, character: int, encoding: str) -> int:
        spans = lines_of(self.text)
        if line < 0:
            return 0
        if line >= len(spans):
            return len(self.text)
        start, end = spans[line]
        return start + _index_at(self.text[start:end], character, encoding)[0]

    def apply(self, change: dict, encoding: str) -> None:
        if "range" not in change:
            self.text = change["text"]
            return
        rng = change["range"]
        a = self.offset(rng["start"]["line"], rng["start"]["character"], encoding)
        b = self.offset(rng["end"]["line"], rng["end"]["character"], encoding)
        a, b = min(a, b), max(a, b)
        self.text = self.text[:a] + change["text"] + self.text[b:]

    def line_units(self, encoding: str) -> list[int]:
        return [unit_count(self.text[s:e], encoding) for s, e in lines_of(self.text)]


def _index_at(content: str, character: int, encoding: str) -> tuple[int, bool]:
    """The index in `content` of column `character` (rounded down to a whole character;
    the line's end when past it) and whether the column fell exactly on a boundary."""
    if content.isascii():
        return min(character, len(content)), character <= len(content)
    units = 0
    for index, char in enumerate(content):
        if units == character:
            return index, True
        units += unit_count(char, encoding)
        if units > character:
            return index, False
    return len(content), units == character


def position_problem(text: str, position: dict, encoding: str) -> str | None:
    """Why `position` is not a place in `text` (None when it is one)."""
    line, character = position.get("line"), position.get("character")
    if not isinstance(line, int) or not isinstance(character, int) or line < 0 or character < 0:
        return f"not a position: {position}"
    spans = lines_of(text)
    if line >= len(spans):
        return f"line {line} past the last line {len(spans) - 1}"
    start, end = spans[line]
    content = text[start:end]
    if character > unit_count(content, encoding):
        return f"character {character} past the end of line {line} ({unit_count(content, encoding)} units)"
    if not _index_at(content, character, encoding)[1]:
        return f"character {character} of line {line} falls inside a character"
    return None
