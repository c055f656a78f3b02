"""The workspace index: every source line of a folder with its neighbours, in SQLite.

What a small model lacks is the user's own code, and code repeats itself: a line that
followed the same previous line elsewhere in the project, the definitions of names used
near the cursor. The index keeps, for each non-blank line of each indexed file (engine/
workspace/files.py decides which), its stripped text, its indentation and hashes of the
lines around it, so "what followed this line elsewhere" is one indexed lookup, and a
full-text index of each line's names, so "what followed a line like this one" is another
(`lines_like`). (A full-text table of 24-line chunks for "code like this" was built and
measured too, and left out: docs/workspace.md.)

SQLite is in Python's standard library, incremental (one file's rows are replaced in one
transaction, and only the rows an edit changed are rewritten: lines it merely moved keep
their rows and get new numbers), crash-safe, and bounded in memory (pages stay on disk). The database lives
in the user's cache folder, one per workspace root; a database that cannot be read, or
was written by another schema, is deleted and rebuilt, never a crash. Refreshing compares
each file's size and modification time with what was indexed, so a warm start reads only
what changed, and lists only the folders that changed (engine/workspace/files.py
`FolderScan`, kept in the `folders` table). The file system's root and the home folder
are refused (`WorkspaceRefused`): all of a disk, or all of a user's files, is no project. Unsaved buffers are not written here: callers hand them to retrieval
(engine/workspace/retrieve.py), which lets them win over the disk.
"""
from __future__ import annotations

import hashlib
import logging
import os
import re
import sqlite3
import threading
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Optional

from engine.types import InfillError

from .files import FolderScan, Limits, Selection, read_source, rules_fingerprint, skip_reason, text_reason, walk
from .imports import bound_names, family
from .ngrams import WorkspaceNgrams
from .packages import PackageTypes

log = logging.getLogger("infill.workspace")

SCHEMA_VERSION = "6"
COMMIT_SECONDS = 1.0  # a refresh commits its work this often (a crash loses at most this much)
MAX_LINE_CHARS = 400  # longer lines are data, not code worth repeating
# A save that rewrites more rows than this (a formatter run) puts the file's rows in the
# side table instead (`fresh`, see below); the next full refresh merges them back.
SIDE_ROWS = 1000
BINDS_PER_FILE = 2000  # (name, import line) rows kept per file: real files have tens
Progress = Callable[[int, int, str], None]  # (files done, files to do, current path)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS folders(path TEXT PRIMARY KEY, scan TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files(id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL, mtime_ns INTEGER, size INTEGER,
  fresh INTEGER NOT NULL DEFAULT 0);
