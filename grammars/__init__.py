"""Tree-sitter grammars and the syntax constraint for the infill sampler.

    grammars.languages()              -> list[LanguageSpec]
    grammars.get(name)                -> LanguageSpec (UnknownLanguageError lists known names)
    grammars.language_for_path(path)  -> name | None
    grammars.language_for_lsp_id(id)  -> name | None
    grammars.constraint_for(language) -> SyntaxConstraint | None

Language data lives in `languages/<name>.toml`, queries in `queries/<name>/*.scm`.
"""
from __future__ import annotations

from typing import Optional

from .constraint import ConstraintStats, TreeSitterConstraint
from .registry import (
    LanguageSpec,
    UnknownLanguageError,
    get,
    language_for_lsp_id,
    language_for_path,
    languages,
)

__all__ = [
    "ConstraintStats",
    "LanguageSpec",
    "TreeSitterConstraint",
    "UnknownLanguageError",
    "constraint_for",
    "get",
    "language_for_lsp_id",
    "language_for_path",
    "languages",
]

_constraints: dict[str, TreeSitterConstraint] = {}


def constraint_for(language: Optional[str]) -> Optional[TreeSitterConstraint]:
    """The syntax constraint for a language name or LSP id; None for None or unknown names.

    One constraint object per language is shared by all requests; it keeps the windows of
    the last few requests, so it is not meant to be used from several threads at once.
    """
    if not language:
        return None
    try:
        spec = get(language)
    except UnknownLanguageError:
        return None
    constraint = _constraints.get(spec.name)
    if constraint is None:
        constraint = _constraints[spec.name] = TreeSitterConstraint(spec)
    return constraint
