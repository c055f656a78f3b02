"""The language server's workspace (issue 36): the folders `initialize` names are indexed
in the background with $/progress; saves and watched-file events update the index; each
completion's InfillCall carries the document's path and a WorkspaceContext whose open
buffers win over the disk; `infill lsp --remote` sends snippets of it, never a secret line.

In-process tests check what the engine would be handed (a recording engine in place of
the model); end-to-end ones run a real `infill lsp` process (tiny random model) and read
its state through `infill/stats` and the index's SQLite file. Nothing depends on what a
model suggests."""
from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Hashable, Optional

import pytest
from lsprotocol import types

from engine.types import InfillResult
from engine.worker import InfillCall, Outcome
from infill_lsp.completion_service import CompletionService
from infill_lsp.config import LspSettings, parse_settings
from infill_lsp.documents import DocumentStore
from infill_lsp.remote import MAX_SNIPPET_BYTES, MAX_SNIPPETS, workspace_snippets
from infill_lsp.usage_stats import Stats
from infill_lsp.workspace_folders import WorkspaceFolders, initial_folders, walk_skips, watched_glob
from lab.fixtures.lsp_client import LspClient

REPO = Path(__file__).resolve().parents[1]
FAST = {"debounceMs": 0, "maxTokens": 4, "constrained": False}
DISK = "def total(items):\n    result = compute_old(items)\n    return result\n"
UNSAVED = "def total(items):\n    result = compute_new(items)\n    return result\n"
CURRENT = "def total(items):\n    result = \n    return result\n"  # the cursor after "result = "
SECRET = 'TOKEN = "ghp_' + "a" * 36 + '"'


class RecordingEngine:
    """Stands in for the engine: records each InfillCall and answers "x"."""

    def __init__(self) -> None:
        self.calls: list[InfillCall] = []

    def supersede(self, key: Hashable) -> threading.Event:
        return threading.Event()

    def cancel(self, key: Hashable) -> None:
        pass

    def forget(self, key: Hashable) -> None:
        pass

    async def run(self, key: Hashable, call: Any, cancel: threading.Event,
                  on_outcome: Optional[Callable[[Outcome], None]] = None) -> Outcome:
        self.calls.append(call)
        return Outcome(result=InfillResult("x", 1, 1, 1.0, "end_of_middle"), started=True)


def indexed_folder(root: Path, cache: Path) -> WorkspaceFolders:
    folders = WorkspaceFolders(cache_dir=cache)
    (folder,) = folders.add([root])
    folders.refresh(folder, lambda *_: None)
    return folders


def completion_call(folders: Optional[WorkspaceFolders], documents: DocumentStore, uri: str, settings: LspSettings = LspSettings(debounce_ms=0),
                    language: Optional[str] = "python") -> InfillCall:
    engine = RecordingEngine()
    service = CompletionService(documents, engine, Stats(), settings=lambda: settings, sampler_overrides=dict,
                                language_for=lambda _: language, workspace=folders)
    asyncio.run(service.suggest(uri, types.Position(line=1, character=13)))
    (call,) = engine.calls
    return call


def open_doc(documents: DocumentStore, path: Path, text: str) -> str:
    uri = path.as_uri()
    documents.open(types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text))
    return uri


