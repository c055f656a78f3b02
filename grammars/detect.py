"""Which registered language a piece of code is in, from the text around a cursor.

For requests that name no language and no file (OpenAI-style and most FIM clients). The
method is small enough to explain in a sentence per step (docs/languages.md has the
accuracy it reaches, measured by `python -m lab.language_detect`):

1. A shebang on the prefix's first line (`#!/usr/bin/env python3`) names the language
   outright (each language's `[detect] shebang` words).
2. Otherwise the text around the cursor (a bounded window) is cut into pieces at blank
   lines, each piece loses its common indentation, and every grammar parses every piece
   on its own: a window that starts inside a docstring or a class body then spoils one
   piece, not the whole parse. A language's *parse share* is the share of the window's
   bytes that its grammar parses without an ERROR node: a quarter of it (BYTE_SHARE)
   counts bytes outside ERROR nodes, the rest only clean pieces (no ERROR, and no MISSING
   token but at the piece's end: a piece may well stop before its closing brace).
3. A small keyword vote (`[detect] cues`: regular expressions such as `\\bdef \\w+\\(`,
   `:=`, `\\blet mut\\b`) adds at most CUE_WEIGHT for the family whose cues match most.
4. The best score wins if it is at least MIN_SCORE and beats every language of another
   family by MARGIN; otherwise the answer is None (run unconstrained rather than guess).
   A language that `extends` another (TypeScript extends JavaScript, TSX extends
   TypeScript) parses its base's code as well as the base does, so it is one family with
   it, and it wins only by scoring higher (FAMILY_MARGIN): plain JavaScript stays JavaScript.

The grammars know nothing of the engine: the engine's language resolution
(engine/language.py) calls `detect` only for requests that gave neither a language nor a
file name.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Optional

import tree_sitter as ts

from .registry import LanguageSpec, languages

PREFIX_CHARS = 3000  # the window detection reads: the end of the prefix ...
SUFFIX_CHARS = 1500  # ... and the start of the suffix (time stays bounded on huge files)
# The knobs, chosen by `python -m lab.language_detect --sweep` on the tune items only (the
# grid is flat near the top: 98.9% mean accuracy on them; of equals, the fewest wrong).
CUE_WEIGHT = 0.3  # at most this much of a score comes from the keyword vote
MIN_SCORE = 0.3  # below this the best language explains too little of the text
MARGIN = 0.1  # ... and it must beat every other family by this much
BYTE_SHARE = 0.25  # the parse share's weight on bytes outside ERROR nodes (the rest: clean pieces)
# An extension (TypeScript) wins over its base (JavaScript) by scoring more than this
# higher. 0: any evidence picks the extension. The errors are not alike: TypeScript's
# grammar accepts JavaScript, so JavaScript code constrained as TypeScript loses nothing,
# while TypeScript code constrained as JavaScript has its type annotations vetoed. A margin
# of 0.01 (on the tune items JavaScript scored at most 0.002 higher as TypeScript) turned
# 11 harmless errors on the set-aside JavaScript items into 9 harmful ones on TypeScript
# (docs/languages.md), so there is none.
FAMILY_MARGIN = 0.0


@dataclass(frozen=True)
class Detection:
    """The answer, with what it rests on (so a caller can show why)."""

    language: Optional[str]  # a registry name, or None when not confident
    reason: str  # "shebang", "parse", or why there is no answer
    scores: dict[str, float] = field(default_factory=dict)  # per language, higher is better


@dataclass(frozen=True)
class Params:
    """The knobs of step 2-4 (the lab's sweep varies them; the product uses the defaults)."""

    cue_weight: float = CUE_WEIGHT
    min_score: float = MIN_SCORE
    margin: float = MARGIN
    byte_share: float = BYTE_SHARE
    family_margin: float = FAMILY_MARGIN


def detect(prefix: str, suffix: str = "", params: Params = Params()) -> Detection:
    """The language of the code around a cursor, or Detection(None, ...) when unsure."""
    by_shebang = _shebang_language(prefix)
    if by_shebang is not None:
        return Detection(by_shebang, "shebang")
    text = window_text(prefix, suffix)
    pieces = [piece.encode("utf-8", "surrogatepass") for piece in split_pieces(text)]
    if not pieces:
        return Detection(None, "no code around the cursor")
    specs = languages()
    parse = {spec.name: parse_share(spec, pieces, params.byte_share) for spec in specs}
    cues = cue_votes(specs, text)
    scores = {name: round(parse[name] + params.cue_weight * cues[name], 4) for name in parse}
    return decide(specs, scores, params)


def decide(specs: list[LanguageSpec], scores: dict[str, float], params: Params = Params()) -> Detection:
    """Step 4: the best-scoring language if it is confident, else None."""
    family = {spec.name: _family(spec.name) for spec in specs}
    base_of = {spec.name: spec.detect_extends for spec in specs}
    best = max(scores, key=lambda name: (scores[name], -_depth(name)))
    # Within a family the base wins ties, and an extension must beat it by family_margin.
    while base_of[best] and scores[best] - scores[base_of[best]] <= params.family_margin:
        best = base_of[best]
    others = [scores[name] for name in scores if family[name] != family[best]]
    runner_up = max(others, default=0.0)
    if scores[best] < params.min_score:
        return Detection(None, f"no language parses the text (best: {best} {scores[best]:.2f})", scores)
    if scores[best] - runner_up < params.margin:
        second = max((n for n in scores if family[n] != family[best]), key=lambda n: scores[n])
        return Detection(None, f"ambiguous: {best} {scores[best]:.2f} vs {second} {runner_up:.2f}", scores)
    return Detection(best, "parse", scores)


def window_text(prefix: str, suffix: str) -> str:
    """The prefix's last PREFIX_CHARS from a line start and the suffix's first SUFFIX_CHARS
    up to a line end, joined where the cursor was."""
    head = prefix[-PREFIX_CHARS:]
    if len(prefix) > PREFIX_CHARS and "\n" in head:
        head = head[head.index("\n") + 1 :]
    tail = suffix[:SUFFIX_CHARS]
    if len(suffix) > SUFFIX_CHARS and "\n" in tail:
        tail = tail[: tail.rindex("\n") + 1]
    return head + tail


def split_pieces(text: str) -> list[str]:
    """The text cut at blank lines, each piece without its common indentation."""
    pieces: list[str] = []
    lines: list[str] = []
    for line in text.split("\n") + [""]:
        if line.strip():
            lines.append(line.rstrip("\r"))
            continue
        if lines:
            indent = min(len(l) - len(l.lstrip()) for l in lines)
            pieces.append("\n".join(l[indent:] for l in lines) + "\n")
            lines = []
    return pieces


def parse_share(spec: LanguageSpec, pieces: list[bytes], byte_share: float = BYTE_SHARE) -> float:
    """The share of the pieces' bytes the grammar parses without an ERROR node: a mix of
    bytes outside ERROR nodes and bytes in clean pieces (no ERROR, and no MISSING token
    but at the piece's end, where a closing bracket beyond the piece is expected)."""
    outside, clean = parse_figures(spec, pieces)
    return byte_share * outside + (1 - byte_share) * clean


def parse_figures(spec: LanguageSpec, pieces: list[bytes]) -> tuple[float, float]:
    """(share of bytes outside ERROR nodes, share of bytes in clean pieces)."""
    parser = ts.Parser(spec.ts_language())  # one per call: parsers are not shared across threads
    total = outside = clean = 0
    for piece in pieces:
        root = parser.parse(piece).root_node
        errors = error_bytes(root)
        total += len(piece)
        outside += len(piece) - errors
        clean += len(piece) if errors == 0 and not _missing_inside(root, len(piece.rstrip())) else 0
    return (outside / total, clean / total) if total else (0.0, 0.0)


def error_bytes(node: ts.Node) -> int:
    """Bytes inside ERROR nodes (outermost ones; MISSING tokens count nothing)."""
    if not node.has_error:
        return 0
    if node.is_error:
        return node.end_byte - node.start_byte
    return sum(error_bytes(child) for child in node.children)


def _missing_inside(node: ts.Node, end: int) -> bool:
    """Whether a MISSING token stands before `end` (the piece's last non-blank byte): a
    grammar that had to invent a `>` mid-piece (`<div>` read as a TypeScript cast) did
    not really parse it."""
    if not node.has_error:
        return False
    if node.is_missing:
        return node.start_byte < end
    return any(_missing_inside(child, end) for child in node.children)


def cue_votes(specs: list[LanguageSpec], text: str) -> dict[str, float]:
    """Each language's keyword matches over the most any language has (0..1). A language
    that extends another votes with its base's cues: cues tell families apart, and within
    a family only the grammar decides."""
    by_name = {spec.name: spec for spec in specs}
    counts = {}
    for spec in specs:
        root = by_name[_family(spec.name)]
        counts[spec.name] = sum(len(cue.findall(text)) for cue in _cues(root))
    most = max(counts.values(), default=0)
    return {name: (count / most if most else 0.0) for name, count in counts.items()}


def _shebang_language(prefix: str) -> Optional[str]:
    """The language a `#!` first line runs, by its interpreter's name (version digits off)."""
    if not prefix.startswith("#!"):
        return None
    words = prefix.split("\n", 1)[0][2:].split()
    if not words:
        return None
    program = words[0].rsplit("/", 1)[-1]
    if program == "env":  # `#!/usr/bin/env [-S] python3`: the program is the next non-option word
        program = next((word for word in words[1:] if not word.startswith("-")), "")
    program = program.rstrip("0123456789.")
    for spec in languages():
        if program in spec.detect_shebangs:
            return spec.name
    return None


def _family(name: str) -> str:
    spec = {s.name: s for s in languages()}[name]
    return _family(spec.detect_extends) if spec.detect_extends else name


def _depth(name: str) -> int:
    spec = {s.name: s for s in languages()}[name]
    return 1 + _depth(spec.detect_extends) if spec.detect_extends else 0


@lru_cache(maxsize=None)
def _cues(spec: LanguageSpec) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(cue, re.MULTILINE) for cue in spec.detect_cues)
