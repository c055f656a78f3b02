"""What one request gets from the workspace: drafts of the line at the cursor.

Drafts: code repeats itself, line after line. A line that followed the same previous line
elsewhere in the workspace (or in the buffer itself), better still one that also sat
before the same next line, is a candidate for the line being written. Each draft carries
its evidence (how many places, which neighbours agree); the engine verifies drafts with
the model (engine/api.py) and keeps one only where the model agrees.

Two more sources were measured and left out: lines whose surrounding lines look like the
cursor's (found through a full-text search of 24-line chunks, and near the cursor) raised
the drafts holding the line from 81 to 97 of 400 tuning lines but the right ones kept
from 68 to 62; and those chunks as comment-line context in the model's window made no
line more right (6 of 135 either way) and 4 more answers empty.

Unsaved text wins over the disk: the request's own buffer (prefix + suffix) replaces its
file's indexed lines, and other open buffers can be handed in the same way (`buffers`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from .index import WorkspaceIndex, line_key
from .ngrams import NgramTable, WorkspaceNgrams

CURSOR_MARK = "\x00cursor\x00"
PLACES = 6  # places per draft whose surroundings are compared with the cursor's
AROUND = 4  # non-blank lines on each side that make a place's surroundings
LOOKUP_ROWS = 400  # rows read per neighbour lookup: a line as common as `}` or `else:` stops there
MAX_DRAFTS = 6
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+|[^\sA-Za-z0-9_]")  # what surroundings are compared on: words, numbers, symbols


@dataclass
class Draft:
    """A candidate for the rest of the cursor's line, with the evidence for it."""

    text: str  # what goes at the cursor (the line's rest; the typed part is not repeated)
    line: str  # the whole stripped line
    after_prev: int = 0  # places where it follows the cursor line's previous non-blank line
    after_prev2: int = 0  # ... and the one before that too
    before_next: int = 0  # places where it precedes the cursor line's next non-blank line
    both: int = 0  # places where it sits between the same previous and next lines
    same_indent: int = 0  # places where its indentation is the cursor's
    in_buffer: int = 0  # of those places, how many are in the request's own file
    context_match: float = 0.0  # the best word overlap (Jaccard) of a place's surrounding lines with the cursor's
    origin: str = ""  # where the user can find it: "path:line" of its strongest place (relative path, 1-based line; "" when unknown)
    places: list[tuple[str, int, int]] = field(default_factory=list, repr=False)  # up to PLACES places: ("index", file id, line) or ("buffer", number, offset of the line)

    def score(self) -> tuple[int, ...]:
        """Evidence order, strongest first: between the same two lines, after the same two
        lines, after the same line, before the same line, at the same indentation."""
        return (self.both, self.after_prev2, self.after_prev, self.before_next, self.same_indent)


@dataclass(frozen=True)
class Cursor:
    """The cursor's line as the lookups see it."""

    indent: str  # the current line's indentation before the cursor
    typed: str  # what is typed after the indentation, before the cursor
    rest: str  # what follows the cursor on its line (stripped)
    before: tuple[str, ...]  # the non-blank lines before the cursor's line, stripped, nearest last
    after: tuple[str, ...]  # the non-blank lines after it, nearest first

    @property
    def prev(self) -> str:
        return self.before[-1] if self.before else ""

    @property
    def prev2(self) -> str:
        return self.before[-2] if len(self.before) > 1 else ""

    @property
    def next(self) -> str:
        return self.after[0] if self.after else ""

    def words(self) -> set[str]:
        """The words of the lines around the cursor (what a place's surroundings are compared on)."""
        return _words(self.before[-AROUND:] + self.after[:AROUND])


def _words(lines: tuple[str, ...] | list[str]) -> set[str]:
    return set(WORD.findall(" ".join(lines)))


def cursor_lines(prefix: str, suffix: str) -> Cursor:
    line_start = prefix.rfind("\n") + 1
    head = prefix[line_start:]
    indent = head[: len(head) - len(head.lstrip())]
    before = tuple(ln.strip() for ln in prefix[max(0, line_start - 4000) : line_start].split("\n") if ln.strip())[-2 * AROUND :]
    line_end = suffix.find("\n")
    rest = (suffix if line_end < 0 else suffix[:line_end]).strip()
    after = tuple(ln.strip() for ln in (suffix[line_end + 1 : line_end + 4000] if line_end >= 0 else "").split("\n") if ln.strip())[: 2 * AROUND]
    return Cursor(indent, head.lstrip(), rest, before, after)


