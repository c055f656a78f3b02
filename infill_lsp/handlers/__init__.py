"""One module per LSP feature; each has `register(server)`.

A new feature is one more module here with its own `register`, added to FEATURES; it
gets the shared state (documents, edit history, engine, stats) from the InfillServer.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from . import accept, completion, configuration, document_state, inline_completion, lifecycle, next_edit, stats, text_sync

if TYPE_CHECKING:
    from ..server import InfillServer

FEATURES = (lifecycle, text_sync, configuration, inline_completion, completion, accept, next_edit, stats, document_state)


def register_all(server: "InfillServer") -> None:
    for feature in FEATURES:
        feature.register(server)
