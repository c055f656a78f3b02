"""The language of a request (engine/language.py) and language detection (grammars/detect.py):
issue 26, defects 4 (unknown languages are refused, by one function) and 8 (a request
with no language gets one from its file name, else from detection, else none)."""
from __future__ import annotations

import pytest

import grammars
from engine.language import LanguageChoice, UnknownLanguage, check_language, resolve_language
from engine.types import InfillError
from grammars.detect import detect, split_pieces

PYTHON = 'import os\n\n\ndef walk(root):\n    for name in os.listdir(root):\n        if name.startswith("."):\n            continue\n        yield name\n'
GO = "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tx := 1\n\tif x > 0 {\n\t\tfmt.Println(x)\n\t}\n}\n"
RUST = "use std::collections::HashMap;\n\nfn count(words: &[&str]) -> HashMap<&str, usize> {\n    let mut seen = HashMap::new();\n    for w in words {\n        *seen.entry(*w).or_insert(0) += 1;\n    }\n    seen\n}\n"
JAVASCRIPT = "const path = require('path');\n\nfunction join(a, b) {\n  if (a === undefined) {\n    return b;\n  }\n  return path.join(a, b);\n}\n\nmodule.exports = { join };\n"
TYPESCRIPT = "interface Point {\n  x: number;\n  y: number;\n}\n\nexport function norm(p: Point): number {\n  const s: number = p.x * p.x + p.y * p.y;\n  return Math.sqrt(s);\n}\n"
TSX = "interface Props {\n  name: string;\n}\n\nexport function Hello({ name }: Props): JSX.Element {\n  const shout: string = name.toUpperCase();\n  return <div className=\"hello\">{shout}</div>;\n}\n"


def test_check_language_is_the_one_rule_and_names_the_known_ones() -> None:
    assert check_language("python") == "python"
    assert check_language("typescriptreact") == "tsx"  # an LSP id is a name too
    with pytest.raises(UnknownLanguage) as info:
        check_language("cobol")
    assert isinstance(info.value, InfillError)  # the input's fault: every front end shows it as such
    message = str(info.value)
    assert "'cobol'" in message and all(spec.name in message for spec in grammars.languages())


def test_resolution_order_request_then_file_name_then_detection() -> None:
    assert resolve_language("rust", filename="a.py", prefix=PYTHON, detect=True) == LanguageChoice("rust", "request")
    assert resolve_language(None, filename="src/a.go", prefix=PYTHON, detect=True) == LanguageChoice("go", "filename")
    detected = resolve_language(None, filename="notes.txt", prefix=PYTHON, detect=True)  # unknown extension: detect
    assert (detected.name, detected.source) == ("python", "detected")
    assert resolve_language(None, prefix=PYTHON) == LanguageChoice(None, "none")  # detection only when asked
    with pytest.raises(UnknownLanguage):
        resolve_language("cobol", prefix=PYTHON, detect=True)  # a wrong name is refused, never detected over


@pytest.mark.parametrize("code, language", [(PYTHON, "python"), (GO, "go"), (RUST, "rust"),
                                            (JAVASCRIPT, "javascript"), (TYPESCRIPT, "typescript"), (TSX, "tsx")])
def test_detection_names_each_language_from_a_cursor_in_it(code: str, language: str) -> None:
    cut = code.index("\n", len(code) // 2) + 1  # a cursor at a line start in the middle
    found = detect(code[:cut], code[cut:])
    assert found.language == language, found


def test_detection_declines_rather_than_guesses() -> None:
    assert detect("x = 1\n", "").language is None  # valid Python, JavaScript and more
    assert detect("The quick brown fox jumps over the lazy dog.\nIt was not amused.\n", "").language is None
    assert detect("", "").language is None
    assert detect("#!/usr/bin/env python3\n", "x = 1\n").language == "python"  # a shebang says it outright
    assert detect("#!/usr/bin/env -S node --no-warnings\n", "").language == "javascript"


def test_pieces_are_cut_at_blank_lines_and_dedented() -> None:
    assert split_pieces("    a\n      b\n\n\n  c\n") == ["a\n  b\n", "c\n"]


def test_detection_accuracy_on_a_fixed_sample_of_held_out_cursors() -> None:
    """Issue 26 (8): how often detection is right, on items the knobs were not chosen on:
    the first 8 set-aside cursors per language of the unseen benchmark (Python, JavaScript,
    TypeScript, Go, Rust) and the first 8 held-out cursors per language of bench_data.
    The full figures are in docs/languages.md (`python -m lab.language_detect`); this
    sample must stay near them: most right, and a wrong language (a constraint that
    would refuse good code) rare."""
    pytest.importorskip("lab.syntax_bench.unseen_tasks")
    from lab.language_detect import items

    sample = []
    for part in ("aside", "heldout"):
        seen: dict[str, int] = {}
        for item in items((part,), per_language=8):
            if seen.get(item.language, 0) < 8:
                seen[item.language] = seen.get(item.language, 0) + 1
                sample.append(item)
    assert len(sample) == 8 * 5 + 8 * 2
    answers = [(item.language, detect(item.prefix, item.suffix).language) for item in sample]
    right = sum(1 for want, got in answers if got == want)
    wrong = [(want, got) for want, got in answers if got is not None and got != want]
    assert right >= 0.8 * len(sample), answers
    assert len(wrong) <= 0.05 * len(sample), wrong
