"""`infill lsp`: the language server.

    infill lsp [--stdio]                       # default: talk LSP over stdin/stdout
    infill lsp --tcp --port 2087 [--host 127.0.0.1]
    infill lsp --model DIR                     # a model directory instead of the embedded one
    infill lsp --remote URL                    # completions from an `infill serve` (or OpenAI-style) server
    infill lsp --no-workspace                  # do not index the workspace folders (infill_lsp/workspace_folders.py)

The features live one per module in infill_lsp/handlers/; this module holds the state
they share (documents, settings, the engine, stats) and the entry point.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from engine.protocols import ModelHost

from .completion_service import CompletionService, Suggestion
from .config import LspSettings, check_sampler_overrides, parse_settings
from .documents import DocumentStore, UnknownDocument
from .edit_history import EditHistory
from .engine_host import EngineHost
from .languages import language_for_lsp_id
from .lsp_protocol import InfillProtocol
from .remote import RemoteConfig, RemoteEngineHost, check_url, read_token
from . import redaction
from .request_path import ErrorCode, UserError, user_error
from .transport import serve_stdio, serve_tcp
from .usage_stats import Stats
from .workspace_folders import WorkspaceFolders, index_folders

__version__ = "0.1.0"
log = logging.getLogger("infill_lsp")


class InfillServer(LanguageServer):
    def __init__(self, model_dir: str | None = None, remote: RemoteConfig | None = None, workspace: bool = True) -> None:
        super().__init__(
            "infill",
            __version__,
            protocol_cls=InfillProtocol,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
        )
        self.documents = DocumentStore()
        self.edit_history = EditHistory()  # recent edits per document, for infill/nextEdit
        # A remote server stands in for the in-process engine; the completion path is the same.
        self.engine: ModelHost = RemoteEngineHost(remote) if remote is not None else EngineHost()
        self.stats = Stats()
        # --model on the command line wins over the client's modelDir setting.
        self.cli_model_dir = model_dir
        self.settings = LspSettings(model_dir=model_dir)
        self.sampler_overrides: Mapping[str, object] = {}
        # The workspace folders' indexes, which every completion retrieves from (issue 36).
        self.workspace_folders = WorkspaceFolders(allowed=workspace)
        self.completions = CompletionService(
            self.documents,
            self.engine,
            self.stats,
            settings=lambda: self.settings,
            sampler_overrides=lambda: self.sampler_overrides,
            language_for=language_for_lsp_id,
            workspace=self.workspace_folders,
        )
        self._last_popup = 0.0
        self._unavailable_shown: str | None = None  # the engine problem the user was last told of
        self._reported_problems: set[str] = set()  # settings problems already told, each once
        self._told_once: set[str] = set()  # "no model" lines already told since the last load
        self.load_started = False  # set once the client said 'initialized'
        self.protocol.on_client_mistake = self._log_client_mistake
        from . import handlers

        handlers.register_all(self)

    def language_for(self, lsp_id: str) -> str | None:
        """The engine's language for an LSP language id (handlers ask here, not the module:
        infill_lsp/handlers/ never import the server at run time)."""
        return language_for_lsp_id(lsp_id)

    # -- transports: our read loop (infill_lsp/transport.py) instead of pygls' ---------------
    def start_io(self, stdin: Any = None, stdout: Any = None) -> int:  # type: ignore[override]
        return serve_stdio(self, stdin, stdout)

    def start_tcp(self, host: str, port: int) -> int:  # type: ignore[override]
        return serve_tcp(self, host, port)

    # -- messages to the user -----------------------------------------------------------
    def tell_log(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
        log.log(logging.WARNING if kind <= types.MessageType.Warning else logging.INFO, message)
        self.window_log_message(types.LogMessageParams(type=kind, message=f"infill: {message}"))

    def tell_log_once(self, message: str, kind: types.MessageType = types.MessageType.Warning) -> None:
        """`tell_log`, but each message only once until a model loads (a missing model
        would otherwise be reported again on every keystroke)."""
        if message in self._told_once:
            return
        self._told_once.add(message)
        self.tell_log(message, kind)

    def tell_user(self, message: str, kind: types.MessageType = types.MessageType.Error) -> None:
        """A popup for things the user must act on (bad model dir, bad settings)."""
        self.tell_log(message, kind)
        self.window_show_message(types.ShowMessageParams(type=kind, message=f"infill: {message}"))

    def _log_client_mistake(self, line: str) -> None:
        # The client's log (an output channel), never a popup: the user cannot act on it.
        self.window_log_message(types.LogMessageParams(type=types.MessageType.Warning, message=f"infill: client error: {line}"))

    def report_server_error(self, error: Exception, source: Any) -> None:
        if isinstance(error, json.JSONDecodeError):
            # The client's mistake, not ours: a warning in the log, no popup, no traceback.
            self.tell_log(f"ignored a message whose body is not JSON ({error.msg} at character {error.pos})", types.MessageType.Warning)
            return
        # Protocol-level trouble (a malformed message, a failing notification handler) goes
        # to the log, with at most one popup a minute: a misbehaving client must not flood
        # the user with dialogs.
        message = f"internal error ({type(error).__name__}): {str(error).splitlines()[0] if str(error) else ''}"
        self.tell_log(message, types.MessageType.Error)
        now = time.monotonic()
        if now - self._last_popup > 60:
            self._last_popup = now
            self.window_show_message(
                types.ShowMessageParams(type=types.MessageType.Error, message=f"infill: {message} (details in the log)")
            )

    # -- settings and the model ---------------------------------------------------------
    async def apply_settings(self, raw: Any, origin: str) -> None:
        """Apply a settings object from the client; reload the model if its dir changed."""
        settings, problems = parse_settings(raw, self.settings)
        if self.cli_model_dir is not None:
            settings = replace(settings, model_dir=self.cli_model_dir)
        overrides, more = check_sampler_overrides(settings.sampler)
        problems += more
        model_changed = settings.model_dir != self.settings.model_dir
        index_turned_on = settings.workspace_index and not self.settings.workspace_index
        self.settings = settings
        self.sampler_overrides = overrides
        # Values under keys the user wrote are the user's to fix (a popup, once); a settings
        # payload that is not even an object is the client's doing (a log line, once).
        self._report_setting_problems(problems, origin, user_values=raw is None or isinstance(raw, Mapping))
        if model_changed and self.load_started:
            asyncio.ensure_future(self.load_model())
        if index_turned_on and self.load_started:
            asyncio.ensure_future(index_folders(self))

    def _report_setting_problems(self, problems: list[str], origin: str, user_values: bool) -> None:
        """Each rejected setting once per session (clients resend their whole settings on
        every change): a popup when it is a value the user set, else a log line."""
        for problem in problems:
            if problem in self._reported_problems:
                continue
            if len(self._reported_problems) >= 1000:  # a client inventing new bad values forever
                self._reported_problems.clear()
            self._reported_problems.add(problem)
            message = f"setting ignored ({origin}): {problem}"
            if user_values:
                self.tell_user(message, types.MessageType.Warning)
            else:
                self.tell_log(message, types.MessageType.Warning)

    async def load_model(self) -> None:
        """Load the model in the background, reporting through $/progress when the client
        supports it. Never raises: failures reach the user as a message."""
        self.load_started = True
        model_dir = self.settings.model_dir
        token = f"infill-load-{time.monotonic_ns()}"
        progress = _supports_progress(self)
        if progress:
            try:
                await asyncio.wait_for(self.work_done_progress.create_async(token), timeout=5)
                self.work_done_progress.begin(
                    token,
                    types.WorkDoneProgressBegin(
                        title="infill: loading model", message=model_dir or "embedded model", cancellable=False
                    ),
                )
            except Exception as error:  # the client refused or never answered: no progress bar
                log.info("no progress bar: %s", error)
                progress = False
        started = time.perf_counter()
        try:
            name = await self.engine.load(model_dir)
        except Exception as error:  # EngineUnavailable, or anything unforeseen
            outcome = f"model not loaded: {error}"
            self.tell_user(outcome)
            self._unavailable_shown = str(error)
        else:
            outcome = f"model {name} ready in {time.perf_counter() - started:.1f} s"
            self._told_once.clear()
            self.tell_log(outcome)
        if progress:
            self.work_done_progress.end(token, types.WorkDoneProgressEnd(message=outcome))

    # -- the shared path of inline completion and completion ----------------------------
    async def suggest(self, uri: str, position: types.Position) -> Suggestion | None:
        """A suggestion, or None; problems go to the log/popup, never to a crash."""
        notice = self.engine.model_dir_notice()
        if notice is not None:  # the model on disk is no longer the one serving: say so, once
            self.tell_user(notice, types.MessageType.Warning)
        try:
            suggestion = await self.completions.suggest(uri, position)
            self._unavailable_shown = None  # working again: a later failure is news
            return suggestion
        except UnknownDocument as error:
            self.tell_log(str(error), types.MessageType.Warning)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # an engine bug must not take the server down
            self.report_failure("completion", error)
        return None

    def report_failure(self, what: str, error: BaseException) -> UserError:
        """A request (`what`: "completion", "next edit") that ended in `error`, told the LSP
        way: the request path's one mapping (infill_lsp/request_path.py) rendered as a log
        line, or a popup once for a remote server that is down. Never raises."""
        failure = user_error(error)
        if failure.code is ErrorCode.UNAVAILABLE:
            self.report_unavailable(error, what)
        elif failure.code is ErrorCode.REFUSED:  # the engine refused this input, in one line
            self.tell_log(f"no {what}: {failure.message}", types.MessageType.Info)
        elif failure.code in (ErrorCode.MODEL_FAILED, ErrorCode.MODEL_ERROR):  # this request only (the worker logged it)
            self.stats.count("model_failures" if failure.retryable else "errors")
            self.tell_log(f"no {what}: {failure.message}", types.MessageType.Warning)
        else:  # a bug: the details are the user's own (a local log), with the traceback
            log.error("%s failed", what, exc_info=error)
            self.stats.count("errors")
            self.tell_log(f"{what} failed: {type(error).__name__}: {error}", types.MessageType.Error)
        return failure

    def report_unavailable(self, error: BaseException, what: str = "completion") -> None:
        """A completion the engine could not serve. A remote server that is down, slow or
        refuses the token is told once as a popup (not on every keystroke); repeats, and
        problems of a single request, go to the log."""
        message = str(error)
        if getattr(error, "notify", False) and message != self._unavailable_shown:
            self._unavailable_shown = message
            self.tell_user(f"no completions: {message}", types.MessageType.Warning)
        else:
            self.tell_log_once(f"no {what}: {message}", types.MessageType.Warning)


def _supports_progress(server: InfillServer) -> bool:
    try:
        window = server.client_capabilities.window
    except Exception:
        return False
    return bool(window and window.work_done_progress)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="infill lsp", description="The infill language server.")
    transport = parser.add_mutually_exclusive_group()
    transport.add_argument("--stdio", action="store_true", help="talk over stdin/stdout (default)")
    transport.add_argument("--tcp", action="store_true", help="listen on a TCP port instead")
    parser.add_argument("--host", default="127.0.0.1", help="TCP address to bind (default: loopback only)")
    parser.add_argument("--port", type=int, default=2087, help="TCP port (default 2087)")
    parser.add_argument("--model", metavar="DIR", default=None, help="model directory (default: the embedded model)")
    parser.add_argument("--log-file", metavar="PATH", default=None, help="write a debug log here")
    parser.add_argument("--no-workspace", action="store_true",
                        help="do not index the workspace folders (completions still draw on the open documents; "
                             "the `workspaceIndex` setting does the same per client)")
    remote = parser.add_argument_group("remote engine (instead of loading a model in this process)")
    remote.add_argument("--remote", metavar="URL", help="send completions to this server: `infill serve` or any "
                        "OpenAI-compatible server that accepts prompt + suffix (e.g. http://127.0.0.1:8765)")
    remote.add_argument("--remote-token-file", metavar="PATH",
                        help="file holding the server's token (default: the INFILL_TOKEN environment variable)")
    remote.add_argument("--remote-model", metavar="NAME", help="model name to request (default: the server's first)")
    remote.add_argument("--remote-timeout", type=float, default=10.0, metavar="SECONDS",
                        help="give up on a completion after this long (default 10)")
    return parser


def remote_config(args: argparse.Namespace) -> RemoteConfig | None:
    """The --remote settings, or None without --remote. Raises ValueError with the problem."""
    if not args.remote:
        if args.remote_token_file or args.remote_model:
            raise ValueError("--remote-token-file and --remote-model need --remote URL")
        return None
    if not args.remote_timeout > 0:
        raise ValueError("--remote-timeout must be positive")
    return RemoteConfig(url=check_url(args.remote), token=read_token(args.remote_token_file),
                        model=args.remote_model, timeout_s=args.remote_timeout)


class _NoTracebackForClientJson(logging.Filter):
    """pygls logs a body that is not JSON with a traceback; it is the client's error and
    is reported once, as a warning, by `report_server_error`."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], json.JSONDecodeError))


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    if not (0 < args.port < 65536):
        print(f"infill lsp: --port must be 1-65535, got {args.port}", file=sys.stderr)
        return 2
    try:
        remote = remote_config(args)
    except ValueError as error:
        print(f"infill lsp: {error}", file=sys.stderr)
        return 2
    if args.model is not None and not (Path(args.model).expanduser() / "config.json").is_file():
        # Asked for on the command line: a wrong one is the caller's error, said at once.
        reason = "does not exist" if not Path(args.model).expanduser().exists() else "has no config.json (not a model directory)"
        print(f"infill lsp: error: model directory {args.model} {reason}", file=sys.stderr)
        return 2
    # stdout carries the protocol: logs go to stderr (or a file), never to stdout.
    handler = logging.FileHandler(args.log_file) if args.log_file else logging.StreamHandler(sys.stderr)
    logging.basicConfig(
        level=logging.DEBUG if args.log_file else logging.WARNING,
        handlers=[handler],
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("pygls").setLevel(logging.WARNING if not args.log_file else logging.INFO)
    for name in ("httpx", "httpcore"):  # their debug lines describe requests; keep them out of our log
        logging.getLogger(name).setLevel(logging.WARNING)
    if remote is not None and remote.token:
        redaction.protect(remote.token)
    for name in ("pygls.io_", "pygls.server"):  # the logger pygls reads messages with
        logging.getLogger(name).addFilter(_NoTracebackForClientJson())
    server = InfillServer(model_dir=args.model, remote=remote, workspace=not args.no_workspace)
    try:
        if args.tcp:
            print(f"infill lsp: listening on {args.host}:{args.port}", file=sys.stderr, flush=True)
            return server.start_tcp(args.host, args.port)
        return server.start_io()
    finally:
        server.engine.close()
        server.workspace_folders.close()


if __name__ == "__main__":
    sys.exit(main())
