"""The embedded model's tokenizer round-trips text byte-exactly."""
import json
from pathlib import Path

import pytest

import engine

SAMPLES = [
    "def f(x):\n    return x + 1\n",
    "naïve café — 日本語のテキスト and emoji 🎉👩‍💻\n",
    "\tmixed\ttabs  and   spaces \t\n\r\n\r\nCRLF lines\r\n",
    "   \n\n\n    trailing whitespace    \n\x0c form feed \u2028 line separator\u00a0nbsp",
    "",
    "x" * 5000,
    "zero\u200bwidth and combining e\u0301 and RTL \u05e9\u05dc\u05d5\u05dd",
]


@pytest.mark.parametrize("text", SAMPLES)
def test_round_trip_is_byte_exact(tok, text):
    ids = tok.encode(text)
    assert tok.decode(ids).encode("utf-8") == text.encode("utf-8")
    assert tok.mask_id not in ids and tok.eom_id not in ids


def test_round_trip_on_real_source_files(tok):
    root = Path(engine.__file__).parent
    for path in sorted(root.rglob("*.py"))[:40]:
        text = path.read_text(encoding="utf-8")
        assert tok.decode(tok.encode(text)) == text, path


def test_newlines_are_token_boundaries(tok):
    # A cursor at a line start never splits a token: prefix + middle tokenize separately
    # exactly as the whole text does.
    text = "class A:\n    def f(self):\n        return 1\n"
    first, rest = text.split("\n", 1)
    assert tok.encode(first + "\n") + tok.encode(rest) == tok.encode(text)


def test_special_token_strings_in_user_text_stay_text(tok):
    text = "html = '<mask><eom><bos><pad>'\n"
    ids = tok.encode(text)
    assert not set(ids) & {tok.mask_id, tok.eom_id, tok.bos_id, tok.pad_id}
    assert tok.decode(ids) == text


def test_special_tokens_are_distinct(tok):
    assert len({tok.mask_id, tok.eom_id, tok.pad_id, tok.bos_id}) == 4
    assert tok.decode([tok.mask_id, tok.eom_id]) == ""


def test_lone_surrogates_are_replaced_one_for_one_before_the_model_sees_them(tiny_engine) -> None:
    # JSON's "\udc80" escape gives Python a lone surrogate, which neither the tokenizer nor
    # tree-sitter accepts (the LSP server used to fail every completion near one).
    from engine.next_edit import next_edit
    from engine.tokenizer import replace_lone_surrogates

    assert replace_lone_surrogates("a\udc80b\ud800") == "a\ufffdb\ufffd"
    assert replace_lone_surrogates("emoji 😀 stays") == "emoji 😀 stays"
    result = tiny_engine.infill("name = '\udc80'\ndef f(x):\n    return ", "\n", language="python", max_tokens=3)
    assert isinstance(result.middle, str)
    edits = next_edit(tiny_engine, "a = '\udc80'\nb = a\n", 0, [("a = 1\n", "a = '\udc80'\n")])
    assert isinstance(edits.edits, list)