def test_the_unsaved_buffer_wins_over_the_disk(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (root / "lib.py").write_text(DISK)
    (root / "main.py").write_text(CURRENT)
    folders = indexed_folder(root, tmp_path / "cache")
    try:
        documents = DocumentStore()
        main = open_doc(documents, root / "main.py", CURRENT)
        # Only main.py open: the draft comes from lib.py as indexed (the disk).
        call = completion_call(folders, documents, main)
        assert call.filename == str(root / "main.py")
        assert call.workspace is not None and call.workspace.index is folders.folders[root.resolve()].index
        assert call.workspace.buffers == {}
        lines = [d.line for d in call.workspace.drafts(call.prefix, call.suffix, call.filename)]
        assert lines and lines[0] == "result = compute_old(items)"
        # lib.py open with unsaved text: its buffer is handed over and wins over its file.
        open_doc(documents, root / "lib.py", UNSAVED)
        call = completion_call(folders, documents, main)
        assert call.workspace is not None and call.workspace.buffers == {str(root / "lib.py"): UNSAVED}
        drafts = call.workspace.drafts(call.prefix, call.suffix, call.filename)
        assert [d.line for d in drafts] == ["result = compute_new(items)"]
        assert drafts[0].text == "compute_new(items)"
        # workspaceIndex off: the buffers still, no index.
        off, problems = parse_settings({"workspaceIndex": False, "debounceMs": 0}, LspSettings())
        assert problems == [] and off.workspace_index is False
        call = completion_call(folders, documents, main, off)
        assert call.workspace is not None and call.workspace.index is None and call.workspace.buffers
    finally:
        folders.close()


def test_a_completion_never_waits_for_the_indexing(tmp_path: Path) -> None:
    """While the refresh is held after its first file, a completion is answered, drawing on
    what the index holds so far."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.py").write_text(DISK)
    (root / "b.py").write_text("def other():\n    return 1\n")
    folders = WorkspaceFolders(cache_dir=tmp_path / "cache")
    (folder,) = folders.add([root])
    documents = DocumentStore()
    main = open_doc(documents, root / "main.py", CURRENT)
    engine = RecordingEngine()
    service = CompletionService(documents, engine, Stats(), settings=lambda: LspSettings(debounce_ms=0),
                                sampler_overrides=dict, language_for=lambda _: "python", workspace=folders)
    first_done, go_on = threading.Event(), threading.Event()

    def progress(_: Any, done: int, total: int) -> None:
        if done == 1:
            first_done.set()
            assert go_on.wait(60)

    async def scenario() -> None:
        refresh = asyncio.ensure_future(folders.refresh_in_background(folder, progress))
        assert await asyncio.to_thread(first_done.wait, 60)
        assert await service.suggest(main, types.Position(line=1, character=13)) is not None
        assert folder.state == "indexing"  # still held
        (call,) = engine.calls
        assert call.workspace is not None and call.workspace.index is folder.index
        # a.py, the first file, is in the index already (b.py not yet): its line is a draft.
        assert [d.line for d in call.workspace.drafts(call.prefix, call.suffix, call.filename)] == ["result = compute_old(items)"]
        go_on.set()
        assert (await refresh).files == 2

    try:
        asyncio.run(scenario())
    finally:
        go_on.set()
        folders.close()


def test_no_folder_means_the_open_documents_only(tmp_path: Path) -> None:
    documents = DocumentStore()
    open_doc(documents, tmp_path / "lib.py", UNSAVED)
    main = open_doc(documents, tmp_path / "main.py", CURRENT)
    call = completion_call(WorkspaceFolders(cache_dir=tmp_path / "cache"), documents, main)
    assert call.workspace is not None and call.workspace.index is None
    assert [d.line for d in call.workspace.drafts(call.prefix, call.suffix, call.filename)] == ["result = compute_new(items)"]
    # A languageId without a grammar stays unconstrained: a path whose extension would name
    # a language is not handed over (the engine would take the language from it).
    assert completion_call(None, documents, main, language=None).filename is None
    notes = open_doc(documents, tmp_path / "notes.txt", "a\nb = \nc\n")
    assert completion_call(None, documents, notes, language=None).filename == str(tmp_path / "notes.txt")
    # An untitled document has no path: no filename, still the buffers.
    documents.open(types.TextDocumentItem(uri="untitled:Untitled-1", language_id="python", version=1, text=CURRENT))
    call = completion_call(None, documents, "untitled:Untitled-1")
    assert call.filename is None and call.workspace is not None and len(call.workspace.buffers) == 3


def test_folders_from_initialize_and_what_the_walk_skips(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    params = types.InitializeParams(capabilities=types.ClientCapabilities(), root_uri=b.as_uri(),
                                    workspace_folders=[types.WorkspaceFolder(uri=a.as_uri(), name="a")])
    assert initial_folders(params) == [a]  # workspaceFolders win over rootUri
    assert initial_folders(types.InitializeParams(capabilities=types.ClientCapabilities(), root_uri=b.as_uri())) == [b]
    assert initial_folders(types.InitializeParams(capabilities=types.ClientCapabilities(), root_path=str(b))) == [b]
    assert initial_folders(types.InitializeParams(capabilities=types.ClientCapabilities())) == []
    folders = WorkspaceFolders(cache_dir=tmp_path / "cache")
    assert folders.add([Path.home(), Path("/"), tmp_path / "missing"]) == [] and len(folders.notices) == 3
    assert "home folder" in folders.notices[0] and "not a folder" in folders.notices[2]
    assert "py" in watched_glob() and watched_glob().startswith("**/*.{")
    (a / "gen").mkdir(parents=True)
    (a / ".gitignore").write_text("gen/\n")
    assert walk_skips(a, a / "gen" / "x.py") and walk_skips(a, a / "node_modules" / "y.js")
    assert not walk_skips(a, a / "src" / "z.py")


def test_remote_snippets_are_capped_and_carry_no_secret(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (root / "lib.py").write_text("def total(items):\n    result = compute_old(items)\n    return result\n")
    folders = indexed_folder(root, tmp_path / "cache")
    try:
        other = "def total(items):\n    result = compute_new(items)\n" + SECRET + "\n    return result\n"
        documents = DocumentStore()
        open_doc(documents, tmp_path / "elsewhere.py", other)  # not in the folder: a buffer
        main = open_doc(documents, root / "main.py", CURRENT)
        call = completion_call(folders, documents, main)
        snippets = workspace_snippets(call)
        assert any("    result = compute_old(items)" in s for s in snippets)  # from the index, indented
        assert any("compute_new(items)" in s for s in snippets)  # from the other open document
        assert not any("ghp_" in s for s in snippets)
        assert not any(s.startswith("def total(items):\n    result = \n") for s in snippets)  # never its own text
        # Many places: at most MAX_SNIPPETS, MAX_SNIPPET_BYTES in all.
        many = {str(tmp_path / f"o{i}.py"): f"def total(items):\n    result = compute_{i}(items)  # {'#' * 600}\n    return result\n"
                for i in range(40)}
        call = InfillCall(call.prefix, call.suffix, "python", {}, filename=call.filename,
                          workspace=type(call.workspace)(None, many))
        snippets = workspace_snippets(call)
        assert 0 < len(snippets) <= MAX_SNIPPETS and sum(len(s.encode()) for s in snippets) <= MAX_SNIPPET_BYTES
    finally:
        folders.close()


# -- a real `infill lsp` process ------------------------------------------------------------------

def _env(cache: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), str(REPO)) if p)
    env["INFILL_CACHE_DIR"] = str(cache)
    env.pop("INFILL_TOKEN", None)
    return env


CAPABILITIES = {"workspace": {"configuration": True, "didChangeWatchedFiles": {"dynamicRegistration": True}},
                "window": {"workDoneProgress": True}}


def start(tmp_path: Path, argv: list[str], folder: Optional[Path], token: Optional[str] = None) -> LspClient:
    env = _env(tmp_path / "cache")
    if token is not None:
        env["INFILL_TOKEN"] = token
    client = LspClient([sys.executable, "-m", "infill_lsp", *argv, "--log-file", str(tmp_path / "lsp.log")],
                       configuration=FAST, stderr_path=tmp_path / "lsp.err", cwd=str(tmp_path), env=env)
    folders = [{"uri": folder.as_uri(), "name": folder.name}] if folder else None
    client.request("initialize", {"processId": None, "rootUri": None, "capabilities": CAPABILITIES,
                                  "workspaceFolders": folders})
    client.notify("initialized", {})
    return client


def index_progress(client: LspClient, timeout: float = 120) -> list[dict]:
    """The $/progress values of the indexing's token, once it has ended."""
    begin = client.wait_for_notification(lambda m: m.get("method") == "$/progress" and m["params"]["value"].get("title") == "infill: indexing workspace", timeout)
    token = begin["params"]["token"]
    client.wait_for_notification(lambda m: m.get("method") == "$/progress" and m["params"]["token"] == token
                                 and m["params"]["value"]["kind"] == "end", timeout)
    return [m["params"]["value"] for m in client.messages("$/progress") if m["params"]["token"] == token]


def workspace_status(client: LspClient) -> dict:
    return client.request("infill/stats")["workspace"]


def wait_updates(client: LspClient, count: int, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while (status := workspace_status(client))["updates"] < count:
        assert time.monotonic() < deadline, status
        time.sleep(0.05)
    return status


def indexed_lines(cache: Path) -> set[str]:
    (db,) = (cache / "workspaces").glob("*.sqlite3")
    with sqlite3.connect(db) as connection:
        return {text for (text,) in connection.execute("SELECT text FROM lines")}


def test_lsp_indexes_the_folder_with_progress_and_keeps_it_up_to_date(tmp_path: Path, tiny_model_dir: Path) -> None:
    root = tmp_path / "project"
    (root / "pkg").mkdir(parents=True)
    (root / "lib.py").write_text(DISK)
    (root / "pkg" / "util.py").write_text("def scale(x, k):\n    return x * k\n")
    (root / ".env").write_text("SECRET=1\n")
    client = start(tmp_path, ["--model", str(tiny_model_dir)], root)
    try:
        values = index_progress(client)
        assert values[0]["kind"] == "begin" and values[-1]["kind"] == "end"
        reports = [v["message"] for v in values if v["kind"] == "report"]
        assert reports and reports[-1] == "project: indexing 2 of 2 files", reports
        assert values[-1]["message"] == "2 files, 5 lines indexed"
        assert any(r["method"] == "window/workDoneProgress/create" for r in client.server_requests)
        registration = next(r for r in client.server_requests if r["method"] == "client/registerCapability")
        (watcher,) = registration["params"]["registrations"]
        assert watcher["method"] == "workspace/didChangeWatchedFiles"
        assert watcher["registerOptions"]["watchers"][0]["globPattern"] == watched_glob()
        logged = [m["params"]["message"] for m in client.messages("window/logMessage")]
        assert any("workspace index:" in line and "2 files, 5 lines" in line for line in logged), logged
        status = workspace_status(client)
        assert status["folders"] == [{"root": str(root.resolve()), "state": "ready", "files": 2}] and status["watching"]

        # A file created on disk: a watched-file event indexes it.
        (root / "new.py").write_text("def fresh():\n    return 42\n")
        client.notify("workspace/didChangeWatchedFiles", {"changes": [{"uri": (root / "new.py").as_uri(), "type": 1}]})
        assert wait_updates(client, 1)["folders"][0]["files"] == 3
        assert "return 42" in indexed_lines(tmp_path / "cache")
        # A file saved with new text: didSave re-indexes it.
        client.open((root / "lib.py").as_uri(), DISK)
        (root / "lib.py").write_text(UNSAVED)
        client.notify("textDocument/didSave", {"textDocument": {"uri": (root / "lib.py").as_uri()}})
        wait_updates(client, 2)
        lines = indexed_lines(tmp_path / "cache")
        assert "result = compute_new(items)" in lines and "result = compute_old(items)" not in lines
        # Deleted: it leaves the index. Ignored folders never enter it.
        (root / "new.py").unlink()
        (root / "node_modules").mkdir()
        (root / "node_modules" / "dep.js").write_text("module.exports = 1;\n")
        client.notify("workspace/didChangeWatchedFiles", {"changes": [
            {"uri": (root / "new.py").as_uri(), "type": 3}, {"uri": (root / "node_modules" / "dep.js").as_uri(), "type": 1}]})
        assert wait_updates(client, 3)["folders"][0]["files"] == 2
        # Folders come and go: an added one is indexed (its own progress), a removed one forgotten.
        second = tmp_path / "second"
        second.mkdir()
        (second / "other.py").write_text("x = 1\n")
        client.notify("workspace/didChangeWorkspaceFolders", {"event": {
            "added": [{"uri": second.as_uri(), "name": "second"}], "removed": [{"uri": root.as_uri(), "name": "project"}]}})
        client.wait_for_notification(lambda m: m.get("method") == "$/progress" and m["params"]["value"].get("message") == "1 files, 1 lines indexed", 60)
        assert workspace_status(client)["folders"] == [{"root": str(second.resolve()), "state": "ready", "files": 1}]
        client.notify("workspace/didChangeWorkspaceFolders", {"event": {
            "added": [{"uri": root.as_uri(), "name": "project"}], "removed": []}})
        ends = lambda: [m for m in client.messages("$/progress") if m["params"]["value"].get("message") == "2 files, 5 lines indexed"]  # noqa: E731
        client.wait_for_notification(lambda m: len(ends()) == 2, 60)  # the first end, and this one (warm: nothing read)
        assert workspace_status(client)["folders"][1] == {"root": str(root.resolve()), "state": "ready", "files": 2}
        # A completion with the index in place is served (the drafts path runs on the real engine).
        client.open((root / "main.py").as_uri(), CURRENT)
        answer = client.request("textDocument/inlineCompletion", {
            "textDocument": {"uri": (root / "main.py").as_uri()}, "position": {"line": 1, "character": 13},
            "context": {"triggerKind": 1}}, timeout=120)
        assert "items" in answer
        assert client.request("infill/stats")["counts"].get("errors", 0) == 0
    finally:
        assert client.close() == 0


def test_no_workspace_flag_indexes_nothing(tmp_path: Path, tiny_model_dir: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (root / "lib.py").write_text(DISK)
    client = start(tmp_path, ["--model", str(tiny_model_dir), "--no-workspace"], root)
    try:
        client.wait_for_notification(lambda m: m.get("method") == "$/progress" and m["params"]["value"]["kind"] == "end", 120)
        status = workspace_status(client)
        assert status["enabled"] is False and status["folders"][0]["state"] == "waiting" and status["folders"][0]["files"] is None
        titles = [m["params"]["value"].get("title") for m in client.messages("$/progress")]
        assert "infill: indexing workspace" not in titles
        assert not (tmp_path / "cache" / "workspaces").exists()
    finally:
        assert client.close() == 0


class _InfillServe(BaseHTTPRequestHandler):
    """Stands in for `infill serve` (owned_by "infill"): fixed answers, bodies recorded."""

    bodies: list[dict] = []

    def do_GET(self) -> None:  # noqa: N802
        self._json({"object": "list", "data": [{"id": "infill-default", "object": "model", "owned_by": "infill"}]})

    def do_POST(self) -> None:  # noqa: N802
        self.bodies.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        self._json({"id": "x", "object": "text_completion", "choices": [{"index": 0, "text": "y", "finish_reason": "stop"}]})

    def _json(self, data: dict) -> None:
        raw = json.dumps(data).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: Any) -> None:
        pass


def test_lsp_remote_sends_workspace_snippets_and_no_secret_line(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (root / "lib.py").write_text(DISK)
    served = ThreadingHTTPServer(("127.0.0.1", 0), _InfillServe)
    threading.Thread(target=served.serve_forever, daemon=True).start()
    try:
        client = start(tmp_path, ["--remote", f"http://127.0.0.1:{served.server_address[1]}"], root)
        try:
            index_progress(client)
            client.open((tmp_path / "notes.py").as_uri(), "def total(items):\n    result = compute_new(items)\n" + SECRET + "\n")
            client.open((root / "main.py").as_uri(), CURRENT)
            answer = client.request("textDocument/inlineCompletion", {
                "textDocument": {"uri": (root / "main.py").as_uri()}, "position": {"line": 1, "character": 13},
                "context": {"triggerKind": 1}}, timeout=60)
            assert [item["insertText"] for item in answer["items"]] == ["y"]
        finally:
            client.close()
    finally:
        served.shutdown()
    (body,) = _InfillServe.bodies
    snippets = body["infill"]["workspace_snippets"]
    assert any("    result = compute_old(items)" in s for s in snippets), snippets  # from the index
    assert any("    result = compute_new(items)" in s for s in snippets), snippets  # from the open buffer
    assert "ghp_" not in json.dumps(body)  # neither in the snippets nor in the cross-file context
    assert "workspace" not in {k for k in body["infill"] if k != "workspace_snippets"}


def test_lsp_remote_snippets_reach_a_real_infill_serve_engine(tmp_path: Path, tiny_engine: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole chain: the LSP's index -> workspace_snippets over HTTP -> the server's
    engine gets them as its WorkspaceContext's buffers."""
    from infill_lsp.live.server import LiveConfig
    from lab.fixtures.live_server import ServerThread

    seen: list[Any] = []
    job = tiny_engine.job

    def recording(*args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs.get("workspace"))
        return job(*args, **kwargs)

    monkeypatch.setattr(tiny_engine, "job", recording)
    root = tmp_path / "project"
    root.mkdir()
    (root / "lib.py").write_text(DISK)
    with ServerThread(tiny_engine, LiveConfig(port=0, token="ws-token")) as server:
        client = start(tmp_path, ["--remote", server.base_url], root, token="ws-token")
        try:
            index_progress(client)
            client.open((root / "main.py").as_uri(), CURRENT)
            client.request("textDocument/inlineCompletion", {
                "textDocument": {"uri": (root / "main.py").as_uri()}, "position": {"line": 1, "character": 13},
                "context": {"triggerKind": 1}}, timeout=60)
        finally:
            client.close()
    (workspace,) = seen
    assert workspace.index is None
    assert list(workspace.buffers) == ["snippet-0"]
    assert "    result = compute_old(items)" in workspace.buffers["snippet-0"]


class AnsweringEngine(RecordingEngine):
    """Answers each call with the next of `results`."""

    def __init__(self, *results: InfillResult) -> None:
        super().__init__()
        self.results = list(results)

    async def run(self, key: Hashable, call: Any, cancel: threading.Event,
                  on_outcome: Optional[Callable[[Outcome], None]] = None) -> Outcome:
        self.calls.append(call)
        return Outcome(result=self.results.pop(0), started=True)


def test_a_suggestion_from_the_workspace_carries_its_origin_to_the_client(tmp_path: Path) -> None:
    """The inline item's accept command says where its text came from (its second argument:
    `source`, and `origin` for a workspace line), what the infill clients show after the
    ghost text; a typed-through rest keeps its suggestion's; the model's answer names none."""
    from infill_lsp.handlers.accept import accept_command

    documents = DocumentStore()
    uri = open_doc(documents, tmp_path / "main.py", CURRENT)
    workspace_line = InfillResult("compute_old(items)", 4, 1, 1.0, "end_of_middle", draft="workspace", draft_origin="lib.py:2")
    engine = AnsweringEngine(workspace_line, InfillResult("compute(items)", 3, 2, 1.0, "end_of_middle"))
    service = CompletionService(documents, engine, Stats(), settings=lambda: LspSettings(debounce_ms=0), sampler_overrides=dict,
                                language_for=lambda _: "python")
    suggestion = asyncio.run(service.suggest(uri, types.Position(line=1, character=13)))
    assert suggestion is not None and suggestion.text == "compute_old(items)"
    details = accept_command(suggestion).arguments[1]
    assert details == {"version": 1, "source": "workspace", "origin": "lib.py:2"}
    # Typed through: the rest comes from the cache, still the workspace's line.
    at = types.Position(line=1, character=13)
    documents.change(types.VersionedTextDocumentIdentifier(uri=uri, version=2),
                     [types.TextDocumentContentChangePartial(range=types.Range(start=at, end=at), text="comp")])
    rest = asyncio.run(service.suggest(uri, types.Position(line=1, character=17)))
    assert rest is not None and rest.source == "cache" and rest.text == "ute_old(items)"
    assert accept_command(rest).arguments[1] == {"version": 2, "source": "workspace", "origin": "lib.py:2"}
    # The model's own answer: no origin.
    model = asyncio.run(service.suggest(uri, types.Position(line=0, character=4)))
    assert model is not None and accept_command(model).arguments[1] == {"version": 2, "source": "model"}



def test_a_workspace_line_the_model_edited_says_so_to_the_client(tmp_path: Path) -> None:
    """`source` "edited" (engine/near_edit.py) travels in the accept command with its
    origin, as a kept line's does; the clients show `edited from lib.py:2`."""
    from infill_lsp.handlers.accept import accept_command

    documents = DocumentStore()
    uri = open_doc(documents, tmp_path / "main.py", CURRENT)
    edited = InfillResult("compute_new(items)", 4, 3, 1.0, "end_of_middle", draft="edited", draft_origin="lib.py:2")
    assert edited.source == "edited" and edited.to_dict()["origin"] == "lib.py:2"
    service = CompletionService(documents, AnsweringEngine(edited), Stats(), settings=lambda: LspSettings(debounce_ms=0), sampler_overrides=dict,
                                language_for=lambda _: "python")
    suggestion = asyncio.run(service.suggest(uri, types.Position(line=1, character=13)))
    assert suggestion is not None and suggestion.text == "compute_new(items)"
    assert accept_command(suggestion).arguments[1] == {"version": 1, "source": "edited", "origin": "lib.py:2"}

class _WorkspaceAnswers(_InfillServe):
    """`infill serve` answering with a line of the snippets it was sent (`source` "workspace",
    no origin: it saw snippets), then with a middle of the model's."""

    answers: list[tuple[str, str]] = []

    def do_POST(self) -> None:  # noqa: N802
        self.bodies.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        text, source = self.answers.pop(0)
        self._json({"id": "x", "object": "text_completion", "choices": [{"index": 0, "text": text, "finish_reason": "stop"}],
                    "infill": {"forwards": 1, "tokens": 4, "stop_reason": "end_of_middle", "source": source}})


def test_lsp_remote_names_where_the_servers_workspace_line_stands(tmp_path: Path) -> None:
    """End to end through `infill lsp --remote`: the server says its middle is a workspace
    line; the language server, whose own index proposed that draft, names its place."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "lib.py").write_text(DISK)
    _WorkspaceAnswers.answers = [("compute_old(items)", "workspace"), ("compute(items)", "model")]
    served = ThreadingHTTPServer(("127.0.0.1", 0), _WorkspaceAnswers)
    threading.Thread(target=served.serve_forever, daemon=True).start()
    try:
        client = start(tmp_path, ["--remote", f"http://127.0.0.1:{served.server_address[1]}"], root)
        try:
            index_progress(client)
            client.open((root / "main.py").as_uri(), CURRENT)
            items = []
            for character in (13, 4):
                answer = client.request("textDocument/inlineCompletion", {
                    "textDocument": {"uri": (root / "main.py").as_uri()}, "position": {"line": 1, "character": character},
                    "context": {"triggerKind": 1}}, timeout=60)
                items += answer["items"]
            # The completion list (the same suggestion, from the typed-through cache): its description.
            listed = client.request("textDocument/completion", {
                "textDocument": {"uri": (root / "main.py").as_uri()}, "position": {"line": 1, "character": 13}}, timeout=60)
        finally:
            client.close()
    finally:
        served.shutdown()
    workspace, model = items
    assert workspace["insertText"] == "compute_old(items)"
    assert workspace["command"]["arguments"][1] == {"version": 1, "source": "workspace", "origin": "lib.py:2"}
    assert DISK.split("\n")[2 - 1] == "    result = compute_old(items)"
    assert model["insertText"] == "compute(items)" and model["command"]["arguments"][1] == {"version": 1, "source": "model"}
    (item,) = listed["items"]
    assert item["labelDetails"] == {"description": "from lib.py:2"} and item["detail"] == "infill, from lib.py:2"
