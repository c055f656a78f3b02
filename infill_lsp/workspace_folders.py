"""The editor's workspace folders, each with its index (engine/workspace/), for the
language server (issue 36: the repository is the context).

Folders come from `initialize` (`workspaceFolders`, else `rootUri` / `rootPath`) and
`workspace/didChangeWorkspaceFolders`; with none, a request draws on the open documents
only. Each folder's WorkspaceIndex is opened and refreshed on a background thread once
the client said `initialized`: a completion never waits for it. Until the refresh is done
a request retrieves from what the index holds so far (last session's database, then what
this refresh has committed: the index is thread-safe and commits as it goes). The
refresh is reported as $/progress ("indexing N of M files") when the client supports
window.workDoneProgress, and its IndexReport goes to the client's log. A file saved
(`textDocument/didSave`) or changed on disk (`workspace/didChangeWatchedFiles`, registered
dynamically when the client allows it) is re-indexed alone, on the same thread, after
any refresh in progress. `workspaceIndex: false` (a setting) or `infill lsp --no-workspace`
turns the index off; the open documents still serve as drafts' material.

Every completion gets a WorkspaceContext (infill_lsp/completion_service.py): the index of
the deepest folder holding its document (None outside every folder) and the text of the
other open documents by path, which win over their files on disk.
"""
from __future__ import annotations

import asyncio
import logging
import os
import queue
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Optional
from urllib.parse import urlsplit

from lsprotocol import types
from pygls.uris import to_fs_path

import grammars
from engine.workspace import IndexReport, WorkspaceIndex, too_broad
from engine.workspace.files import walk_reaches

log = logging.getLogger(__name__)

PROGRESS_EVERY_S = 0.2  # at most this often a $/progress report while indexing
WATCHER_ID = "infill-workspace-files"
TITLE = "infill: indexing workspace"


def uri_path(uri: str) -> Optional[str]:
    """The file-system path of a `file:` URI; None for any other (untitled:, ...)."""
    try:
        if urlsplit(uri).scheme != "file":
            return None
        return to_fs_path(uri)
    except (ValueError, TypeError):
        return None


def initial_folders(params: types.InitializeParams) -> list[Path]:
    """The folders `initialize` names: workspaceFolders, else rootUri, else rootPath."""
    paths: list[Optional[str]] = [uri_path(folder.uri) for folder in params.workspace_folders or []]
    if not paths and params.root_uri:
        paths = [uri_path(params.root_uri)]
    if not paths and params.root_path:
        paths = [params.root_path]
    return [Path(p) for p in paths if p]


def watched_glob() -> str:
    """The didChangeWatchedFiles glob: the extensions of the languages the grammars know."""
    extensions = sorted({ext.lstrip(".") for spec in grammars.languages() for ext in spec.extensions})
    return "**/*.{" + ",".join(extensions) + "}"


def walk_skips(root: Path, path: Path) -> bool:
    """Whether a refresh's walk would never reach `path` (the walk's own rule,
    engine/workspace/files.py `walk_reaches`: skipped folders, a first-party `vendor/`
    kept, `.gitignore` / `.infillignore` with their `!` re-includes).
    `WorkspaceIndex.update_file` checks the file itself, not the folders above it."""
    return not walk_reaches(root, path)


class _Stopped(Exception):
    """A refresh given up: the server is closing, or its folder left the workspace."""


@dataclass(eq=False)
class Folder:
    root: Path
    index: Optional[WorkspaceIndex] = None  # opened on the indexing thread
    state: str = "waiting"  # waiting | queued | indexing | ready | failed | stopped
    report: Optional[IndexReport] = None
    removed: bool = False


