"""`infill batch`: the stable JSONL contract that evaluations and other tools use.

Input line:  {"id": str, "prefix": str, "suffix": str, "language"?: str, "max_tokens"?: int (0..2048, engine.types.MAX_TOKENS), "constrained"?: bool,
             "workspace_drafts"?: bool, "edit_drafts"?: bool, "draft_context"?: bool (engine/types.py SamplerSettings),
             "workspace"?: str (a folder: the line's drafts come from its index, docs/workspace.md), "filename"?: str (the file being
             edited, inside the workspace: its text on disk is replaced by prefix + suffix; its extension names the language)}
Output line: {"id", "middle", "tokens", "forwards", "ms", ...more figures} — one per input
line (a blank one too), in input order, with the language used (`language`, and
`language_source`: "request" for the line's or --language, else "filename", else
"detected" from prefix + suffix, else "none": unconstrained), and where the middle came
from (`source`: "model", "workspace" for a line of the workspace kept as is, or "edited" for
one the model edited, then with `origin`, "path:line", where that line stands). A bad line (unknown language,
a workspace that cannot be indexed included) yields {"id": ... or null, "error": "..."}
and the batch goes on. Model loading is excluded from
every line's `ms`. The settings are checked by the engine's one schema
(`engine.types.check_knobs`), max_tokens's bound included.
"""
from __future__ import annotations

import itertools
import json
import os
import queue
import sqlite3
import sys
from collections import deque
from pathlib import Path
from typing import IO, Any, Optional, Union

from engine.types import InfillError, ModelFailure, SamplerSettings, SettingsError, check_knobs

_BATCH_RUNS = itertools.count()  # run_batch calls in this process

# The sampler knobs a batch line may carry, validated by the engine's one settings schema.
BATCH_SETTINGS = ("max_tokens", "constrained", "workspace_drafts", "edit_drafts", "draft_context")


class BadLine(ValueError):
    def __init__(self, message: str, item_id: Any = None):
        super().__init__(message)
        self.item_id = item_id


def parse_line(line: str) -> tuple[Any, dict[str, Any]]:
    """(id, request fields), or BadLine carrying the id (when readable) and the reason."""
    try:
        item = json.loads(line)
    except json.JSONDecodeError as exc:
        raise BadLine(f"invalid JSON: {exc.msg} at column {exc.colno}") from None
    if not isinstance(item, dict):
        raise BadLine("each line must be a JSON object")
    item_id = item.get("id")
    try:
        return item_id, _fields(item)
    except ValueError as exc:
        raise BadLine(str(exc), item_id) from None


def _fields(item: dict[str, Any]) -> dict[str, Any]:
    for key in ("prefix", "suffix"):
        if not isinstance(item.get(key), str):
            raise ValueError(f"missing or non-string \"{key}\"")
    language = item.get("language")
    if language is not None:
        check_language(language)
    try:
        raw = {k: item[k] for k in BATCH_SETTINGS if item.get(k) is not None}
        settings = check_knobs(SamplerSettings, raw, allowed=BATCH_SETTINGS)
    except SettingsError as error:
        raise ValueError(str(error)) from None
    for key in ("workspace", "filename"):
        if item.get(key) is not None and not isinstance(item[key], str):
            raise ValueError(f'"{key}" must be a string (a path)')
    return {"prefix": item["prefix"], "suffix": item["suffix"], "language": language, "workspace": item.get("workspace"), "filename": item.get("filename"), **settings}


def check_language(language: object) -> str:
    """The language name if the grammars know it; ValueError naming the known ones if not
    (engine/language.py decides, for every front end)."""
    from engine.language import UnknownLanguage, check_language as check

    if not isinstance(language, str):
        raise ValueError('"language" must be a string')
    try:
        return check(language)
    except UnknownLanguage as exc:
        raise ValueError(str(exc)) from None


class WorkspaceError(ValueError):
    """A line's "workspace" or "filename" cannot be used (the message says why)."""


class BatchWorkspaces:
    """The workspace indexes of one batch: each folder is indexed once, on its first line
    (progress on stderr), and kept for the lines after it. A folder that cannot be indexed
    fails its lines, never the batch: the failure is kept, so later lines naming the same
    folder get the same error without a second attempt."""

    def __init__(self, log: IO[str] = sys.stderr) -> None:
        self.indexes: dict[str, Any] = {}
        self.failed: dict[str, str] = {}  # folder -> why it could not be indexed
        self.log = log

    def context(self, folder: Optional[str], filename: Optional[str]) -> Any:
        """The WorkspaceContext for a line (None without a workspace); WorkspaceError when
        the folder is not one, cannot be indexed, or the file lies outside it."""
        if folder is None:
            return None
        from engine.workspace import WorkspaceContext

        root = os.path.realpath(folder)
        if not os.path.isdir(root):
            raise WorkspaceError(f"workspace {folder!r} is not a folder")
        if filename is not None and os.path.relpath(os.path.realpath(filename), root).startswith(".."):
            raise WorkspaceError(f"filename {filename!r} is not inside the workspace {folder!r}")
        if root in self.failed:
            raise WorkspaceError(self.failed[root])
        if root not in self.indexes:
            try:
                self.indexes[root] = self._index(folder, root)
            except WorkspaceError as error:
                self.failed[root] = str(error)
                raise
        return WorkspaceContext(self.indexes[root], wait_for_tables=True)  # the same answers every run

    def _index(self, folder: str, root: str) -> Any:
        """The folder's fresh index, its report on the log; WorkspaceError saying why not."""
        from engine.workspace import WorkspaceIndex

        try:
            index = WorkspaceIndex(root)
            report = index.refresh()
        except (OSError, ValueError, InfillError, sqlite3.Error) as error:  # `/` or home (WorkspaceRefused), a cache that cannot be written
            raise WorkspaceError(f"workspace {folder!r} cannot be indexed: {_reason(error)}") from None
        for line in report.lines_of_text():
            print(f"infill batch: {line}", file=self.log, flush=True)
        return index