@dataclass(frozen=True)
class WorkspaceContext:
    """What a request may draw on beyond its own text: a workspace index (local front ends)
    and unsaved texts by name (open buffers, or the snippets a client sent over HTTP) that
    win over the disk. The engine asks it for drafts (engine/api.py)."""

    index: Optional[WorkspaceIndex] = None
    buffers: Mapping[str, str] = field(default_factory=dict)
    wait_for_tables: bool = False  # build the copy rule's n-gram table before answering (batch runs) instead of beside them
    copy_tables: bool = True  # False: no copy table at all (a one-shot `infill complete`: a build beside its one request only slows it)

    def drafts(self, prefix: str, suffix: str, filename: Optional[str] = None) -> list[Draft]:
        return drafts_for(self.index, prefix, suffix, filename=filename, buffers=self.buffers)

    def package_type(self, filename: str) -> Optional[str]:
        """The "type" of the package.json nearest to `filename` in the index's folder (how
        Node loads its JavaScript: WorkspaceIndex.package_type); None without an index."""
        return self.index.package_type(filename) if self.index is not None else None

    def ngrams(self, tokenizer: Any) -> Optional[NgramTable]:
        """The copy rule's table of the indexed files' token runs in `tokenizer`'s ids
        (engine/workspace/ngrams.py), kept on the index for the next request; None without
        an index, or while the first table is still being built (unless `wait_for_tables`)."""
        if self.index is None or not self.copy_tables:
            return None
        holder = self.index.copy_tables.get(tokenizer)
        if holder is None:
            holder = self.index.copy_tables[tokenizer] = WorkspaceNgrams()
        return holder.get(self.index.generation, self.index.files, tokenizer.encode, tokenizer.special_ids, wait=self.wait_for_tables)


def drafts_for(index: Optional[WorkspaceIndex], prefix: str, suffix: str, *, filename: Optional[str] = None,
               buffers: Mapping[str, str] = {}) -> list[Draft]:
    """Candidates for the rest of the cursor's line, strongest evidence first (at most
    MAX_DRAFTS). `filename`'s indexed lines are replaced by the buffer (prefix + suffix);
    `buffers` are other unsaved texts, by name, that win over their files on disk."""
    cursor = cursor_lines(prefix, suffix)
    if not cursor.prev and not cursor.next:
        return []
    found: dict[str, Draft] = {}
    shadowed: set[int] = set()
    if index is not None:
        shadowed = {fid for fid in (index.file_id(p) for p in [*buffers, filename] if p) if fid is not None}
        _from_index(found, cursor, index, shadowed)
    # The cursor's line stands in its buffer as a line no other equals, so the lines around
    # the cursor are not taken as each other's neighbours.
    texts = [prefix + CURSOR_MARK + suffix] + [text for name, text in buffers.items() if name != filename]
    for number, text in enumerate(texts):
        _count_buffer(found, cursor, text, number)
    ranked = sorted(found.values(), key=lambda d: d.score(), reverse=True)[: 2 * MAX_DRAFTS]
    _match_contexts(ranked, cursor, index, texts)
    ranked.sort(key=lambda d: (d.both > 0, d.context_match, d.score()), reverse=True)
    return ranked[:MAX_DRAFTS]


def _from_index(found: dict[str, Draft], cursor: Cursor, index: WorkspaceIndex, shadowed: set) -> None:
    prev2_key, next_key, prev_key = line_key(cursor.prev2), line_key(cursor.next), line_key(cursor.prev)
    if cursor.prev:
        for fid, line, indent, text, prev2, nxt in index.lines_after(cursor.prev, LOOKUP_ROWS):
            if fid not in shadowed:
                _count(found, cursor, text, indent, ("index", fid, line), after_prev=True, after_prev2=prev2 == prev2_key,
                       before_next=bool(cursor.next) and nxt == next_key)
    if cursor.next:
        for fid, line, indent, text, prev, _prev2 in index.lines_before(cursor.next, LOOKUP_ROWS):
            if fid not in shadowed and not (cursor.prev and prev == prev_key):  # those were counted above
                _count(found, cursor, text, indent, ("index", fid, line), before_next=True)


def _count(found: dict[str, Draft], cursor: Cursor, line: str, indent: str, place: tuple[str, int, int], *, after_prev: bool = False,
           after_prev2: bool = False, before_next: bool = False, in_buffer: bool = False) -> Optional[Draft]:
    """Add one place's evidence for `line`, if it fits what is typed around the cursor
    (a place already counted adds nothing). Returns the line's draft, or None."""
    if not line.startswith(cursor.typed) or (cursor.rest and not line.endswith(cursor.rest)):
        return None
    if len(line) - len(cursor.rest) < len(cursor.typed):
        return None
    text = line[len(cursor.typed) : len(line) - len(cursor.rest)]
    if not text.strip():
        return None
    draft = found.get(line)
    if draft is None:
        draft = found[line] = Draft(text, line)
    elif place in draft.places:
        return draft
    draft.after_prev += after_prev
    draft.after_prev2 += after_prev and after_prev2
    draft.before_next += before_next
    draft.both += after_prev and before_next
    draft.same_indent += indent == cursor.indent
    draft.in_buffer += in_buffer
    if len(draft.places) < PLACES:
        draft.places.append(place)
    return draft


