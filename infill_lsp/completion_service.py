"""From "a cursor in a document" to "the text to show there", with the least model work.

Every request, in order:
  1. typed-through cache: the user typed the next characters of the last suggestion, so
     the rest of it is the answer (no model pass);
  2. supersede: a newer request for the same document cancels the older ones (those still
     waiting never reach the model; one already running is stopped via its cancel Event),
     through the one request path of every front end (infill_lsp/request_path.py);
  3. debounce: wait `debounce_ms` for a newer keystroke before spending a model pass;
  4. the model, on the engine's worker thread, cancellable at every denoising pass. The
     engine gets the whole text around the cursor and the cross-file context apart, and
     decides the window itself (engine/window.py); and the workspace its drafts come from
     (engine/drafts.py): the index of the document's folder (infill_lsp/workspace_folders.py)
     and the other open documents, whose unsaved text wins over their files on disk.

Every suggestion is computed against one version of the document, the one the request
found, and says which (`Suggestion.version`); when the document changed while the model
ran, the answer is dropped (None): its position belongs to text that no longer exists.
"""
from __future__ import annotations

import itertools
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, Mapping

from lsprotocol import types

import grammars
from engine.protocols import ModelHost
from engine.worker import InfillCall, Outcome
from engine.workspace import WorkspaceContext

from .config import LspSettings
from .cross_file import cross_file_context
from .documents import DocumentStore
from .request_path import EngineUnavailable, Request
from .suggestion_cache import SuggestionCache
from .text import TextDocument
from .usage_stats import Stats
from .workspace_folders import WorkspaceFolders, uri_path

# The other open documents a request's drafts may come from: the most recently edited
# first, each under a size cap (a larger one's file on disk is in the index anyway).
MAX_BUFFERS = 16
MAX_BUFFER_CHARS = 500_000
MAX_BUFFERS_CHARS = 1_000_000  # all of them together: the engine reads every line of each, per request


@dataclass(frozen=True)
class Suggestion:
    suggestion_id: str
    text: str  # to insert at the cursor
    source: str  # "model" or "cache"
    at: types.Position  # the cursor, clamped into the document
    version: int  # the document version every position here belongs to
    line_before: str  # the cursor's line up to the cursor, in that version
    # Where the text came from (InfillResult.source): "model", "workspace" for a line of
    # the workspace kept as is, or "edited" for one the model edited, whose place `origin`
    # names ("path:line"; "" when unknown).
    # A typed-through rest (source "cache") keeps its suggestion's.
    answer_source: str = "model"
    origin: str = ""


@dataclass(frozen=True)
class _Snapshot:
    """What a request saw: the document object, its revision and version, and the text
    of the cursor's line before the cursor."""

    document: TextDocument
    revision: int
    version: int
    line_before: str


@dataclass(frozen=True)
class _Shown:
    uri: str
    chars: int
    source: str


