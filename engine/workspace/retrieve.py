"""What one request gets from the workspace: drafts of the line at the cursor.

Drafts: code repeats itself, line after line. A line that followed the same previous line
elsewhere in the workspace (or in the buffer itself), better still one that also sat
before the same next line, is a candidate for the line being written; so is every line
near the cursor in its own buffer (`_near`: the next entry of a table, the same
assignment in the previous `case`), and, where the cursor stands among the file's imports,
every import line of the workspace binding a name the file uses but binds nowhere
(`_binders`, engine/workspace/imports.py), and, where the same neighbours found little,
the lines after a line that shares the rarest names of the cursor's previous line, or
before one like its next line (`_alike`). Each draft carries its evidence (how many places,
which neighbours agree, how near, how alike the code around its places is to the code
around the cursor), a fitted score of it orders them (`rank`, `ranked_drafts`), and the
engine verifies the best ones with the model (engine/drafts.py) and keeps one only where
its accept rule agrees.

Lines whose surrounding lines look like the cursor's elsewhere in the workspace (found
through a full-text search of 24-line chunks) raised the drafts holding the line from 81
to 97 of 400 tuning lines but the right ones kept from 68 to 62, with an accept rule not
refitted for them; those chunks as comment-line context in the model's window made no
line more right (6 of 135 either way) and 4 more answers empty. Neither is here.

Unsaved text wins over the disk: the request's own buffer (prefix + suffix) replaces its
file's indexed lines, and other open buffers can be handed in the same way (`buffers`).

Each draft says where the user can find it (`Draft.origin`, "path:line"): its strongest
place whose file is known, the path relative to the index's root, the line 1-based.
"""
from __future__ import annotations

import functools
import math
import operator
import os
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from . import imports
from .index import WorkspaceIndex, line_key
from .ngrams import NgramTable, WorkspaceNgrams

