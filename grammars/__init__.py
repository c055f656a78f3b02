"""Tree-sitter grammars and the syntax constraint for the infill sampler.

    grammars.languages()              -> list[LanguageSpec]
    grammars.get(name)                -> LanguageSpec (UnknownLanguageError lists known names)
    grammars.language_for_path(path)  -> name | None
    grammars.language_for_lsp_id(id)  -> name | None
    grammars.constraint_for(language) -> SyntaxConstraint | None
    grammars.constraint_for("javascript", module_kind=grammars.declared_module_kind("a.mjs"))

Language data lives in `languages/<name>.toml`, queries in `queries/<name>/*.scm`.
"""
from __future__ import annotations

from typing import Optional

from .constraint import ConstraintStats, TreeSitterConstraint
from .early_errors import declared_module_kind
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
    "declared_module_kind",
    "get",
    "language_for_lsp_id",
    "language_for_path",
    "languages",
]

_constraints: dict[str, TreeSitterConstraint] = {}


def constraint_for(language: Optional[str], module_kind: Optional[str] = None) -> Optional[TreeSitterConstraint]:
    """The syntax constraint for a language name or LSP id; None for None or unknown names.

    One constraint object per language is shared by all requests; it keeps the windows of
    the last few requests, so it is not meant to be used from several threads at once.
    `module_kind` (JavaScript only; `declared_module_kind`): how Node loads the file, where
    its name or package says so (`TreeSitterConstraint.for_module_kind`); without one the
    kind is read from each text.
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
    return constraint.for_module_kind(module_kind) if module_kind is not None else constraint
