"""textDocument/inlineCompletion (LSP 3.18): the middle as ghost text at the cursor."""
from __future__ import annotations

from lsprotocol import types

from .accept import accept_command
from .host import LspServer


def register(server: "LspServer") -> None:
    @server.feature(types.TEXT_DOCUMENT_INLINE_COMPLETION, types.InlineCompletionOptions())
    async def inline_completion(ls: "LspServer", params: types.InlineCompletionParams) -> types.InlineCompletionList:
        suggestion = await ls.suggest(params.text_document.uri, params.position)
        if suggestion is None:
            return types.InlineCompletionList(items=[])
        # An empty range at the cursor: the suggestion is inserted there and replaces
        # nothing, which every client applies the same way.
        cursor = types.Range(start=suggestion.at, end=suggestion.at)
        item = types.InlineCompletionItem(insert_text=suggestion.text, range=cursor, command=accept_command(suggestion))
        return types.InlineCompletionList(items=[item])