CURSOR_MARK = "\x00cursor\x00"
PLACES = 6  # places per draft whose surroundings are compared with the cursor's
AROUND = 4  # non-blank lines on each side that make a place's surroundings
LOOKUP_ROWS = 400  # rows read per neighbour lookup: a line as common as `}` or `else:` stops there
MAX_DRAFTS = 16  # drafts a request gets, best `rank` first: as many as the first pass judges (engine/drafts.py VERIFIED_DRAFTS)
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+|[^\sA-Za-z0-9_]")  # what surroundings are compared on: words, numbers, symbols
# Lines near the cursor in its own buffer are candidates too: the line being written often
# stands a few lines away (`lambda a, b: None],` two lines above, `this.patch = 0` in the
# previous `case`) where no neighbour repeats. Measured on the 167 held tuning lines
# (lab/workspace/recall.py --fit): the line among all candidates 96 -> 131 with 40 lines on
# each side, 136 with 80, 143 with 300; among the first 16 by a rank fitted on the other
# packages 119, 118 and 117: more lines only cost lookup time (300: the p99 tripled).
NEAR_LINES = 40
# Neighbour drafts (by evidence) whose places' surroundings are read and compared with the
# cursor's, then ranked (12 before the lines near the cursor came in): 8 leaves the held
# tuning lines found the same (125) and the p99 lookup on a 1.1M-line workspace 7.5 ms CPU
# instead of 9-10 ms with 12 (each place read is three queries).
COMPARED = 8
# Where the cursor stands among a file's imports, the import lines binding names the file
# uses and binds nowhere (engine/workspace/imports.py): the LACKING most-used such names are
# looked up, and BINDERS lines binding them become drafts, those binding the most-used name
# first. Tuning lines (lab/workspace/recall.py): 200 names and 40 lines, 100 and 24, 400 and
# 24 find the same held lines but one (133, 131, 133); looking up only 64 names found 131.
LACKING = 400
BINDERS = 24
# Lines whose neighbour *looks like* the cursor's (engine/workspace/index.py `lines_like`:
# the rarest names of the cursor's previous and next lines): `options =
# parseOptions(options)` after `constructor (range, options) {` elsewhere, where the
# cursor's previous line is `constructor (comp, options) {`. Asked only where fewer than
# ALIKE_GATE drafts have a neighbour the same as the cursor's (where those found little:
# held tuning lines among the first 16 drafts in retrieval order 130 with the gate at 4,
# 131 without it, 126 with no look-alike lines; the lookup's p50 on 1.1M lines +0.9 ms
# with it, +1.2 ms without).
# ALIKE_HITS look-alike neighbours are read a side; those whose words overlap the cursor's
# neighbour's by at least ALIKE_MIN (Jaccard) count, and the ALIKE best drafts found only
# so are compared and ranked with the others (6 found no more tuning lines than 3, and
# comparing them cost 0.7 ms at the lookup's p50).
ALIKE_GATE = 4
ALIKE_HITS = 24
ALIKE_MIN = 0.5
ALIKE = 3
ALIKE_NAMES, ALIKE_RARE = 3, 1000  # the look-alike search's names: the rarest 3 in at most 1,000 lines
NAME = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
STRING = re.compile(r"'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"|`[^`\n]*`")
NUMBER = re.compile(r"\d[\w.]*")


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
    near: int = 0  # places among the NEAR_LINES non-blank lines on either side of the cursor in its own buffer
    distance: int = 0  # non-blank lines from the cursor to the nearest of those places (0: none)
    shape_prev: bool = False  # a place's previous line has the cursor's previous line's shape (`gt=[` and `iadd=[`: SHAPE)
    shape_next: bool = False  # ... its next line has the shape of the cursor's next line
    prev_like: float = 0.0  # the best word overlap (Jaccard) of a place's previous line with the cursor's (1: the same line)
    next_like: float = 0.0  # ... of a place's next line with the cursor's next line
    in_scope: float = 0.0  # the share of its names that stand in the lines around the cursor
    binds: int = 0  # an import line: how often the file uses the names it binds that the file binds nowhere (0: no such import)
    bind_share: float = 0.0  # ... the share of the names it binds that are such names
    bind_places: int = 0  # ... the places it stands as is in the workspace's files
    alike: float = 0.0  # the best word overlap of a look-alike neighbour (`_alike`) with the cursor's (0: found no such way)
    rank: float = 0.0  # the fitted retrieval score drafts are ordered by (`rank_score`)
    origin: str = ""  # where the user can find it: "path:line" of its strongest place (relative path, 1-based line; "" when unknown)
    places: list[tuple[str, int, int]] = field(default_factory=list, repr=False)  # up to PLACES places: ("index", file id, line) or ("buffer", number, offset of the line)
    # Each place's own evidence, in `places` order, strongest first as drafts are ranked:
    # [between the same two lines, context overlap, after the same two lines, after the
    # same line, before the same line, same indentation]. The strongest place is `origin`.
    place_evidence: list[list[float]] = field(default_factory=list, repr=False)

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
    # True: the texts are excerpts whose line numbers are not their files' (an HTTP client's
    # snippets, beside a prompt it may have cut): their drafts name no origin.
    excerpts: bool = False

    def drafts(self, prefix: str, suffix: str, filename: Optional[str] = None) -> list[Draft]:
        return drafts_for(self.index, prefix, suffix, filename=filename, buffers=self.buffers, excerpts=self.excerpts)

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
               buffers: Mapping[str, str] = {}, excerpts: bool = False, limit: Optional[int] = None) -> list[Draft]:
    """Candidates for the rest of the cursor's line, best `rank` first (at most `limit`,
    default MAX_DRAFTS). `filename`'s indexed lines are replaced by the buffer (prefix + suffix);
    `buffers` are other unsaved texts, by name, that win over their files on disk. Each
    draft's `origin` names its strongest place: an indexed file's, else a buffer's by its
    name (the request's own by `filename`); `excerpts`: the buffers' places name none."""
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
    others = [(name, text) for name, text in buffers.items() if name != filename]
    texts = [prefix + CURSOR_MARK + suffix] + [text for _, text in others]
    for number, text in enumerate(texts):
        _count_buffer(found, cursor, text, number)
    _near(found, cursor, texts[0])
    syntax = imports.family(filename) if filename and index is not None and not cursor.indent else None
    if syntax is not None and imports.among_imports(prefix, cursor.after, syntax):
        _binders(found, cursor, index, prefix, suffix, syntax, filename or "")
    neighbours = [d for d in found.values() if d.after_prev or d.before_next]
    compared = sorted(neighbours, key=lambda d: d.score(), reverse=True)[:COMPARED]
    if index is not None and len(neighbours) < ALIKE_GATE:
        compared += _alike(found, cursor, index, shadowed)
    _match_contexts(compared, cursor, index, texts)
    # Ranked: the compared neighbour drafts and the lines near the cursor. The neighbour
    # drafts past COMPARED (a `}` has hundreds) were never compared and are left out, as
    # before; ranking them all cost up to 2 ms a request on a 1.1M-line workspace.
    compared_ids = {id(d) for d in compared}
    ranked = ranked_drafts([*compared, *(d for d in found.values() if (d.near or d.binds) and id(d) not in compared_ids)], cursor)
    names = [None] * len(texts) if excerpts else [filename] + [name for name, _ in others]
    ranked = ranked[: MAX_DRAFTS if limit is None else limit]
    _name_origins(ranked, index, names, texts)
    return ranked


def _name_origins(drafts: list[Draft], index: Optional[WorkspaceIndex], names: list[Optional[str]], texts: list[str]) -> None:
    """Each draft's `origin`: "path:line" of its strongest place (`place_evidence`; the
    first found among equals) whose file is known: an indexed file by its root-relative
    path, a buffer by its name (relative to the index's root when it lies inside it); ""
    when no place is known. Lines are 1-based: the index numbers them from 0, and a buffer
    place is the offset of its line's start (each buffer's lines are counted in one pass,
    up to its last place named)."""
    ids = {where for draft in drafts for kind, where, _ in draft.places if kind == "index"}
    paths = index.paths(ids) if index is not None and ids else {}
    chosen: list[tuple[Draft, tuple[str, int, int]]] = []
    for draft in drafts:
        known = [(evidence, place) for evidence, place in zip(draft.place_evidence, draft.places)
                 if (paths.get(place[1]) if place[0] == "index" else names[place[1]])]
        draft.origin = ""
        if known:
            chosen.append((draft, max(known, key=lambda pair: pair[0])[1]))
    lines: dict[tuple[int, int], int] = {}
    for number in {where for _, (kind, where, _) in chosen if kind == "buffer"}:
        line, counted = 1, 0
        for at in sorted({at for _, (kind, where, at) in chosen if kind == "buffer" and where == number}):
            line += texts[number].count("\n", counted, at)
            lines[number, at], counted = line, at
    shown: dict[int, str] = {}
    for draft, (kind, where, at) in chosen:
        if kind == "index":
            draft.origin = f"{paths[where]}:{at + 1}"
        else:
            if where not in shown:
                shown[where] = _shown_path(names[where] or "", index)
            draft.origin = f"{shown[where]}:{lines[where, at]}"


def _shown_path(name: str, index: Optional[WorkspaceIndex]) -> str:
    """A buffer's name as an origin shows it: relative to the index's root when it is an
    absolute path inside it (as the index names its files), else as given."""
    if index is not None and os.path.isabs(name):
        try:
            relative = os.path.relpath(os.path.realpath(name), index.root)
        except ValueError:  # another drive (Windows)
            return name
        if relative != os.pardir and not relative.startswith(os.pardir + os.sep):
            return relative
    return name


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
        draft.place_evidence.append([after_prev and before_next, 0.0, after_prev and after_prev2, after_prev, before_next, indent == cursor.indent])
    return draft


def _alike(found: dict[str, Draft], cursor: Cursor, index: WorkspaceIndex, shadowed: set) -> list[Draft]:
    """The lines after a line like the cursor's previous one, and before a line like its
    next one, as drafts: the ALIKE best found only this way (those with a neighbour the
    same as the cursor's are counted by `_from_index`)."""
    fresh: list[Draft] = []
    for side, neighbour in (("after", cursor.prev), ("before", cursor.next)):
        if not neighbour:
            continue
        mine = _profile(neighbour)[0]
        for fid, line, indent, text, theirs in index.lines_like(neighbour, side, ALIKE_HITS, ALIKE_NAMES, ALIKE_RARE):
            if fid in shadowed or theirs == neighbour:
                continue
            like = _like(_profile(theirs)[0], mine)
            if like < ALIKE_MIN:
                continue
            draft = _count(found, cursor, text, indent, ("index", fid, line))
            if draft is None or draft.after_prev or draft.before_next or draft.near or draft.binds:
                continue
            if not draft.alike:
                fresh.append(draft)
            draft.alike = max(draft.alike, like)
    return sorted(fresh, key=lambda d: d.alike, reverse=True)[:ALIKE]


def _binders(found: dict[str, Draft], cursor: Cursor, index: WorkspaceIndex, prefix: str, suffix: str, syntax: str, filename: str) -> None:
    """The import lines binding names the file uses but binds nowhere, as drafts (the
    cursor stands among the file's imports): `const parse = require('./parse')` where the
    file calls `parse(...)`. A line importing the file's own module is none."""
    wanted = imports.lacking(prefix, suffix, syntax, LACKING)
    for text, places, fid, line in index.binders(wanted, syntax, BINDERS):
        names = imports.bound_names(text, syntax)
        uses = sum(wanted[name] for name in names if name in wanted)
        if not uses or imports.imports_itself(text, filename):
            continue
        draft = _count(found, cursor, text, "", ("index", fid, line))
        if draft is None:
            continue
        draft.binds, draft.bind_places = uses, places
        draft.bind_share = sum(name in wanted for name in names) / len(names)


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
        for (kind, where, line), evidence in zip(draft.places, draft.place_evidence):
            if kind == "index":
                if index is None:
                    continue
                before, after = index.around(where, line, AROUND)
            else:
                before, _, after = buffer_lines_around(texts[where], line, AROUND)
            _compare_neighbours(draft, cursor, before[-1].strip() if before else None, after[0].strip() if after else None)
            there = _words([t.strip() for t in before + after])
            if there:
                evidence[1] = len(here & there) / len(here | there)
                draft.context_match = max(draft.context_match, evidence[1])


def shape(stripped: str) -> str:
    """A line with its names, strings and numbers made alike (`gt=[` and `iadd=[` are both
    `a=[`): lines of one list, one table of cases, one run of assignments share a shape."""
    return NUMBER.sub("0", NAME.sub("a", STRING.sub('"', stripped))).replace(" ", "")


def _like(a: set[str] | frozenset[str], b: set[str] | frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def _compare_neighbours(draft: Draft, cursor: Cursor, prev: Optional[str], nxt: Optional[str]) -> None:
    """A place's previous and next lines against the cursor's: word overlap and shape."""
    if prev and cursor.prev:
        (words, form), (cursor_words, cursor_form) = _profile(prev), _profile(cursor.prev)
        draft.prev_like = max(draft.prev_like, _like(words, cursor_words))
        draft.shape_prev = draft.shape_prev or form == cursor_form
    if nxt and cursor.next:
        (words, form), (cursor_words, cursor_form) = _profile(nxt), _profile(cursor.next)
        draft.next_like = max(draft.next_like, _like(words, cursor_words))
        draft.shape_next = draft.shape_next or form == cursor_form


@functools.lru_cache(maxsize=4096)
def _profile(stripped: str) -> tuple[frozenset[str], str]:
    """A line's words and shape (the same neighbours come back request after request)."""
    return frozenset(WORD.findall(stripped)), shape(stripped)


def _window(text: str, at: int) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(start, end) of the NEAR_LINES non-blank lines before the line holding offset `at`
    (nearest last) and of those after it (nearest first)."""
    start = text.rfind("\n", 0, at) + 1
    before: list[tuple[int, int]] = []
    while len(before) < NEAR_LINES and (line := _prev_nonblank(text, start)) is not None:
        before.append(line)
        start = line[0]
    end = text.find("\n", at)
    after: list[tuple[int, int]] = []
    while end >= 0 and len(after) < NEAR_LINES and (line := _next_nonblank(text, end + 1)) is not None:
        after.append(line)
        end = line[1] if line[1] < len(text) else -1
    return before[::-1], after


def _near(found: dict[str, Draft], cursor: Cursor, text: str) -> None:
    """The lines near the cursor in its own buffer (`text`, the cursor marked) as drafts: each
    place's distance, its surroundings' overlap with the cursor's, and its neighbours' likeness
    to the cursor's neighbours (so the next entry of a list is told from a line of the code
    around it)."""
    at = text.find(CURSOR_MARK)
    if at < 0:
        return
    before, after = _window(text, at)
    spans: list[Optional[tuple[int, int]]] = [*before, None, *after]  # None: the cursor's line
    lines = [text[span[0] : span[1]].strip() if span else "" for span in spans]
    # Word sets as bit masks over the window's words: a place's surroundings are the OR of
    # eight lines' masks, and an overlap two popcounts (a set union per place cost ~5 ms).
    bits: dict[str, int] = {}
    masks = [_mask(WORD.findall(line), bits) for line in lines]
    here = _mask(WORD.findall(" ".join(cursor.before[-AROUND:] + cursor.after[:AROUND])), bits)
    prev_mask, next_mask = _mask(WORD.findall(cursor.prev), bits), _mask(WORD.findall(cursor.next), bits)
    prev_shape, next_shape = (shape(cursor.prev) if cursor.prev else None), (shape(cursor.next) if cursor.next else None)
    shapes: dict[int, str] = {}
    at_cursor = len(before)
    for j in sorted(range(len(spans)), key=lambda j: abs(j - at_cursor)):  # nearest first
        span = spans[j]
        if span is None or lines[j] == cursor.prev or lines[j] == cursor.next:
            continue  # the cursor's own neighbours again are no line to write (engine/degenerate.py drops the line above)
        draft = _count(found, cursor, lines[j], _indent(text, span[0]), ("buffer", 0, span[0]))
        if draft is None:
            continue
        draft.near += 1
        draft.distance = draft.distance or abs(j - at_cursor)
        if draft.near > PLACES:  # its PLACES nearest places are compared, no more (a `}` stands in every other line)
            continue
        there = 0
        for k in range(max(0, j - AROUND), min(len(spans), j + 1 + AROUND)):
            if k != j:
                there |= masks[k]
        draft.context_match = max(draft.context_match, _overlap(here, there))
        if j > 0 and lines[j - 1] and prev_shape is not None:
            draft.prev_like = max(draft.prev_like, _overlap(masks[j - 1], prev_mask))
            if not draft.shape_prev:
                draft.shape_prev = _shape_at(shapes, lines, j - 1) == prev_shape
        if j + 1 < len(spans) and lines[j + 1] and next_shape is not None:
            draft.next_like = max(draft.next_like, _overlap(masks[j + 1], next_mask))
            if not draft.shape_next:
                draft.shape_next = _shape_at(shapes, lines, j + 1) == next_shape


def _shape_at(shapes: dict[int, str], lines: list[str], k: int) -> str:
    found = shapes.get(k)
    if found is None:
        found = shapes[k] = shape(lines[k])
    return found


def _mask(words: list[str], bits: dict[str, int]) -> int:
    mask = 0
    for word in words:
        bit = bits.get(word)
        if bit is None:
            bit = bits[word] = 1 << len(bits)
        mask |= bit
    return mask


def _overlap(a: int, b: int) -> float:
    """Jaccard of two word masks (0 when either is empty)."""
    return (a & b).bit_count() / (a | b).bit_count() if a and b else 0.0


# The order drafts are offered in: a logistic score of their evidence (P(the draft is the
# line)), fitted on the tuning packages' lines by `python -m lab.workspace.recall --fit`
# (retrieval only; leave-one-package-out figures in docs/workspace.md).
RANK_FEATURES = ("both", "after_prev2", "after_prev", "before_next", "same_indent", "in_buffer", "context_match", "near", "closeness",
                 "shape_prev", "shape_next", "prev_like", "next_like", "in_scope", "neighbour", "log_chars", "binds", "bind_share",
                 "bind_places", "alike")
RANK_WEIGHTS = (0.1903, 1.2838, 0.0735, 0.2143, 1.2748, 0.5692, 3.1978, 1.2572, -5.2447, 0.7507, 1.2207, -0.0011, 0.5060, 1.5999, 0.6062, 0.1671, 0.0096, 4.0515,
                1.4310, 3.7682)
RANK_BIAS = -10.5047


def _rank_inputs(draft: Draft) -> tuple[float, ...]:
    """The retrieval score's inputs for one draft, in RANK_FEATURES order."""
    log1p = math.log1p
    return (log1p(draft.both), log1p(draft.after_prev2), log1p(draft.after_prev), log1p(draft.before_next), float(draft.same_indent > 0),
            float(draft.in_buffer > 0), draft.context_match, log1p(draft.near), 1.0 / draft.distance if draft.distance else 0.0,
            float(draft.shape_prev), float(draft.shape_next), draft.prev_like, draft.next_like, draft.in_scope,
            float(draft.after_prev + draft.before_next > 0), log1p(len(draft.text)), log1p(draft.binds), draft.bind_share,
            log1p(draft.bind_places), draft.alike)


def rank_features(draft: Draft) -> dict[str, float]:
    """The retrieval score's inputs for one draft by name (after `ranked_drafts`)."""
    return dict(zip(RANK_FEATURES, _rank_inputs(draft)))


def rank_score(feats: Mapping[str, float], weights: tuple[float, ...] = RANK_WEIGHTS, bias: float = RANK_BIAS) -> float:
    return bias + sum(w * feats[name] for w, name in zip(weights, RANK_FEATURES))


def ranked_drafts(drafts: Any, cursor: Cursor) -> list[Draft]:
    """All the drafts, best `rank` first (not cut at MAX_DRAFTS: lab/workspace/recall.py
    reads every rank)."""
    scope = set(NAME.findall(" ".join(cursor.before + cursor.after)))
    out = []
    for draft in drafts:
        if draft.after_prev:  # found after the cursor's previous line: that neighbour is the same
            draft.prev_like, draft.shape_prev = 1.0, True
        if draft.before_next:
            draft.next_like, draft.shape_next = 1.0, True
        names = set(NAME.findall(draft.line))
        draft.in_scope = len(names & scope) / len(names) if names else 0.0
        draft.rank = RANK_BIAS + sum(map(operator.mul, RANK_WEIGHTS, _rank_inputs(draft)))
        out.append(draft)
    out.sort(key=lambda d: d.rank, reverse=True)  # stable: among equals, the order they were found in
    return out
