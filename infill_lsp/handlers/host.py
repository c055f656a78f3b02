"""What the feature handlers need from the language server: `LspServer`, which
infill_lsp/server.py's InfillServer satisfies.

Typed here, not by importing the server: the server imports the handlers to register
them, so an import back (even one for type checking only) would close a circle.
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Protocol

from lsprotocol import types

from ..completion_service import CompletionService, Suggestion
from ..config import LspSettings
from ..documents import DocumentStore
from ..edit_history import EditHistory
from ..request_path import UserError
from ..usage_stats import Stats
from ..workspace_folders import WorkspaceFolders


class LspServer(Protocol):
    documents: DocumentStore
    edit_history: EditHistory  # recent edits per document, for infill/nextEdit
    engine: Any  # EngineHost or RemoteEngineHost: a request_path.Runner with load/cancel/close/model_name
    stats: Stats
    settings: LspSettings
    completions: CompletionService
    initialization_options: Any
    client_capabilities: types.ClientCapabilities
    workspace_folders: WorkspaceFolders  # the folders' indexes (infill_lsp/workspace_folders.py)
    load_started: bool  # the client said 'initialized'
    work_done_progress: Any  # pygls' $/progress helper

    # pygls' registration and requests to the client
    def feature(self, feature_name: str, options: Any = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]: ...
    def command(self, command_name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]: ...
    def workspace_configuration_async(self, params: types.ConfigurationParams) -> Any: ...
    def client_register_capability_async(self, params: types.RegistrationParams) -> Any: ...

    # the server's own
    def tell_log(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None: ...
    async def apply_settings(self, raw: Any, origin: str) -> None: ...
    async def load_model(self) -> None: ...
    async def suggest(self, uri: str, position: types.Position) -> Optional[Suggestion]: ...
    def language_for(self, lsp_id: str) -> Optional[str]: ...
    def report_failure(self, what: str, error: BaseException) -> UserError: ...
