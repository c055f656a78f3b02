"""The workspace index kept up to date (infill_lsp/workspace_folders.py):
textDocument/didSave and workspace/didChangeWatchedFiles re-index the files they name,
workspace/didChangeWorkspaceFolders adds and indexes folders, or drops them."""
from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Optional

from lsprotocol import types

from ..workspace_folders import index_enabled, index_folders, uri_path
from .host import LspServer


def register(server: "LspServer") -> None:
    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls: "LspServer", params: types.DidSaveTextDocumentParams) -> None:
        await _changed(ls, [params.text_document.uri])

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    async def did_change_watched_files(ls: "LspServer", params: types.DidChangeWatchedFilesParams) -> None:
        await _changed(ls, [change.uri for change in params.changes])

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    def did_change_workspace_folders(ls: "LspServer", params: types.DidChangeWorkspaceFoldersParams) -> None:
        folders = ls.workspace_folders
        folders.remove(path for folder in params.event.removed or [] if (path := _path(folder.uri)) is not None)
        folders.add(path for folder in params.event.added or [] if (path := _path(folder.uri)) is not None)
        if ls.load_started:  # after `initialized`; before it, `initialized` indexes them
            asyncio.ensure_future(index_folders(ls))


def _path(uri: str) -> Optional[Path]:
    path = uri_path(uri)
    return Path(path) if path else None


async def _changed(ls: "LspServer", uris: list[str]) -> None:
    if not index_enabled(ls):
        return
    paths = [path for uri in uris if (path := uri_path(uri)) is not None]
    try:
        await ls.workspace_folders.files_changed(paths)
    except Exception as error:  # a database that cannot be written: said in the log, typing goes on
        ls.tell_log(f"workspace index not updated: {type(error).__name__}: {error}", types.MessageType.Warning)
