"""The bracket and quote scan (grammars/lexical.py `_bracket_events`) jumps from one place
where something starts to the next with a regular expression; it must report exactly what
a scan that looks at every character does, for every language's data. The reference scan
below is that character-by-character reading, kept here as the oracle."""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from grammars.lexical import _bracket_events, open_brackets, open_multiline_string
from grammars.registry import get, languages

ROOT = Path(__file__).resolve().parents[1]


def _reference_events(spec, text: str):
    openers, closers = spec.openers, spec.closers
    quotes = sorted(spec.quotes, key=lambda pair: -len(pair[0]))
    i, n = 0, len(text)
    while i < n:
        if spec.line_comment and text.startswith(spec.line_comment, i):
            nl = text.find("\n", i)
            i = n if nl < 0 else nl
            continue
        if spec.block_comment and text.startswith(spec.block_comment[0], i):
            close = text.find(spec.block_comment[1], i + len(spec.block_comment[0]))
            i = n if close < 0 else close + len(spec.block_comment[1])
            continue
        quote = next((q for q in quotes if text.startswith(q[0], i)), None)
        if quote is not None:
            opened, close, i = i, quote[1], i + len(quote[0])
            multiline, terminated = len(close) > 1 or close == "`", False
            while i < n:
                if text[i] == "\\":
                    i += 2
                elif text.startswith(close, i):
                    i, terminated = i + len(close), True
                    break
                elif text[i] == "\n" and not multiline:
                    break
                else:
                    i += 1
            i = min(i, n)
            if not terminated:
                yield ("unterminated", quote[0], opened)
            continue
        if text[i] in openers:
            yield ("open", text[i], i)
        elif text[i] in closers:
            yield ("close", text[i], i)
        i += 1


def _texts() -> list[str]:
    rng = random.Random(34)
    sources = sorted(ROOT.glob("grammars/*.py")) + sorted(ROOT.glob("editors/vscode/src/*.ts")) + sorted(ROOT.glob("infill_lsp/static/*.js"))
    files = [path.read_text(encoding="utf-8", errors="replace")[:6000] for path in sources[:24]]
    texts = list(files)
    for text in files:  # cut anywhere: inside strings, comments, escapes
        for _ in range(4):
            start = rng.randrange(len(text) + 1)
            texts.append(text[start : start + rng.randrange(400)])
    alphabet = "()[]{}'\"`#/*\\\n ab${}<>=-"
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randrange(50))) for _ in range(1500)]
    return texts


TEXTS = _texts()


@pytest.mark.parametrize("language", [spec.name for spec in languages()])
def test_the_scan_reports_what_reading_every_character_reports(language):
    spec = get(language)
    for text in TEXTS:
        expected = list(_reference_events(spec, text))
        assert list(_bracket_events(spec, text, offsets=True)) == expected, repr(text[:120])
        assert list(_bracket_events(spec, text)) == [event[:2] for event in expected], repr(text[:120])


def test_comments_strings_and_escapes_hide_brackets():
    python = get("python")
    text = "f(a, '(', \"[\\\"\", # ( [\n g["
    assert open_brackets(python, text) == [("(", 1), ("[", len(text) - 1)]
    assert open_multiline_string(python, 'x = 1\ndoc = """open ( [\nstill') == ('"""', 12)
    javascript = get("javascript")
    text = "a(/* ( */ `${b}` // {\n, ["
    assert open_brackets(javascript, text) == [("(", 1), ("[", len(text) - 1)]
    assert open_brackets(javascript, "a(')") is None  # a one-line string left open
