"""Each open document's recent edits, recorded from didChange, for next-edit requests.

Keystrokes are coalesced: a change on or next to the lines the current burst of typing
touched extends that burst; a change elsewhere closes it (one history entry) and starts
a new one. So typing "total" over "count" is one entry, count -> total, not five.
Entries are kept compact: the changed lines before and after (engine.next_edit accepts
that form as well as whole-document pairs).
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

MAX_ENTRIES = 8  # per document: the engine uses the few most recent
MAX_ENTRY_CHARS = 2000  # a pasted file is not an edit pattern


@dataclass
class _Burst:
    snapshot: str  # the document before the burst's first change
    first_line: int  # lines the burst touched, in the current text
    last_line: int


@dataclass
class _DocumentEdits:
    entries: deque = field(default_factory=lambda: deque(maxlen=MAX_ENTRIES))
    burst: _Burst | None = None
    current: str = ""


def changed_line_range(before: str, after: str) -> tuple[int, int, int]:
    """(first changed line, last changed line in before, last changed line in after)."""
    b, a = before.split("\n"), after.split("\n")
    i = 0
    while i < min(len(b), len(a)) and b[i] == a[i]:
        i += 1
    j = 0
    while j < min(len(b), len(a)) - i and b[-1 - j] == a[-1 - j]:
        j += 1
    return i, len(b) - 1 - j, len(a) - 1 - j


def _compact(before: str, after: str) -> tuple[str, str] | None:
    first, last_before, last_after = changed_line_range(before, after)
    b, a = before.split("\n"), after.split("\n")
    old, new = "\n".join(b[first : last_before + 1]), "\n".join(a[first : last_after + 1])
    if old == new or len(old) > MAX_ENTRY_CHARS or len(new) > MAX_ENTRY_CHARS:
        return None
    return old, new


class EditHistory:
    def __init__(self) -> None:
        self._documents: dict[str, _DocumentEdits] = {}

    def opened(self, uri: str, text: str) -> None:
        self._documents[uri] = _DocumentEdits(current=text)

    def closed(self, uri: str) -> None:
        self._documents.pop(uri, None)

    def record(self, uri: str, before: str, after: str) -> None:
        """One didChange: the document's text before and after it."""
        if before == after:
            return
        doc = self._documents.setdefault(uri, _DocumentEdits())
        first, last_before, last_after = changed_line_range(before, after)
        burst = doc.burst
        if burst is not None and first <= burst.last_line + 1 and last_before >= burst.first_line - 1:
            shift = last_after - last_before  # lines added or removed by this change
            burst.first_line = min(burst.first_line, first)
            burst.last_line = max(burst.last_line + shift, last_after)
        else:
            self._close(doc)
            doc.burst = _Burst(before, first, last_after)
        doc.current = after

    def entries(self, uri: str) -> list[dict[str, str]]:
        """Oldest first, the open burst last; each {"before", "after"} (changed lines)."""
        doc = self._documents.get(uri)
        if doc is None:
            return []
        out = [{"before": b, "after": a} for b, a in doc.entries]
        if doc.burst is not None:
            pair = _compact(doc.burst.snapshot, doc.current)
            if pair is not None:
                out.append({"before": pair[0], "after": pair[1]})
        return out

    def _close(self, doc: _DocumentEdits) -> None:
        if doc.burst is not None:
            pair = _compact(doc.burst.snapshot, doc.current)
            if pair is not None:
                doc.entries.append(pair)
        doc.burst = None