def _count_buffer(found: dict[str, Draft], cursor: Cursor, text: str, number: int) -> None:
    """A buffer's lines as evidence (the request's own cursor line is not: it is being
    written). The lines equal to the cursor's neighbours are found by a regular-expression
    search, not by splitting the buffer: a 6,000-line file is searched in well under a
    millisecond, and split in several. A buffer place is ("buffer", number, the offset of
    its line's start)."""
    if cursor.prev:
        for match in _whole_line(cursor.prev).finditer(text):
            line = _next_nonblank(text, match.end() + 1)
            if line is None:
                continue
            start, end = line
            stripped = text[start:end].strip()
            if CURSOR_MARK in stripped:
                continue
            before = _prev_nonblank(text, match.start())
            after = _next_nonblank(text, end + 1)
            _count(found, cursor, stripped, _indent(text, start), ("buffer", number, start), after_prev=True,
                   after_prev2=(text[before[0] : before[1]].strip() if before else "") == cursor.prev2,
                   before_next=bool(cursor.next) and after is not None and text[after[0] : after[1]].strip() == cursor.next, in_buffer=number == 0)
    if cursor.next:
        for match in _whole_line(cursor.next).finditer(text):
            line = _prev_nonblank(text, match.start())
            if line is None:
                continue
            start, end = line
            stripped = text[start:end].strip()
            before = _prev_nonblank(text, start)
            if CURSOR_MARK in stripped or (cursor.prev and before is not None and text[before[0] : before[1]].strip() == cursor.prev):
                continue  # the cursor itself, or counted above
            _count(found, cursor, stripped, _indent(text, start), ("buffer", number, start), before_next=True, in_buffer=number == 0)


def _whole_line(stripped: str) -> "re.Pattern[str]":
    return re.compile(r"^[ \t]*" + re.escape(stripped) + r"[ \t\r]*$", re.M)


def _indent(text: str, start: int) -> str:
    end = start
    while end < len(text) and text[end] in " \t":
        end += 1
    return text[start:end]


def _next_nonblank(text: str, pos: int) -> Optional[tuple[int, int]]:
    """(start, end) of the first non-blank line starting at or after offset `pos` (a line start)."""
    while pos <= len(text):
        end = text.find("\n", pos)
        end = len(text) if end < 0 else end
        if text[pos:end].strip():
            return pos, end
        pos = end + 1
    return None


def _prev_nonblank(text: str, line_start: int) -> Optional[tuple[int, int]]:
    """(start, end) of the nearest non-blank line ending before the line that starts at `line_start`."""
    end = line_start - 1
    while end >= 0:
        start = text.rfind("\n", 0, end) + 1
        if text[start:end].strip():
            return start, end
        end = start - 1
    return None


def buffer_lines_around(text: str, start: int, count: int) -> tuple[list[str], str, list[str]]:
    """The `count` non-blank lines before and after the buffer line at offset `start`, and
    the line itself, as written (indentation kept)."""
    end = text.find("\n", start)
    end = len(text) if end < 0 else end
    before, after = [], []
    at = start
    while len(before) < count and (line := _prev_nonblank(text, at)) is not None:
        before.insert(0, text[line[0] : line[1]])
        at = line[0]
    at = end + 1
    while len(after) < count and (line := _next_nonblank(text, at)) is not None:
        after.append(text[line[0] : line[1]])
        at = line[1] + 1
    return before, text[start:end], after


def _match_contexts(drafts: list[Draft], cursor: Cursor, index: Optional[WorkspaceIndex], texts: list[str]) -> None:
    """Each draft's best overlap between a place's surrounding lines and the cursor's: the
    same line after the same `}` is likelier where the code around looks alike."""
    here = cursor.words()
    if not here:
        return
    for draft in drafts:
        for kind, where, line in draft.places:
            if kind == "index":
                if index is None:
                    continue
                before, after = index.around(where, line, AROUND)
            else:
                before, _, after = buffer_lines_around(texts[where], line, AROUND)
            there = _words([t.strip() for t in before + after])
            if there:
                draft.context_match = max(draft.context_match, len(here & there) / len(here | there))
