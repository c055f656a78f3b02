"""The language of a request: the one rule every front end goes through.

    check_language("python")            -> "python"  (UnknownLanguage lists the known ones)
    resolve_language(language, filename=..., prefix=..., suffix=..., detect=True) -> LanguageChoice

The language picks the syntax constraint (grammars/). In order:
1. the language the request names (a registry name or an LSP id such as "typescriptreact"),
   checked: an unknown name is the request's mistake (UnknownLanguage, an InfillError, so
   every front end shows it as bad input: HTTP 400, a protocol error, a CLI exit code);
2. else the extension of a file name the client sent (an unknown extension is no mistake:
   the next rule applies);
3. else, when the front end asks for it (clients that cannot name a language: OpenAI-style
   and other FIM clients), detection on the prefix and suffix (grammars/detect.py, measured
   in docs/languages.md), which answers None rather than guess;
4. else None: the request runs unconstrained (an editor's buffer in a language infill has
   no grammar for, or `constrained: false`).
The Engine calls `resolve_language` for every request (Engine.job) and reports the
choice in the result (`InfillResult.language`, `.language_source`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Optional

import grammars
from engine.types import InfillError

Source = Literal["request", "filename", "detected", "none"]


class UnknownLanguage(InfillError):
    """A language name no grammar is registered for; the message lists the known ones."""


@dataclass(frozen=True)
class LanguageChoice:
    """The language a request runs with, and where it came from."""

    name: Optional[str]  # a registry name (grammars.languages()), or None: unconstrained
    source: Source  # "request" | "filename" | "detected" | "none"
    reason: str = ""  # for "detected"/"none": what detection rested on, or why it declined


def known_languages() -> list[str]:
    return [spec.name for spec in grammars.languages()]


def check_language(name: str) -> str:
    """The registry name of `name` (a registry name or an LSP language id); UnknownLanguage
    naming the known ones if no grammar has it. The one place that decides."""
    try:
        return grammars.get(name).name
    except grammars.UnknownLanguageError:
        raise UnknownLanguage(f"unknown language {name!r}; known languages: {', '.join(known_languages())}") from None


def resolve_language(language: Optional[str] = None, *, filename: Optional[str] = None, prefix: str = "",
                     suffix: str = "", detect: bool = False) -> LanguageChoice:
    """The language a request runs with (the module's rule 1-4)."""
    if language:
        return LanguageChoice(check_language(language), "request")
    if filename:
        by_extension = grammars.language_for_path(filename)
        if by_extension is not None:
            return LanguageChoice(by_extension, "filename")
    if not detect:
        return LanguageChoice(None, "none")
    from grammars.detect import detect as detect_language  # tree-sitter parses: only when asked

    found = detect_language(prefix, suffix)
    return LanguageChoice(found.language, "detected" if found.language else "none", found.reason)
