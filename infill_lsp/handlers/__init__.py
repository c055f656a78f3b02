"""One module per LSP feature; each has `register(server)`.

A new feature is one more module here with its own `register`, added to FEATURES; it
gets the shared state (documents, edit history, engine, stats) from the server, typed
as `host.LspServer` (the handlers never import infill_lsp/server.py).
"""
from __future__ import annotations

from . import accept, completion, configuration, document_state, inline_completion, lifecycle, next_edit, stats, text_sync, workspace_files
from .host import LspServer

FEATURES = (lifecycle, text_sync, configuration, inline_completion, completion, accept, next_edit, stats, document_state, workspace_files)


def register_all(server: "LspServer") -> None:
    for feature in FEATURES:
        feature.register(server)