class _SerialThread:
    """One daemon thread running jobs in order, each answered on the asyncio loop that
    submitted it (a daemon, not an executor's thread: a refresh of a large folder must
    never hold up the process's exit)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._jobs: "queue.Queue[tuple[Callable[[], Any], asyncio.AbstractEventLoop, asyncio.Future[Any]]]" = queue.Queue()
        self._thread: Optional[threading.Thread] = None

    def submit(self, job: Callable[[], Any]) -> "asyncio.Future[Any]":
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._jobs.put((job, loop, future))
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
            self._thread.start()
        return future

    def _run(self) -> None:
        while True:
            job, loop, future = self._jobs.get()
            try:
                outcome: tuple[bool, Any] = (True, job())
            except BaseException as error:  # handed to the awaiting coroutine
                outcome = (False, error)
            try:
                loop.call_soon_threadsafe(_settle, future, outcome)
            except RuntimeError:  # the loop is closed: the server is gone
                pass


def _settle(future: "asyncio.Future[Any]", outcome: tuple[bool, Any]) -> None:
    if future.done():
        return
    ok, value = outcome
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)


class WorkspaceFolders:
    """The workspace folders and their indexes. Folders are added and removed on the event
    loop; indexes are opened, refreshed, updated and closed on one background thread."""

    def __init__(self, *, allowed: bool = True, cache_dir: Optional[Path] = None) -> None:
        self.allowed = allowed  # False: `infill lsp --no-workspace`
        self.cache_dir = cache_dir  # None: engine/workspace's default (INFILL_CACHE_DIR, ~/.cache/infill)
        self.folders: dict[Path, Folder] = {}
        self.updates = 0  # files re-indexed after a save or a watched-file event
        self.watching = False  # didChangeWatchedFiles registered with the client
        self.notices: list[str] = []  # folders not indexed, and why: told to the client's log once
        self._thread = _SerialThread("infill-index")
        self._stop = threading.Event()

    # -- folders --------------------------------------------------------------------------------

    def add(self, roots: Iterable[Path]) -> list[Folder]:
        """Add folders (existing ones; each once); returns those that are new."""
        new = []
        for root in roots:
            try:
                resolved = Path(root).expanduser().resolve()
            except (OSError, RuntimeError):
                continue
            if resolved in self.folders or not resolved.is_dir():
                if not resolved.is_dir():
                    self.notices.append(f"workspace folder {root} is not a folder: not indexed")
                continue
            broad = too_broad(resolved)
            if broad is not None:
                # An editor started outside any project names the home folder (or /) as its root:
                # indexing all of it would take long and hold far more than the project's code.
                self.notices.append(f"workspace folder {broad}: not indexed (open a project folder; the open documents still serve)")
                continue
            folder = self.folders[resolved] = Folder(resolved)
            new.append(folder)
        return new

    def remove(self, roots: Iterable[Path]) -> None:
        """Forget folders: a refresh of one stops, its index closes (on the indexing thread)."""
        for root in roots:
            try:
                resolved = Path(root).expanduser().resolve()
            except (OSError, RuntimeError):
                continue
            folder = self.folders.pop(resolved, None)
            if folder is not None:
                folder.removed = True
                try:
                    self._thread.submit(lambda f=folder: f.index.close() if f.index is not None else None)
                except RuntimeError:  # no running loop (tests calling from plain code)
                    if folder.index is not None:
                        folder.index.close()

    def folder_of(self, path: str) -> Optional[Folder]:
        """The deepest folder holding `path` (symlinked folders resolved), or None."""
        resolved = Path(_real_parent(path))
        best: Optional[Folder] = None
        for root, folder in self.folders.items():
            if resolved.is_relative_to(root) and (best is None or len(root.parts) > len(best.root.parts)):
                best = folder
        return best

    def index_for(self, path: Optional[str]) -> Optional[WorkspaceIndex]:
        """The index a request on `path` draws on (None: off, outside every folder, or not
        opened yet)."""
        if not self.allowed or not path:
            return None
        folder = self.folder_of(path)
        return folder.index if folder is not None and not folder.removed else None

    # -- work on the indexing thread ------------------------------------------------------------

    def refresh(self, folder: Folder, progress: Callable[[Folder, int, int], None]) -> IndexReport:
        """Open (first time) and refresh one folder's index. Runs on the indexing thread."""
        if self._stop.is_set() or folder.removed:
            raise _Stopped()
        if folder.index is None:
            folder.index = WorkspaceIndex(folder.root, cache_dir=self.cache_dir)
        folder.state = "indexing"

        def step(done: int, total: int, path: str) -> None:
            if self._stop.is_set() or folder.removed:
                raise _Stopped()
            progress(folder, done, total)

        report = folder.index.refresh(progress=step)
        folder.report = report
        folder.state = "ready"
        return report

    async def refresh_in_background(self, folder: Folder, progress: Callable[[Folder, int, int], None]) -> IndexReport:
        return await self._thread.submit(lambda: self.refresh(folder, progress))

    async def files_changed(self, paths: Iterable[str]) -> int:
        """Re-index files after they changed on disk (saved, created, deleted): each in the
        index of the folder holding it, after any refresh in progress. Returns how many
        files were looked at (those outside every folder, or that the walk would never
        reach, are not)."""
        if not self.allowed:
            return 0
        targets = [(folder, path) for path in paths if (folder := self.folder_of(path)) is not None]
        if not targets:
            return 0

        def work() -> int:
            done = 0
            for folder, path in targets:
                if self._stop.is_set():
                    break
                if folder.removed or folder.index is None:  # not opened yet: its refresh reads the disk anyway
                    continue
                where = Path(_real_parent(path))
                if walk_skips(folder.root, where):  # node_modules/, build/, .gitignored: never indexed
                    continue
                reason = folder.index.update_file(where)
                log.debug("re-indexed %s: %s", where, reason or "indexed")
                done += 1
            return done

        done = await self._thread.submit(work)
        self.updates += done
        return done

    def status(self) -> dict[str, Any]:
        """For infill/stats: each folder's state and how many files its index holds."""
        folders = []
        for folder in self.folders.values():
            files: Optional[int] = None
            if folder.index is not None:
                try:
                    with folder.index.lock:
                        files = folder.index.db.execute("SELECT count(*) FROM files").fetchone()[0]
                except Exception:  # closed, or busy being rebuilt
                    files = None
            folders.append({"root": str(folder.root), "state": folder.state, "files": files})
        return {"enabled": self.allowed, "watching": self.watching, "updates": self.updates, "folders": folders}

    def close(self) -> None:
        """Stop indexing and close every index (a refresh in progress stops at its next file)."""
        self._stop.set()
        for folder in self.folders.values():
            folder.removed = True
            if folder.index is not None:
                try:
                    folder.index.close()
                except Exception as error:  # already closed, or the thread's connection in use
                    log.debug("closing the index of %s: %s", folder.root, error)