def _reason(error: BaseException) -> str:
    """An exception in a few words: an OSError's reason and file, else its message."""
    if isinstance(error, OSError) and error.strerror:
        return f"{error.strerror}: {error.filename}" if error.filename else error.strerror
    return str(error) or type(error).__name__


def run_batch(stdin: IO[str], stdout: IO[str], model_dir: Optional[Path] = None, language: Optional[str] = None, max_batch: Optional[int] = None) -> int:
    """Lines are denoised together by the engine worker (up to `max_batch` at once, each
    with its own settings; engine/batching.py) and written in input order as soon as
    every line before them is done. A line's `ms` is the wall time from its context
    encoding to its result (the passes it shared with other lines included, not the time
    it waited for a place in the batch); `work_ms` is its own work, what its deadline
    (deadline_seconds, 60 s) counts, so no line is cut for what else is in the batch and
    the same lines give the same output (docs/batching.md, "Same middles as alone")."""
    import engine
    from engine.worker import EngineWorker, InfillCall, Job

    if language is not None:
        try:
            check_language(language)
        except ValueError as exc:
            raise InfillError(f"--language: {exc}") from None
    eng = engine.load(model_dir)  # an InfillError here ends the batch: there is no model to run
    worker = EngineWorker(eng, name="infill-batch", max_batch=max_batch)
    pending: deque[tuple[Any, Union[queue.SimpleQueue, dict[str, Any]]]] = deque()  # in input order
    workspaces = BatchWorkspaces()
    read_ahead = 2 * worker.max_batch
    group = ("batch", next(_BATCH_RUNS))  # its lines' cache keys: never another run's on the same engine

    def write_ready(wait_for_head: bool) -> None:
        while pending and (wait_for_head or isinstance(pending[0][1], dict) or not pending[0][1].empty()):
            item_id, outcome = pending.popleft()
            line = outcome if isinstance(outcome, dict) else _line(item_id, outcome.get())
            stdout.write(json.dumps(line) + "\n")
            stdout.flush()
            wait_for_head = False

    try:
        for number, raw in enumerate(stdin):
            item_id = None
            try:
                if not raw.strip():  # the contract: one output line per input line, blank ones too
                    raise BadLine("empty line: each line must be a JSON object")
                item_id, request = parse_line(raw)
                folder, filename = request.pop("workspace"), request.pop("filename")
                context = workspaces.context(folder, filename)
            except BadLine as exc:
                pending.append((exc.item_id, {"id": exc.item_id, "error": str(exc)}))
            except WorkspaceError as exc:
                pending.append((item_id, {"id": item_id, "error": str(exc)}))
            else:
                done: queue.SimpleQueue = queue.SimpleQueue()
                # The language: the line's, else --language, else "filename"'s extension, else
                # detected from prefix + suffix, as the HTTP API does (engine/language.py); the
                # output line's `language` and `language_source` say which.
                call = InfillCall(request.pop("prefix"), request.pop("suffix"), request.pop("language") or language, request,
                                  filename=filename, detect_language=True, workspace=context)
                # A line's context is never reused by another line (engine/api.py _reusable):
                # dropped once the line is answered, not kept (megabytes each) to the end.
                worker.submit(Job(group, number, call, on_done=lambda outcome, done=done, number=number: (worker.forget(group, number), done.put(outcome))))
                pending.append((item_id, done))
            write_ready(wait_for_head=len(pending) >= read_ahead)  # read ahead only so far
        while pending:
            write_ready(wait_for_head=True)
    finally:
        # Join before the interpreter exits: a daemon thread still inside torch at exit
        # aborts the process ("terminate called without an active exception").
        worker.close()
        worker.join()
    return 0


def _line(item_id: Any, outcome: Any) -> dict[str, Any]:
    if outcome.result is not None:
        return {"id": item_id, **outcome.result.to_dict()}
    if isinstance(outcome.error, (InfillError, ModelFailure)):  # messages meant for users
        return {"id": item_id, "error": str(outcome.error)}
    error = outcome.error
    return {"id": item_id, "error": f"internal error: {type(error).__name__}: {error}" if error else "the request did not run"}
