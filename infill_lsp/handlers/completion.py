"""textDocument/completion: the fallback for clients without inline completion.

One item whose edit spans the identifier being typed, so that clients which filter
items by the word before the cursor keep it: the label/filter text start with that word.
The edit's range and text come from the one document version the suggestion was computed
on, which the item names in `data.version`.
"""
from __future__ import annotations

from lsprotocol import types

from engine.text import units_in
from .accept import accept_command
from .host import LspServer


TRIGGER_CHARACTERS = [".", "(", "[", "{", ",", ":", "=", " ", "\n"]
_LABEL_CHARS = 60


def register(server: "LspServer") -> None:
    @server.feature(types.TEXT_DOCUMENT_COMPLETION, types.CompletionOptions(trigger_characters=TRIGGER_CHARACTERS))
    async def completion(ls: "LspServer", params: types.CompletionParams) -> types.CompletionList:
        suggestion = await ls.suggest(params.text_document.uri, params.position)
        # Incomplete: the client asks again as the user types, so the suggestion follows.
        empty = types.CompletionList(is_incomplete=True, items=[])
        if suggestion is None:
            return empty
        # Both ends of the edit come from the text the suggestion was computed on.
        word = _identifier_tail(suggestion.line_before)
        word_start = types.Position(
            line=suggestion.at.line, character=suggestion.at.character - units_in(word, ls.documents.encoding)
        )
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
            data={"uri": params.text_document.uri, "version": suggestion.version},
        )
        if suggestion.answer_source in ("workspace", "edited") and suggestion.origin:  # where menus show an item's source
            where = f"{'edited from' if suggestion.answer_source == 'edited' else 'from'} {suggestion.origin}"
            item.detail = f"infill, {where}"  # Neovim's menu column
            item.label_details = types.CompletionItemLabelDetails(description=where)  # beside the label
        return types.CompletionList(is_incomplete=True, items=[item])


def _identifier_tail(line_before: str) -> str:
    """The identifier characters at the end of `line_before` (the word being typed)."""
    start = len(line_before)
    while start > 0 and (line_before[start - 1].isalnum() or line_before[start - 1] == "_"):
        start -= 1
    return line_before[start:]
