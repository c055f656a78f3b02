"""The one position codec (engine/text.py) in each front end's dialect: LSP (clamped,
any line break), live (strict, "\\n" only, UTF-16), next-edit (code points), the CLI
(1-based)."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.text import ANY_BREAK, NEWLINE, UTF8, UTF16, UTF32, PositionOutOfRange, TextIndex, units_in

TEXT = "a😀b\r\nsecond\rthird\nlast"


def test_line_break_rules_differ_only_where_they_should() -> None:
    lsp, live = TextIndex(TEXT, ANY_BREAK), TextIndex(TEXT, NEWLINE)
    assert lsp.line_count == 4 and [lsp.line_text(i) for i in range(4)] == ["a😀b", "second", "third", "last"]
    assert live.line_count == 3 and live.line_text(0) == "a😀b\r" and live.line_text(1) == "second\rthird"


def test_clamped_and_strict_lookups() -> None:
    index = TextIndex(TEXT, NEWLINE)
    assert index.offset_at(0, 99, UTF16) == index.exact_offset(0, 5, UTF16) == len("a😀b\r")
    assert index.offset_at(99, 0) == len(TEXT) and index.offset_at(-1, 0) == 0
    for line, character, words in [(9, 0, "past the end of the document"), (0, 6, "past the end of line 0 (5 UTF-16 units)"), (0, 2, "splits a surrogate pair")]:
        with pytest.raises(PositionOutOfRange, match=words.replace("(", r"\(").replace(")", r"\)")):
            index.exact_offset(line, character, UTF16)
    assert index.exact_offset(0, 3, UTF16) == 2 and index.exact_offset(0, 2, UTF32) == 2


@given(st.text(alphabet=st.sampled_from(["a", "é", "😀", "\n", "\r", " "]), max_size=40), st.data())
def test_position_round_trips_in_every_dialect(text: str, data: st.DataObject) -> None:
    offset = data.draw(st.integers(0, len(text)))
    for breaks in (ANY_BREAK, NEWLINE):
        index = TextIndex(text, breaks)
        for encoding in (UTF8, UTF16, UTF32):
            line, character = index.position_at(offset, encoding)
            back = index.offset_at(line, character, encoding)
            # Offsets inside a "\r\n" pair belong to the end of the line before it.
            assert back == offset or (breaks is ANY_BREAK and text[back : offset + 1] in ("\r\n", "\r"))
            assert character == units_in(index.line_text(line)[: back - index.line_starts[line]], encoding)


def test_the_cli_counts_lines_as_editors_show_them() -> None:
    from engine.types import InfillError
    from infill_lsp.cli import split_at

    assert split_at("ab\r\ncd\rend", 2, 2) == ("ab\r\nc", "d\rend")
    assert split_at("ab\r\ncd\rend", 3, 4) == ("ab\r\ncd\rend", "")
    with pytest.raises(InfillError, match="column 4 is outside line 2"):
        split_at("ab\r\ncd\rend", 2, 4)
    with pytest.raises(InfillError, match=r"line 4 is outside the file \(1..3\)"):
        split_at("ab\r\ncd\rend", 4, 1)