class CompletionService:
    def __init__(
        self,
        documents: DocumentStore,
        engine: ModelHost,
        stats: Stats,
        settings: Callable[[], LspSettings],
        sampler_overrides: Callable[[], Mapping[str, object]],
        language_for: Callable[[str], str | None],
        workspace: WorkspaceFolders | None = None,
    ) -> None:
        self._documents = documents
        self._engine = engine
        self._stats = stats
        self._settings = settings
        self._sampler_overrides = sampler_overrides
        self._language_for = language_for
        self._workspace = workspace
        self._cache = SuggestionCache()
        self._ids = itertools.count(1)
        self._shown: OrderedDict[str, _Shown] = OrderedDict()  # for accept bookkeeping

    async def suggest(self, uri: str, position: types.Position) -> Suggestion | None:
        """The suggestion at `position`, or None (nothing to say, or superseded).

        Raises UnknownDocument for a document never opened, EngineUnavailable when the
        model failed to load, asyncio.CancelledError when the client cancelled.
        """
        started = time.perf_counter()
        self._stats.count("requests")
        document = self._documents.get(uri)
        offset = document.offset_at(position, self._documents.encoding)
        prefix, suffix = document.text[:offset], document.text[offset:]
        at = document.position_at(offset, self._documents.encoding)
        snapshot = _Snapshot(document, document.revision, document.version, prefix[document.line_starts[at.line]:])

        # The request path (infill_lsp/request_path.py): supersede, debounce, run, stale.
        async with Request(self._engine, ("completion", uri), on_hang_up=lambda: self._stats.count("cancelled_by_client")) as request:
            if not prefix.strip() and not suffix.strip():  # nothing to complete around (an empty file)
                self._stats.answered((time.perf_counter() - started) * 1000, shown=False)
                return None
            hit = self._cache.lookup(uri, prefix, suffix)
            if hit is not None:
                rest, entry = hit
                self._stats.count("cache_hits")
                return self._deliver(uri, rest, "cache", at, snapshot, started, entry.answer_source, entry.origin)

            settings = self._settings()
            if not await request.debounce(settings.debounce_ms):
                self._stats.count("superseded_before_model")
                return None
            language = self._language_for(document.language_id)
            path = uri_path(uri)
            call = InfillCall(
                prefix,
                suffix,
                language,
                dict(self._sampler_overrides()),
                cross_file=cross_file_context(document, self._documents.recently_edited(exclude=uri), settings.cross_file_chars),
                # The editor named the language: a document whose languageId has no grammar
                # runs unconstrained, so its path (which the engine would take the language
                # from) goes along only when its extension names no language either.
                filename=path if language is not None or path is None or grammars.language_for_path(path) is None else None,
                workspace=self.workspace_context(uri, settings),
            )
            try:
                answer = await request.run(call, still_current=lambda: self._still_current(uri, snapshot), on_outcome=self._count_model_run)
            except EngineUnavailable:
                self._stats.count("model_unavailable")
                raise
        if answer.status == "superseded":  # superseded while queued behind another model call
            self._stats.count("superseded_before_model")
        if answer.status == "stale":
            self._stats.count("stale")
        if answer.status != "ok":
            return None
        middle = answer.result.middle
        source, origin = answer.result.source, answer.result.draft_origin
        suggestion = self._deliver(uri, middle, "model", at, snapshot, started, source, origin)
        if suggestion is not None:
            self._cache.store(uri, prefix, suffix, middle, suggestion.suggestion_id, answer_source=source, origin=origin)
        return suggestion

    def workspace_context(self, uri: str, settings: LspSettings) -> WorkspaceContext:
        """What a request on `uri` retrieves from: the index of the folder holding it (None:
        outside every folder, no folder, or the index off) and the other open documents by
        path (their unsaved text wins over the disk)."""
        buffers: dict[str, str] = {}
        used = 0
        for other in self._documents.recently_edited(exclude=uri):
            if len(buffers) >= MAX_BUFFERS:
                break
            text = other.text
            if len(text) <= MAX_BUFFER_CHARS and used + len(text) <= MAX_BUFFERS_CHARS:
                buffers[uri_path(other.uri) or other.uri] = text
                used += len(text)
        index = self._workspace.index_for(uri_path(uri)) if self._workspace is not None and settings.workspace_index else None
        return WorkspaceContext(index, buffers)

    def _count_model_run(self, outcome: Outcome) -> None:
        """Every model run, also those whose request was cancelled meanwhile."""
        answer = outcome.result
        if answer is None:
            return
        self._stats.model_ran(answer.ms, answer.forwards)
        if answer.stop_reason == "cancelled":
            self._stats.count("cancelled_during_model")

    def accepted(self, suggestion_id: str) -> bool:
        """Count an accepted suggestion (the client ran our accept command)."""
        shown = self._shown.pop(suggestion_id, None)
        if shown is None:
            self._stats.count("accept_unknown_id")
            return False
        self._stats.count("accepted")
        self._stats.count(f"accepted_from_{shown.source}")
        self._stats.count("accepted_chars", shown.chars)
        return True

    def forget(self, uri: str) -> None:
        """The document closed: drop its cache and stop its work."""
        self._cache.forget(uri)
        self._engine.cancel(("completion", uri))
        self._engine.forget(("completion", uri))

    # -- internals ----------------------------------------------------------------------
    def _still_current(self, uri: str, snapshot: "_Snapshot") -> bool:
        """The document is the one (and at the revision) the request started from."""
        try:
            document = self._documents.get(uri)
        except LookupError:  # closed meanwhile
            return False
        return document is snapshot.document and document.revision == snapshot.revision

    def _deliver(
        self, uri: str, text: str, source: str, at: types.Position, snapshot: "_Snapshot", started: float,
        answer_source: str = "model", origin: str = "",
    ) -> Suggestion | None:
        self._stats.answered((time.perf_counter() - started) * 1000, shown=bool(text))
        if not text:
            return None
        suggestion = Suggestion(f"s{next(self._ids)}", text, source, at, snapshot.version, snapshot.line_before, answer_source, origin)
        self._shown[suggestion.suggestion_id] = _Shown(uri, len(text), source)
        while len(self._shown) > 512:
            self._shown.popitem(last=False)
        return suggestion

