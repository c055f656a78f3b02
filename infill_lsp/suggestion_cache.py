"""Answer keystrokes that follow the current suggestion without a model pass.

When the user types exactly the next characters of a suggestion (or deletes some they
typed), the rest of that suggestion is still the model's answer for the new cursor, so it
is served from here. An entry is keyed by the text before and after the cursor at the
time the model ran; a later cursor matches when the text after it is unchanged and the
text before it lies between the original prefix and the prefix plus the suggestion.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass


@dataclass(frozen=True)
class CachedSuggestion:
    prefix: str
    suffix: str
    middle: str
    suggestion_id: str
    answer_source: str = "model"  # where the middle came from: "model", "workspace" or "edited" (InfillResult.source)
    origin: str = ""  # a workspace line's place, "path:line"


class SuggestionCache:
    def __init__(self, entries_per_document: int = 4) -> None:
        self._entries_per_document = entries_per_document
        self._by_uri: dict[str, OrderedDict[str, CachedSuggestion]] = {}

    def store(self, uri: str, prefix: str, suffix: str, middle: str, suggestion_id: str, *, answer_source: str = "model",
              origin: str = "") -> None:
        if not middle:
            return
        entries = self._by_uri.setdefault(uri, OrderedDict())
        entries[suggestion_id] = CachedSuggestion(prefix, suffix, middle, suggestion_id, answer_source, origin)
        while len(entries) > self._entries_per_document:
            entries.popitem(last=False)

    def lookup(self, uri: str, prefix: str, suffix: str) -> tuple[str, CachedSuggestion] | None:
        """The rest of a suggestion the user is typing through, and its entry; else None.

        A suggestion typed to its end is not a hit: the next one needs the model.
        """
        entries = self._by_uri.get(uri)
        if not entries:
            return None
        for entry in reversed(entries.values()):  # newest first
            if suffix != entry.suffix or len(prefix) < len(entry.prefix):
                continue
            typed = len(prefix) - len(entry.prefix)
            if typed >= len(entry.middle):
                continue
            # Compare only what can differ: the typed characters, then the untouched prefix.
            if prefix[len(entry.prefix):] != entry.middle[:typed]:
                continue
            if not prefix.startswith(entry.prefix):
                continue
            entries.move_to_end(entry.suggestion_id)
            return entry.middle[typed:], entry
        return None

    def forget(self, uri: str) -> None:
        self._by_uri.pop(uri, None)