def _real_parent(path: str) -> str:
    """`path` with its folder's symlinks resolved (the file itself may be gone, or a link)."""
    absolute = os.path.abspath(path)
    return os.path.join(os.path.realpath(os.path.dirname(absolute)), os.path.basename(absolute))


# -- the language server's side: progress, the log, the watcher ---------------------------------

class _Progress:
    """$/progress for one round of indexing, when the client supports it: begin, reports
    ("indexing N of M files", at most every PROGRESS_EVERY_S), end."""

    def __init__(self, ls: Any) -> None:
        self.ls = ls
        self.token: Optional[str] = None
        self._loop = asyncio.get_running_loop()
        self._last = 0.0

    async def begin(self, message: str) -> None:
        if not supports_progress(ls := self.ls):
            return
        token = f"infill-index-{time.monotonic_ns()}"
        try:
            await asyncio.wait_for(ls.work_done_progress.create_async(token), timeout=5)
            ls.work_done_progress.begin(token, types.WorkDoneProgressBegin(title=TITLE, message=message, percentage=0,
                                                                           cancellable=False))
        except Exception as error:  # the client refused or never answered: no progress bar
            log.info("no progress bar for indexing: %s", error)
            return
        self.token = token

    def from_thread(self, folder: Folder, done: int, total: int) -> None:
        """Called by the indexing thread for every file; a report now and then."""
        if self.token is None:
            return
        now = time.monotonic()
        if done not in (0, total) and now - self._last < PROGRESS_EVERY_S:
            return
        self._last = now
        try:
            self._loop.call_soon_threadsafe(self._report, folder.root.name, done, total)
        except RuntimeError:
            pass

    def _report(self, name: str, done: int, total: int) -> None:
        if self.token is not None:
            self.ls.work_done_progress.report(self.token, types.WorkDoneProgressReport(
                message=f"{name}: indexing {done} of {total} files", percentage=int(100 * done / total) if total else 100))

    def end(self, message: str) -> None:
        if self.token is not None:
            self.ls.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message=message))
            self.token = None


