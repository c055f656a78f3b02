"""Text sync: positions in UTF-16 (and UTF-8/UTF-32) code units, CRLF, tabs, emoji,
and a property test of random incremental edits against a reference string."""
from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsprotocol import types
from pygls.protocol import default_converter

from infill_lsp.server import InfillServer
from infill_lsp.text import UTF8, UTF16, UTF32, TextDocument

_BREAK = re.compile(r"\r\n|\r|\n")


def _document(text: str) -> TextDocument:
    return TextDocument("file:///t.py", "python", 1, text)


def _ref_position(text: str, offset: int, encoding: str) -> types.Position:
    """Reference: count breaks with a regex, measure the column by encoding the bytes."""
    starts = [0] + [m.end() for m in _BREAK.finditer(text)]
    line = max(i for i, start in enumerate(starts) if start <= offset)
    column_text = text[starts[line]:offset]
    if encoding == UTF16:
        units = len(column_text.encode("utf-16-le", "surrogatepass")) // 2
    elif encoding == UTF8:
        units = len(column_text.encode("utf-8", "surrogatepass"))
    else:
        units = len(column_text)
    return types.Position(line=line, character=units)


def test_emoji_counts_two_utf16_units_and_one_utf32_unit() -> None:
    doc = _document("x = '😀é'; y\n")
    offset_of_y = doc.text.index("y")
    assert doc.position_at(offset_of_y, UTF16) == types.Position(0, 11)
    assert doc.position_at(offset_of_y, UTF32) == types.Position(0, 10)
    assert doc.position_at(offset_of_y, UTF8) == types.Position(0, 14)
    assert doc.offset_at(types.Position(0, 11), UTF16) == offset_of_y
    # A column inside the surrogate pair rounds down to the emoji itself.
    assert doc.offset_at(types.Position(0, 6), UTF16) == doc.text.index("😀")


def test_crlf_lines_and_columns_past_the_end() -> None:
    doc = _document("a\r\nbc\r\n\tz\rlast")
    assert doc.line_count == 4
    assert doc.line_text(1) == "bc"
    assert doc.offset_at(types.Position(1, 0)) == 3
    # Past the end of a line = the end of that line, before its "\r\n".
    assert doc.offset_at(types.Position(1, 99)) == 5
    assert doc.offset_at(types.Position(2, 1)) == doc.text.index("z")  # a tab is one unit
    assert doc.offset_at(types.Position(3, 2)) == len(doc.text) - 2  # lone "\r" breaks too
    assert doc.offset_at(types.Position(40, 0)) == len(doc.text)
    assert doc.position_at(len(doc.text)) == types.Position(3, 4)


def test_form_feed_and_line_separator_are_not_line_breaks() -> None:
    doc = _document("a\x0cb\u2028c\nd")
    assert doc.line_count == 2
    assert doc.offset_at(types.Position(1, 0)) == doc.text.index("d")


def test_ranged_change_inserts_across_crlf_and_emoji() -> None:
    doc = _document("def f():\r\n    return '😀'\r\n")
    start = types.Position(1, 14)  # after the emoji: "    return '" is 12 units, the emoji 2
    doc.apply_change(
        types.TextDocumentContentChangePartial(range=types.Range(start, start), text="!"), UTF16
    )
    assert doc.text == "def f():\r\n    return '😀!'\r\n"


_PIECES = ["a", "bc", " ", "\t", "\n", "\r\n", "\r", "é", "😀", "中", "\u2028", "\x0c", "()"]
_texts = st.lists(st.sampled_from(_PIECES), max_size=30).map("".join)


def _snap(text: str, offset: int) -> int:
    """Offsets between "\\r" and "\\n" have no LSP position: move them before the "\\r"."""
    if 0 < offset < len(text) and text[offset - 1] == "\r" and text[offset] == "\n":
        return offset - 1
    return offset


@st.composite
def _sessions(draw):
    text = draw(_texts)
    edits = []
    reference = text
    for _ in range(draw(st.integers(1, 12))):
        a = _snap(reference, draw(st.integers(0, len(reference))))
        b = _snap(reference, draw(st.integers(0, len(reference))))
        start, end = min(a, b), max(a, b)
        new = draw(_texts)
        edits.append((start, end, new))
        reference = reference[:start] + new + reference[end:]
    return text, edits


@pytest.mark.parametrize("encoding", [UTF16, UTF8])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(session=_sessions())
def test_random_incremental_edits_match_reference(encoding: str, session) -> None:
    """Through the server's own didOpen/didChange handlers, JSON structured as pygls does."""
    text, edits = session
    server = InfillServer()
    server.documents.encoding = encoding
    converter = default_converter()
    features = server.protocol.fm.features
    uri = "file:///prop.py"
    features[types.TEXT_DOCUMENT_DID_OPEN](
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "python", 1, text))
    )
    reference = text
    for version, (start, end, new) in enumerate(edits, start=2):
        raw = {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [
                {
                    "range": {
                        "start": converter.unstructure(_ref_position(reference, start, encoding)),
                        "end": converter.unstructure(_ref_position(reference, end, encoding)),
                    },
                    "text": new,
                }
            ],
        }
        features[types.TEXT_DOCUMENT_DID_CHANGE](converter.structure(raw, types.DidChangeTextDocumentParams))
        reference = reference[:start] + new + reference[end:]
        assert server.documents.get(uri).text == reference
    assert server.documents.get(uri).version == len(edits) + 1


@settings(max_examples=200, deadline=None)
@given(text=_texts, data=st.data())
def test_position_round_trip(text: str, data) -> None:
    offset = _snap(text, data.draw(st.integers(0, len(text))))
    doc = _document(text)
    for encoding in (UTF8, UTF16, UTF32):
        position = doc.position_at(offset, encoding)
        assert position == _ref_position(text, offset, encoding)
        assert doc.offset_at(position, encoding) == offset
