"""The language registry: one TOML data file per language, one query folder per grammar.

Adding a language is adding `languages/<name>.toml` (and `queries/<name>/*.scm`); no code
changes. The tree-sitter grammar itself comes from the official PyPI wheel named in the
data file (`grammar = { module = ..., function = ... }`).
"""
from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Optional

import tree_sitter as ts

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on Python 3.10
    import tomli as tomllib

PACKAGE_DIR = Path(__file__).resolve().parent
LANGUAGES_DIR = PACKAGE_DIR / "languages"
QUERIES_DIR = PACKAGE_DIR / "queries"


class UnknownLanguageError(KeyError):
    """Raised by `get` for a name that has no data file. Its message lists the known ones."""

    def __str__(self) -> str:  # KeyError would print the message in quotes
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class LanguageSpec:
    """Everything the constraint and the editors need to know about one language."""

    name: str
    display_name: str
    grammar_module: str
    grammar_function: str
    extensions: tuple[str, ...]
    lsp_ids: tuple[str, ...]
    brackets: tuple[tuple[str, str], ...]
    quotes: tuple[tuple[str, str], ...]
    line_comment: Optional[str] = None
    block_comment: Optional[tuple[str, str]] = None
    indent_sensitive: bool = False
    block_openers: tuple[str, ...] = ()
    indent_unit: str = "    "
    queries_name: str = ""  # folder under queries/ (defaults to `name`)
    # [detect]: what language detection (grammars/detect.py) reads besides the grammar.
    detect_cues: tuple[str, ...] = ()  # regular expressions typical of the language
    detect_shebangs: tuple[str, ...] = ()  # interpreter names on a `#!` line
    detect_extends: str = ""  # the language whose code this one's grammar also parses
    data_file: str = field(default="", compare=False)

    @property
    def openers(self) -> dict[str, str]:
        return {open_: close for open_, close in self.brackets}

    @property
    def closers(self) -> dict[str, str]:
        return {close: open_ for open_, close in self.brackets}

    def ts_language(self) -> ts.Language:
        """The tree-sitter Language from the grammar wheel (loaded once per process)."""
        return _load_ts_language(self.grammar_module, self.grammar_function)

    def query_text(self, kind: str) -> str:
        """The text of `queries/<queries_name>/<kind>.scm`, or "" when the grammar has none."""
        path = QUERIES_DIR / (self.queries_name or self.name) / f"{kind}.scm"
        return path.read_text(encoding="utf-8") if path.is_file() else ""

    def query(self, kind: str) -> Optional[ts.Query]:
        """The compiled query (cached), or None when the grammar has no such file."""
        return _compile_query(self, kind)


@lru_cache(maxsize=None)
def _load_ts_language(module: str, function: str) -> ts.Language:
    grammar = importlib.import_module(module)
    return ts.Language(getattr(grammar, function)())


@lru_cache(maxsize=None)
def _compile_query(spec: LanguageSpec, kind: str) -> Optional[ts.Query]:
    text = spec.query_text(kind)
    if not text.strip():
        return None
    return ts.Query(spec.ts_language(), text)


def _pairs(raw: list) -> tuple[tuple[str, str], ...]:
    return tuple((str(a), str(b)) for a, b in raw)


def _spec_from_file(path: Path) -> LanguageSpec:
    with path.open("rb") as handle:
        data = tomllib.load(handle)
    try:
        grammar = data["grammar"]
        block_comment = data.get("block_comment")
        detect = data.get("detect", {})
        return LanguageSpec(
            name=data["name"],
            display_name=data.get("display_name", data["name"]),
            grammar_module=grammar["module"],
            grammar_function=grammar.get("function", "language"),
            extensions=tuple(e.lower() for e in data.get("extensions", [])),
            lsp_ids=tuple(data.get("lsp_ids", [])),
            brackets=_pairs(data.get("brackets", [])),
            quotes=_pairs(data.get("quotes", [])),
            line_comment=data.get("line_comment"),
            block_comment=(block_comment[0], block_comment[1]) if block_comment else None,
            indent_sensitive=bool(data.get("indent_sensitive", False)),
            block_openers=tuple(data.get("block_openers", [])),
            indent_unit=data.get("indent_unit", "    "),
            queries_name=data.get("queries", data["name"]),
            detect_cues=tuple(detect.get("cues", [])),
            detect_shebangs=tuple(detect.get("shebang", [])),
            detect_extends=detect.get("extends", ""),
            data_file=str(path),
        )
    except KeyError as missing:
        raise ValueError(f"{path}: missing required key {missing}") from None


@lru_cache(maxsize=1)
def _registry() -> dict[str, LanguageSpec]:
    specs = [_spec_from_file(p) for p in sorted(LANGUAGES_DIR.glob("*.toml"))]
    return {spec.name: spec for spec in specs}


def languages() -> list[LanguageSpec]:
    """All registered languages, sorted by name."""
    return list(_registry().values())


def get(name: str) -> LanguageSpec:
    """The spec for `name` (a registry name or an LSP language id)."""
    registry = _registry()
    if name in registry:
        return registry[name]
    by_lsp = language_for_lsp_id(name)
    if by_lsp is not None:
        return registry[by_lsp]
    known = ", ".join(sorted(registry))
    raise UnknownLanguageError(f"unknown language {name!r}; known languages: {known}")


def language_for_path(path: str) -> Optional[str]:
    """The language name for a file path, by its extension (case-insensitive), or None."""
    base = os.path.basename(path).lower()
    best: Optional[tuple[int, str]] = None
    for spec in _registry().values():
        for ext in spec.extensions:
            # The longest matching extension wins (".d.ts" over ".ts" if both were listed).
            if base.endswith(ext) and len(base) > len(ext) and (best is None or len(ext) > best[0]):
                best = (len(ext), spec.name)
    return best[1] if best else None


def language_for_lsp_id(lsp_id: str) -> Optional[str]:
    """The language name for an LSP `languageId` (e.g. "typescriptreact" -> "tsx"), or None."""
    for spec in _registry().values():
        if lsp_id in spec.lsp_ids:
            return spec.name
    return None
