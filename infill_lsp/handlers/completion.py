"""textDocument/completion: the fallback for clients without inline completion.

One item whose edit spans the identifier being typed, so that clients which filter
items by the word before the cursor keep it: the label/filter text start with that word.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from .accept import accept_command

if TYPE_CHECKING:
    from ..server import InfillServer

TRIGGER_CHARACTERS = [".", "(", "[", "{", ",", ":", "=", " ", "\n"]
_LABEL_CHARS = 60


def register(server: "InfillServer") -> None:
    @server.feature(types.TEXT_DOCUMENT_COMPLETION, types.CompletionOptions(trigger_characters=TRIGGER_CHARACTERS))
    async def completion(ls: "InfillServer", params: types.CompletionParams) -> types.CompletionList:
        suggestion = await ls.suggest(params.text_document.uri, params.position)
        # Incomplete: the client asks again as the user types, so the suggestion follows.
        empty = types.CompletionList(is_incomplete=True, items=[])
        if suggestion is None:
            return empty
        word, word_start = _word_before(ls, params.text_document.uri, suggestion.at)
        new_text = word + suggestion.text
        first_line = new_text.split("\n", 1)[0]
        label = first_line if len(first_line) <= _LABEL_CHARS else first_line[: _LABEL_CHARS - 1] + "…"
        if "\n" in new_text:
            label += " …"
        item = types.CompletionItem(
            label=label or "(infill)",
            kind=types.CompletionItemKind.Snippet,
            detail="infill",
            documentation=types.MarkupContent(kind=types.MarkupKind.PlainText, value=new_text),
            filter_text=new_text,
            sort_text="0",
            preselect=True,
            insert_text_format=types.InsertTextFormat.PlainText,
            text_edit=types.TextEdit(range=types.Range(start=word_start, end=suggestion.at), new_text=new_text),
            command=accept_command(suggestion),
        )
        return types.CompletionList(is_incomplete=True, items=[item])


def _word_before(ls: "InfillServer", uri: str, at: types.Position) -> tuple[str, types.Position]:
    """The identifier characters right before `at` on its line, and where they start."""
    document = ls.documents.get(uri)
    encoding = ls.documents.encoding
    offset = document.offset_at(at, encoding)
    line_start = document.line_starts[at.line] if at.line < document.line_count else offset
    start = offset
    while start > line_start and (document.text[start - 1].isalnum() or document.text[start - 1] == "_"):
        start -= 1
    return document.text[start:offset], document.position_at(start, encoding)