def supports_progress(ls: Any) -> bool:
    try:
        window = ls.client_capabilities.window
    except Exception:
        return False
    return bool(window and window.work_done_progress)


def index_enabled(ls: Any) -> bool:
    """The index is on: not `--no-workspace`, and the `workspaceIndex` setting is true."""
    return bool(ls.workspace_folders.allowed and ls.settings.workspace_index)


async def index_folders(ls: Any) -> None:
    """Refresh every folder not indexed yet, one after the other, on the indexing thread,
    reporting progress and logging each IndexReport. Never raises."""
    folders: WorkspaceFolders = ls.workspace_folders
    if not index_enabled(ls):
        return
    notices, folders.notices = folders.notices, []
    for notice in notices:
        ls.tell_log(notice, types.MessageType.Warning)
    todo = [folder for folder in folders.folders.values() if folder.state == "waiting"]
    if not todo:
        return
    for folder in todo:
        folder.state = "queued"
    asyncio.ensure_future(register_watcher(ls))  # a client slow to answer must not hold up the indexing
    progress = _Progress(ls)
    await progress.begin(", ".join(folder.root.name for folder in todo))
    files = lines = 0
    try:
        for folder in todo:
            try:
                report = await folders.refresh_in_background(folder, progress.from_thread)
            except Exception as error:  # an unreadable folder, a database that cannot be written
                if isinstance(error, _Stopped) or folder.removed:  # closed meanwhile: no failure to report
                    folder.state = "stopped"
                    continue
                folder.state = "failed"
                log.warning("indexing %s failed", folder.root, exc_info=error)
                ls.tell_log(f"workspace index of {folder.root} failed: {type(error).__name__}: {error}",
                            types.MessageType.Warning)
                continue
            files, lines = files + report.files, lines + report.lines
            for line in report.lines_of_text():
                ls.tell_log(f"workspace index: {line}")
    finally:
        progress.end(f"{files} files, {lines} lines indexed")


async def register_watcher(ls: Any) -> None:
    """Ask the client to send workspace/didChangeWatchedFiles for source files, once, when
    it supports registering that dynamically. Never raises."""
    folders: WorkspaceFolders = ls.workspace_folders
    if folders.watching:
        return
    try:
        watched = ls.client_capabilities.workspace.did_change_watched_files
        dynamic = bool(watched and watched.dynamic_registration)
    except AttributeError:
        dynamic = False
    if not dynamic:
        return
    folders.watching = True
    registration = types.Registration(
        id=WATCHER_ID, method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
        register_options=types.DidChangeWatchedFilesRegistrationOptions(
            watchers=[types.FileSystemWatcher(glob_pattern=watched_glob())]))
    try:
        await asyncio.wait_for(ls.client_register_capability_async(types.RegistrationParams(registrations=[registration])),
                               timeout=5)
    except Exception as error:  # refused or unanswered: saves still update the index
        folders.watching = False
        log.info("didChangeWatchedFiles not registered: %s", error)