""" + "".join(f"""
CREATE TABLE IF NOT EXISTS {table}(
  id INTEGER PRIMARY KEY, file INTEGER NOT NULL, line INTEGER NOT NULL, indent TEXT NOT NULL, text TEXT NOT NULL,
  key INTEGER NOT NULL, prev INTEGER NOT NULL, prev2 INTEGER NOT NULL, next INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS {table}_file ON {table}(file, line);
CREATE INDEX IF NOT EXISTS {table}_prev ON {table}(prev, file);
CREATE INDEX IF NOT EXISTS {table}_next ON {table}(next, file);
""" for table in ("lines", "fresh")) + """
CREATE TABLE IF NOT EXISTS binds(name TEXT NOT NULL, family TEXT NOT NULL, file INTEGER NOT NULL, line INTEGER NOT NULL, text TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS binds_name ON binds(name, family, text, file, line);  -- covering: a lookup reads no table row
CREATE INDEX IF NOT EXISTS binds_file ON binds(file);
"""
# `words`: a full-text index of the lines' names (SQLite's FTS5, external content: it
# stores only the postings, 13 MB for the standard library's 714k lines), kept in step
# with `lines` by `_words` wherever rows of `lines` are inserted or deleted (a statement
# per block of rows: triggers, a statement per row, made the standard library's cold
# build three times slower), so "a line like this one" is one lookup (`lines_like`): the
# neighbour a line had elsewhere need not be the cursor's neighbour verbatim
# (`constructor (range, options) {` for `constructor (comp, options) {`). Rows of the side
# table `fresh` are not in it until the next refresh merges them back. Where this SQLite
# lacks FTS5, the index has no `words` and `lines_like` finds nothing.
_WORDS_SCHEMA = """
CREATE VIRTUAL TABLE IF NOT EXISTS words USING fts5(text, content='lines', content_rowid='id', tokenize="unicode61 tokenchars '_$'", detail=none);
CREATE VIRTUAL TABLE IF NOT EXISTS words_vocab USING fts5vocab(words, 'row');
"""
# `binds`: each top-level import line under every name it binds (engine/workspace/imports.py),
# so a file that uses a name it never binds finds the import line other files bind it with
# (`binders`). A file's few import rows are rewritten whole each time it is indexed.
# A line's row has its own id, so the neighbour indexes (prev, file) and (next, file) hold
# no line number: a line that an edit above it moved is renumbered in its row and in
# lines_file alone, and only lines whose text or neighbours changed touch the neighbour
# indexes, whose entries lie scattered by hash over the whole workspace (rewriting every
# entry of a 300 kB file there took 200-600 ms). Lookups sort each file's matches by line
# number, so they return what a (prev, file, line) index would, in the same order.
# A save that rewrites a whole large file would still scatter thousands of entries over
# those indexes (252 ms for the standard library's largest file). Such a file's rows go to
# `fresh`, a side table of the same shape whose indexes are small, and the file is marked
# `fresh` so that lookups skip its stale rows in `lines`; the next full refresh merges the
# side table back (`_merge_side`). Lookups read both and return what one table would.
_COLUMNS = "line, indent, text, key, prev, prev2, next"
_STALE = "file NOT IN (SELECT id FROM files WHERE fresh)"


def line_key(stripped: str) -> int:
    """A stable 63-bit hash of a stripped line (Python's hash() changes per process)."""
    return int.from_bytes(hashlib.blake2b(stripped.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "big") >> 1


EMPTY_KEY = line_key("")  # "no line": the start or end of a file


@dataclass(frozen=True)
class SourceLine:
    """One non-blank line with the stripped lines before and after it (blank lines skipped)."""

    number: int  # 0-based line number in its file
    indent: str
    text: str  # stripped
    prev: str
    prev2: str
    next: str


def source_lines(text: str) -> list[SourceLine]:
    """The non-blank lines of `text` with their non-blank neighbours."""
    numbered = [(i, raw) for i, raw in enumerate(text.split("\n")) if raw.strip()]
    out = []
    for j, (i, raw) in enumerate(numbered):
        stripped = raw.strip()
        out.append(SourceLine(i, raw[: len(raw) - len(raw.lstrip())], stripped,
                              numbered[j - 1][1].strip() if j >= 1 else "", numbered[j - 2][1].strip() if j >= 2 else "",
                              numbered[j + 1][1].strip() if j + 1 < len(numbered) else ""))
    return out


Row = tuple[int, str, str, int, int, int, int]  # (line, indent, text, key, prev key, prev2 key, next key)


def line_rows(text: str) -> list[Row]:
    """The rows the index holds for a file's text: `source_lines` with each stripped line
    hashed by `line_key`, lines longer than MAX_LINE_CHARS left out (they stay neighbours).
    One pass, each distinct line hashed once: a line is its neighbours' neighbour too."""
    numbers, indents, texts = [], [], []
    for i, raw in enumerate(text.split("\n")):
        stripped = raw.strip()
        if stripped:
            numbers.append(i)
            indents.append(raw[: len(raw) - len(raw.lstrip())])
            texts.append(stripped)
    hashes: dict[str, int] = {"": EMPTY_KEY}
    for stripped in texts:
        if stripped not in hashes:
            hashes[stripped] = int.from_bytes(hashlib.blake2b(stripped.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "big") >> 1
    keys = [hashes[t] for t in texts]
    prev = [EMPTY_KEY, *keys[:-1]] if keys else []
    prev2 = [EMPTY_KEY, EMPTY_KEY, *keys[:-2]][: len(keys)]
    following = [*keys[1:], EMPTY_KEY] if keys else []
    return [row for row in zip(numbers, indents, texts, keys, prev, prev2, following) if len(row[2]) <= MAX_LINE_CHARS]


@dataclass
class IndexReport:
    """What one refresh did: `infill index` prints it, the LSP logs it."""

    root: str
    files: int = 0  # files in the index after the refresh
    lines: int = 0
    bytes: int = 0  # bytes of the indexed files
    updated: int = 0  # files (re)read by this refresh
    removed: int = 0
    folders: int = 0  # folders walked
    listed: int = 0  # of them, those whose entries were read (the others had not changed)
    seconds: float = 0.0
    skipped: dict[str, int] = field(default_factory=dict)
    examples: dict[str, str] = field(default_factory=dict)
    look_alike: bool = True  # the full-text index of names is there (no FTS5 in this SQLite: no lines after look-alike neighbours)

    def lines_of_text(self) -> list[str]:
        out = [f"{self.root}: {self.files} files, {self.lines} lines, {self.bytes / 1e6:.1f} MB indexed in {self.seconds:.1f} s"
               f" ({self.updated} read, {self.removed} removed, {self.listed} of {self.folders} folders listed)"]
        if not self.look_alike:
            out.append("  no lines after look-alike neighbours: this Python's SQLite has no FTS5 (the other drafts work)")
        for reason, count in sorted(self.skipped.items(), key=lambda kv: -kv[1]):
            out.append(f"  skipped {count:>6}  {reason}  (e.g. {self.examples.get(reason, '')})")
        return out


class WorkspaceRefused(InfillError):
    """A folder that is no workspace: the file system's root or the home folder. Indexing
    it would walk every project, tool cache and mount below it (and `/proc` cannot all be
    read), for code that is mostly not the user's project."""


def too_broad(root: Path) -> Optional[str]:
    """Why the (resolved) folder `root` is too broad to index ("/ is the file system's
    root"), or None."""
    if root.parent == root:
        return f"{root} is the file system's root"
    try:
        home: Optional[Path] = Path.home().resolve()
    except (RuntimeError, OSError):  # no home folder known
        home = None
    if root == home:
        return f"{root} is the home folder"
    return None


def index_path(root: Path, cache_dir: Optional[Path] = None) -> Path:
    """The database file of the (resolved) workspace `root` in the cache folder."""
    digest = hashlib.sha256(str(root).encode()).hexdigest()[:16]
    return (cache_dir or default_cache_dir()) / "workspaces" / f"{root.name[:40]}-{digest}.sqlite3"


def forget_index(root: Path | str, cache_dir: Optional[Path] = None) -> Optional[Path]:
    """Delete the index of `root` without opening it (so also the index of a folder refused
    or gone); the database file removed, or None when there was none."""
    db_path = index_path(Path(root).resolve(), cache_dir)
    existed = db_path.exists()
    for suffix in ("", "-wal", "-shm", "-journal"):
        try:
            os.unlink(str(db_path) + suffix)
        except FileNotFoundError:
            pass
    return db_path if existed else None


def default_cache_dir() -> Path:
    """Where indexes live: $INFILL_CACHE_DIR, else $XDG_CACHE_HOME/infill, else ~/.cache/infill."""
    if os.environ.get("INFILL_CACHE_DIR"):
        return Path(os.environ["INFILL_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "infill"


class _OtherSchema(sqlite3.DatabaseError):
    """An index written by another version of infill (its schema, the message)."""


def _has_words(db: sqlite3.Connection) -> bool:
    return db.execute("SELECT 1 FROM sqlite_master WHERE name = 'words'").fetchone() is not None


LIKE_NAMES = 24  # names of a line a look-alike search reads (`_names`)
_NAME = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")  # a name, as retrieve.py's NAME (that module imports this one)


def _names(line: str) -> list[str]:
    """The first LIKE_NAMES distinct names of a line as the `words` index spells them (lower
    case): each costs a look at the index's counts, and a 10,000-character neighbour line is
    no reason for a thousand."""
    names: dict[str, None] = {}
    for found in _NAME.finditer(line):
        names[found.group().lower()] = None
        if len(names) >= LIKE_NAMES:
            break
    return list(names)


class WorkspaceIndex:
    """The index of one workspace root. Thread-safe: one connection behind a lock, and a
    refresh commits file by file, so a request's lookup never waits for a whole refresh."""

    def __init__(self, root: Path | str, *, db_path: Optional[Path] = None, limits: Limits = Limits(), cache_dir: Optional[Path] = None) -> None:
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise NotADirectoryError(f"workspace {str(root)!r} is not a folder")
        reason = too_broad(self.root)
        if reason is not None:  # before anything is written: no cache file for a folder refused
            raise WorkspaceRefused(f"{reason}: too broad to index; name a project folder")
        self.limits = limits
        self.db_path = Path(db_path) if db_path is not None else index_path(self.root, cache_dir)
        self.lock = threading.RLock()
        self.db = self._open()
        self.has_words = _has_words(self.db)  # the look-alike lines' full-text index (`lines_like`, `_words`)
        self.generation = 0  # counts the files (re)indexed or removed: what the tables below are rebuilt on
        # The copy rule's n-gram tables of these files, one per tokenizer (engine/workspace/ngrams.py).
        self.copy_tables: "weakref.WeakKeyDictionary[Any, WorkspaceNgrams]" = weakref.WeakKeyDictionary()
        self.packages = PackageTypes(self.root)  # how Node loads the JavaScript here (package_type)
        self._lines_holding: dict[str, int] = {}  # name -> lines holding it, for `generation` below
        self._lines_holding_generation = -1

    # -- storage --------------------------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        """The database, rebuilt when it cannot be read or has another schema."""
        self.db_path.parent.mkdir(parents=True, exist_ok=True)
        try:
            if not self.db_path.exists():
                raise FileNotFoundError
            db = self._connect()
            try:
                version = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
                if version is not None and version[0] != SCHEMA_VERSION:
                    raise _OtherSchema(version[0])
                if version is None or str(self.root) != (db.execute("SELECT value FROM meta WHERE key = 'root'").fetchone() or [""])[0]:
                    raise sqlite3.DatabaseError(f"no schema or another root in {self.db_path}")
                db.execute("SELECT count(*) FROM files").fetchone()
                db.execute("SELECT id FROM lines LIMIT 1").fetchone()
                if _has_words(db):  # written where SQLite had FTS5: this one must have it too (every edit writes there)
                    db.execute("SELECT rowid FROM words LIMIT 1").fetchone()
                # Indexes written before folder scans were kept gain their table here.
                db.execute("CREATE TABLE IF NOT EXISTS folders(path TEXT PRIMARY KEY, scan TEXT NOT NULL)")
            except BaseException:
                db.close()
                raise
            return db
        except (sqlite3.DatabaseError, FileNotFoundError) as error:
            if isinstance(error, _OtherSchema):  # an upgrade, not a fault
                log.info("workspace index %s was written by another version of infill (schema %s, now %s): rebuilding it",
                         self.db_path, error, SCHEMA_VERSION)
            elif self.db_path.exists():
                log.warning("workspace index %s unreadable (%s): rebuilding it", self.db_path, error)
            self._delete_files()
            db = self._connect()
            try:
                db.executescript(_SCHEMA)
                try:
                    db.executescript(_WORDS_SCHEMA)
                except sqlite3.OperationalError as error:  # "no such module: fts5"
                    log.info("workspace index without look-alike lines: %s", error)
            except BaseException:
                db.close()
                raise
            db.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?), ('root', ?)", (SCHEMA_VERSION, str(self.root)))
            db.commit()
            return db

    def _connect(self) -> sqlite3.Connection:
        """A connection to the database file (its tables are made by `_open`, once the file
        is known to be new: an old schema's file is deleted before anything is built in it)."""
        db = sqlite3.connect(self.db_path, check_same_thread=False)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
        except sqlite3.DatabaseError:
            db.close()
            raise
        return db

    def _delete_files(self) -> None:
        for suffix in ("", "-wal", "-shm", "-journal"):
            try:
                os.unlink(str(self.db_path) + suffix)
            except FileNotFoundError:
                pass

    def _folder_scans(self) -> dict[str, FolderScan]:
        """The last walk's folder scans, when they were made under today's rules."""
        fingerprint = rules_fingerprint()
        with self.lock:
            row = self.db.execute("SELECT value FROM meta WHERE key = 'walk_rules'").fetchone()
            if row is None or row[0] != fingerprint:
                with self.db:
                    self.db.execute("DELETE FROM folders")
                    self.db.execute("INSERT OR REPLACE INTO meta VALUES ('walk_rules', ?)", (fingerprint,))
                return {}
            rows = self.db.execute("SELECT path, scan FROM folders").fetchall()
        scans = {}
        for path, text in rows:
            try:
                scans[path] = FolderScan.from_json(text)
            except (ValueError, TypeError):  # a row that does not parse: that folder is listed again
                continue
        return scans

    def _save_folder_scans(self, old: dict[str, FolderScan], new: dict[str, FolderScan]) -> None:
        """Store the scans this walk made, and drop those of folders it no longer walks."""
        with self.lock, self.db:
            self.db.executemany("INSERT OR REPLACE INTO folders VALUES (?, ?)",
                                [(path, scan.to_json()) for path, scan in new.items() if old.get(path) is not scan])
            self.db.executemany("DELETE FROM folders WHERE path = ?", [(path,) for path in old if path not in new])

    def close(self) -> None:
        with self.lock:
            self.db.close()

    def forget(self) -> None:
        """Delete the index's files (after `close`)."""
        self._delete_files()

    # -- building ---------------------------------------------------------------------------

    def refresh(self, progress: Optional[Progress] = None) -> IndexReport:
        """Bring the index up to date with the disk: new and changed files read, deleted and
        now-excluded ones dropped."""
        start = time.perf_counter()
        self._merge_side()
        scans = self._folder_scans()
        selection: Selection = walk(self.root, self.limits, scans)
        self._save_folder_scans(scans, selection.folders)
        report = IndexReport(str(self.root), folders=len(selection.folders), listed=selection.listed, look_alike=self.has_words)
        with self.lock:
            known = {path: (fid, mtime, size) for fid, path, mtime, size in self.db.execute("SELECT id, path, mtime_ns, size FROM files")}
        keep = {relative for relative, _ in selection.found}
        for relative in sorted(set(known) - keep):
            self._remove(known[relative][0])
            report.removed += 1
        todo = []
        for path, (relative, st) in zip(selection.kept, selection.found):  # the walk's stat: taken before the text is read
            old = known.get(relative)
            if old is None or old[1] != st.st_mtime_ns or old[2] != st.st_size:
                todo.append((path, relative, st))
        last_commit = time.perf_counter()
        for done, (path, relative, st) in enumerate(todo):
            if progress is not None:
                progress(done, len(todo), relative)
            reason = self._index_file(path, relative, st.st_mtime_ns, st.st_size, known.get(relative, (None,))[0], commit=False, side=False)
            if reason is not None:
                selection.skip(reason, relative)
            else:
                report.updated += 1
            if time.perf_counter() - last_commit > COMMIT_SECONDS:  # a commit per file costs a sync each
                with self.lock:
                    self.db.commit()
                last_commit = time.perf_counter()
        with self.lock:
            self.db.commit()
        if progress is not None:
            progress(len(todo), len(todo), "")
        with self.lock:
            report.files, report.bytes = self.db.execute("SELECT count(*), coalesce(sum(size), 0) FROM files").fetchone()
            report.lines = self.db.execute(f"SELECT (SELECT count(*) FROM lines WHERE {_STALE}) + (SELECT count(*) FROM fresh)").fetchone()[0]
        report.skipped, report.examples = dict(selection.skipped), dict(selection.examples)
        report.seconds = time.perf_counter() - start
        return report

    def update_file(self, path: Path | str) -> Optional[str]:
        """Re-index one file after it changed on disk (a save, a watched-file event); a
        deleted or now-excluded file leaves the index. The reason it is not indexed, or None."""
        path = Path(path)
        if not path.is_absolute():
            path = self.root / path
        relative = os.path.relpath(os.path.abspath(path), self.root)
        if relative.startswith(".."):
            return "outside the workspace"
        with self.lock:
            row = self.db.execute("SELECT id FROM files WHERE path = ?", (relative,)).fetchone()
        old_id = row[0] if row else None
        reason = skip_reason(self.root, path, self.limits) if os.path.lexists(path) else "deleted"
        if reason is None:
            try:
                st = path.stat()
            except OSError as error:  # gone or unreadable since the check
                reason = f"unreadable ({type(error).__name__})"
            else:  # (a text it refuses takes the file's old rows out itself)
                return self._index_file(path, relative, st.st_mtime_ns, st.st_size, old_id)
        if old_id is not None:
            self._remove(old_id)
        return reason

    def _index_file(self, path: Path, relative: str, mtime_ns: int, size: int, old_id: Optional[int], commit: bool = True,
                    data: Optional[bytes] = None, side: bool = True) -> Optional[str]:
        """Replace one file's rows (committed now, or with the refresh's next batch). The
        reason it was not indexed, or None. `data`: the file's bytes, when the caller has
        them (lab/workspace/bench_index.py times edits it never writes to disk). `side`: a
        rewrite of more than SIDE_ROWS rows may go to the side table (not during a refresh).
        The size and time were read before the text: a file rewritten meanwhile differs on
        the next refresh and is read again."""
        text, reason = read_source(path) if data is None else text_reason(data)
        if text is None:
            if old_id is not None:
                self._remove(old_id)
            return reason
        rows = line_rows(text)
        with self.lock:
            try:
                if old_id is not None:
                    self._replace_rows(old_id, rows, self._table(old_id), side)
                    self.db.execute("UPDATE files SET mtime_ns = ?, size = ? WHERE id = ?", (mtime_ns, size, old_id))
                else:
                    file_id = self.db.execute("INSERT INTO files(path, mtime_ns, size) VALUES (?, ?, ?)", (relative, mtime_ns, size)).lastrowid
                    self._insert_rows(file_id, rows)
                self._replace_binds(old_id if old_id is not None else file_id, relative, rows, new_file=old_id is None)
            except BaseException:
                self.db.rollback()
                raise
            if commit:
                self.db.commit()
            self.generation += 1
        return None

    def _insert_rows(self, file_id: int, rows: list[Row], table: str = "lines") -> None:
        self.db.executemany(f"INSERT INTO {table}(file, {_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [(file_id, *row) for row in rows])
        if rows and table == "lines":
            self._words(file_id, rows[0][0], rows[-1][0])

    def _words(self, file_id: int, first: int = -1, last: int = 1 << 62, delete: bool = False) -> None:
        """Put a file's rows of `lines` numbered `first`..`last` in the full-text index, or
        take them out (`delete`: before the rows themselves go, since the index reads their
        text to find its postings)."""
        if not self.has_words:
            return
        if delete:
            self.db.execute("INSERT INTO words(words, rowid, text) SELECT 'delete', id, text FROM lines WHERE file = ? AND line BETWEEN ? AND ?",
                            (file_id, first, last))
        else:
            self.db.execute("INSERT INTO words(rowid, text) SELECT id, text FROM lines WHERE file = ? AND line BETWEEN ? AND ?", (file_id, first, last))

    def _replace_binds(self, file_id: int, relative: str, rows: list[Row], new_file: bool) -> None:
        """A file's import lines under the names they bind (its old ones deleted first)."""
        syntax = family(relative)
        if not new_file:
            self.db.execute("DELETE FROM binds WHERE file = ?", (file_id,))
        if syntax is None:
            return
        binds = [(name, syntax, file_id, line, text) for line, indent, text, *_ in rows if not indent for name in bound_names(text, syntax)]
        del binds[BINDS_PER_FILE:]  # a generated file of imports would rewrite them all on every save
        if binds:
            self.db.executemany("INSERT INTO binds(name, family, file, line, text) VALUES (?, ?, ?, ?, ?)", binds)

    def _table(self, file_id: int) -> str:
        """The table holding a file's rows: `fresh` (the side table) or `lines`."""
        row = self.db.execute("SELECT fresh FROM files WHERE id = ?", (file_id,)).fetchone()
        return "fresh" if row and row[0] else "lines"

    def _replace_rows(self, file_id: int, rows: list[Row], table: str = "lines", side: bool = False) -> None:
        """Make a file's rows `rows`, rewriting only what changed: the rows before the first
        changed one stay, the rows after the last one stay too, renumbered by how many
        lines the edit added or removed, and those between are replaced. What the file's
        rows are afterwards is exactly `rows` (one edit or many, a file rewritten whole).
        With `side`, a rewrite of more than SIDE_ROWS rows of `lines` puts the whole file
        in the side table instead (its stale rows in `lines` are skipped by lookups)."""
        old = self.db.execute(f"SELECT {_COLUMNS} FROM {table} WHERE file = ? ORDER BY line", (file_id,)).fetchall()
        limit = min(len(old), len(rows))
        same = next((i for i, (a, b) in enumerate(zip(old, rows)) if a != b), limit)  # rows equal, number and all
        shift = rows[-1][0] - old[-1][0] if old and rows else 0
        moved = 0  # rows equal but for their number, which moved by `shift`
        for a, b in zip(reversed(old[same:]), reversed(rows[same:])):
            if b[0] - a[0] != shift or b[1:] != a[1:]:
                break
            moved += 1
        if same == len(old) == len(rows):
            return
        gone = old[same : len(old) - moved]
        if side and table == "lines" and len(gone) + len(rows) - same - moved > SIDE_ROWS:
            self._insert_rows(file_id, rows, "fresh")
            self.db.execute("UPDATE files SET fresh = 1 WHERE id = ?", (file_id,))
            return
        if gone:
            if table == "lines":
                self._words(file_id, gone[0][0], gone[-1][0], delete=True)
            self.db.execute(f"DELETE FROM {table} WHERE file = ? AND line BETWEEN ? AND ?", (file_id, gone[0][0], gone[-1][0]))
        if moved and shift:
            self.db.execute(f"UPDATE {table} SET line = line + ? WHERE file = ? AND line >= ?", (shift, file_id, old[len(old) - moved][0]))
        self._insert_rows(file_id, rows[same : len(rows) - moved], table)

    def _merge_side(self) -> None:
        """Move the side table's files back into `lines` (a refresh's first step), one file
        per transaction, so lookups interleave."""
        with self.lock:
            files = [fid for (fid,) in self.db.execute("SELECT id FROM files WHERE fresh")]
        for file_id in files:
            with self.lock, self.db:
                rows = self.db.execute(f"SELECT {_COLUMNS} FROM fresh WHERE file = ? ORDER BY line", (file_id,)).fetchall()
                self._replace_rows(file_id, rows, "lines")
                self.db.execute("DELETE FROM fresh WHERE file = ?", (file_id,))
                self.db.execute("UPDATE files SET fresh = 0 WHERE id = ?", (file_id,))

    def _remove(self, file_id: int) -> None:
        with self.lock:
            with self.db:
                self._words(file_id, delete=True)
                self.db.execute("DELETE FROM lines WHERE file = ?", (file_id,))
                self.db.execute("DELETE FROM fresh WHERE file = ?", (file_id,))
                self.db.execute("DELETE FROM binds WHERE file = ?", (file_id,))
                self.db.execute("DELETE FROM files WHERE id = ?", (file_id,))
            self.generation += 1

    def rows(self, file_id: int) -> list[Row]:
        """A file's rows, in line order, from whichever table holds them."""
        with self.lock:
            return self.db.execute(f"SELECT {_COLUMNS} FROM {self._table(file_id)} WHERE file = ? ORDER BY line", (file_id,)).fetchall()

    # -- lookups ----------------------------------------------------------------------------

    def files(self) -> list[tuple[Path, tuple[int, int]]]:
        """Every indexed file's absolute path and (mtime_ns, size), by path: what the copy
        rule's n-gram table (engine/workspace/ngrams.py) is built from and keyed by."""
        with self.lock:
            rows = self.db.execute("SELECT path, mtime_ns, size FROM files ORDER BY path").fetchall()
        return [(self.root / path, (mtime, size)) for path, mtime, size in rows]

    def package_type(self, path: Path | str) -> Optional[str]:
        """The "type" of the package.json nearest above `path` inside this workspace ("module",
        "commonjs", ...), None without one or for a path outside (engine/workspace/packages.py)."""
        return self.packages.type_of(path)

    def file_id(self, path: Path | str) -> Optional[int]:
        """The id of an indexed file (absolute or root-relative path), or None."""
        path = Path(path)
        relative = os.path.relpath(os.path.realpath(path), self.root) if path.is_absolute() else str(path)
        with self.lock:
            row = self.db.execute("SELECT id FROM files WHERE path = ?", (relative,)).fetchone()
        return row[0] if row else None

    def paths(self, file_ids: Iterable[int]) -> dict[int, str]:
        """The root-relative paths of indexed files by id (ids no longer indexed left out):
        where a draft's place is, for the user (engine/workspace/retrieve.py, Draft.origin)."""
        ids = sorted(set(file_ids))
        if not ids:
            return {}
        with self.lock:
            rows = self.db.execute(f"SELECT id, path FROM files WHERE id IN ({', '.join('?' * len(ids))})", ids).fetchall()
        return {file_id: path for file_id, path in rows}

    def lines_after(self, prev: str, limit: int) -> list[tuple[int, int, str, str, int, int]]:
        """(file, line, indent, text, prev2 key, next key) of lines whose previous non-blank line is `prev`."""
        with self.lock:
            return self._lookup("prev2, next", "prev", line_key(prev), limit)

    def lines_before(self, following: str, limit: int) -> list[tuple[int, int, str, str, int, int]]:
        """(file, line, indent, text, prev key, prev2 key) of lines whose next non-blank line is `following`."""
        with self.lock:
            return self._lookup("prev, prev2", "next", line_key(following), limit)

    def _lookup(self, columns: str, by: str, key: int, limit: int) -> list[tuple[int, int, str, str, int, int]]:
        """Rows whose `by` neighbour key is `key`, from both tables (a side-table file's
        stale rows in `lines` skipped), in file and line order."""
        select = f"SELECT file, line, indent, text, {columns} FROM"
        return self.db.execute(f"{select} lines WHERE {by} = ? AND {_STALE} UNION ALL {select} fresh WHERE {by} = ? ORDER BY file, line LIMIT ?",
                               (key, key, limit)).fetchall()

    def binders(self, wanted: Mapping[str, int], syntax: str, limit: int) -> list[tuple[str, int, int, int]]:
        """(text, places, file, line) of the import lines of `syntax` ("python", "js") that
        bind any of the names in `wanted` (name -> how often the file uses it), at most
        `limit`: those binding the most-used name first, then those standing in the most
        places; one of its places as (file, line). (Grouped by line and name in SQL and
        ordered here: a join on the uses made SQLite's query ten times slower.)"""
        if not wanted:
            return []
        names = list(wanted)
        with self.lock:
            rows = self.db.execute(f"SELECT text, name, COUNT(*), MIN(file), line FROM binds WHERE family = ? AND name IN ({', '.join('?' * len(names))}) "
                                   "GROUP BY text, name", (syntax, *names)).fetchall()
        lines: dict[str, list] = {}
        for text, name, places, file_id, line in rows:
            found = lines.get(text)
            if found is None:
                lines[text] = [wanted[name], places, file_id, line]
            else:
                found[0], found[1] = max(found[0], wanted[name]), max(found[1], places)
        best = sorted(lines.items(), key=lambda item: (-item[1][0], -item[1][1], item[0]))[:limit]
        return [(text, places, file_id, line) for text, (_, places, file_id, line) in best]

    def lines_like(self, line: str, side: str, limit: int, names: int = 3, rare: int = 1000) -> list[tuple[int, int, str, str, str]]:
        """(file, line, indent, text, neighbour) of lines whose previous (`side` "after") or
        next (`side` "before") non-blank line holds the rarest names of `line`: all of its
        `names` rarest names that stand in at most `rare` lines, then fewer of them (the
        rarest kept) until `limit` are found. A name as common as `self` or `return` finds
        nothing sharp, and reading its postings would cost milliseconds; no ranking is asked
        of SQLite either (bm25 over every posting cost 1-4 ms a lookup on 1.1M lines): the
        caller compares the neighbours it gets. Lines of side-table files are not searched;
        [] without the full-text index or a rare enough name."""
        if not self.has_words or side not in ("after", "before"):
            return []
        step = "min(line) FROM lines WHERE file = m.file AND line > m.line" if side == "after" else "max(line) FROM lines WHERE file = m.file AND line < m.line"
        query = ("SELECT m.id, l.file, l.line, l.indent, l.text, m.text FROM (SELECT rowid AS id FROM words WHERE words MATCH ? LIMIT ?) AS hit "
                 f"JOIN lines AS m ON m.id = hit.id JOIN lines AS l ON l.file = m.file AND l.line = (SELECT {step}) WHERE m.{_STALE}")
        with self.lock:
            holding = self._holding(_names(line))
            chosen = sorted((n for n in holding if 0 < holding[n] <= rare), key=holding.__getitem__)[:names]
            found: dict[int, tuple[int, int, str, str, str]] = {}
            for count in range(len(chosen), 0, -1):
                for row_id, *row in self.db.execute(query, (" AND ".join(f'"{n}"' for n in chosen[:count]), limit)):
                    found.setdefault(row_id, tuple(row))  # type: ignore[arg-type]
                if len(found) >= limit:
                    break
        return list(found.values())[:limit]

    def _holding(self, names: list[str]) -> dict[str, int]:
        """How many lines hold each name (the full-text index's own counts, remembered until
        the index changes: the same neighbours come back request after request)."""
        if self._lines_holding_generation != self.generation or len(self._lines_holding) > 100_000:
            self._lines_holding, self._lines_holding_generation = {}, self.generation
        out = {}
        for name in names:
            count = self._lines_holding.get(name)
            if count is None:
                row = self.db.execute("SELECT doc FROM words_vocab WHERE term = ?", (name,)).fetchone()
                count = self._lines_holding[name] = row[0] if row else 0
            out[name] = count
        return out

    def around(self, file_id: int, line: int, count: int) -> tuple[list[str], list[str]]:
        """The `count` non-blank stripped lines before and after line `line` of a file."""
        with self.lock:
            table = self._table(file_id)
            before = self.db.execute(f"SELECT text FROM {table} WHERE file = ? AND line < ? ORDER BY line DESC LIMIT ?", (file_id, line, count)).fetchall()
            after = self.db.execute(f"SELECT text FROM {table} WHERE file = ? AND line > ? ORDER BY line LIMIT ?", (file_id, line, count)).fetchall()
        return [t for (t,) in reversed(before)], [t for (t,) in after]

    def lines_around(self, file_id: int, line: int, count: int) -> list[str]:
        """Line `line` of a file with the `count` non-blank lines before and after it, as
        indented in the file (a snippet `infill lsp --remote` sends: infill_lsp/remote.py)."""
        with self.lock:
            table = self._table(file_id)
            before = self.db.execute(f"SELECT indent || text FROM {table} WHERE file = ? AND line < ? ORDER BY line DESC LIMIT ?", (file_id, line, count)).fetchall()
            rest = self.db.execute(f"SELECT indent || text FROM {table} WHERE file = ? AND line >= ? ORDER BY line LIMIT ?", (file_id, line, count + 1)).fetchall()
        return [t for (t,) in reversed(before)] + [t for (t,) in rest]
