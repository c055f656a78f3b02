"""The engine's language for an LSP language id: one function that the server and its
handlers both use (so neither imports the other for it)."""
from __future__ import annotations


def language_for_lsp_id(lsp_id: str) -> str | None:
    """The engine's language name for an LSP language id (None = no grammar for it)."""
    try:
        from grammars import language_for_lsp_id as lookup  # written alongside; may be absent
    except Exception:
        return lsp_id or None
    try:
        return lookup(lsp_id)
    except Exception:
        return None
