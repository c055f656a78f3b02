"""initialize / initialized: negotiate positions, read settings, start the model loading
and the workspace indexing.

`initialize` answers at once; the model loads in the background after `initialized`, with
$/progress, and completion requests that arrive meanwhile wait for it. The workspace
folders `initialize` names are indexed in the background too (infill_lsp/
workspace_folders.py), with $/progress; completions never wait for that.
"""
from __future__ import annotations

import asyncio

from lsprotocol import types
from pygls.capabilities import ServerCapabilitiesBuilder

from ..config import SECTION
from ..workspace_folders import index_folders, initial_folders
from .host import LspServer


def register(server: "LspServer") -> None:
    @server.feature(types.INITIALIZE)
    def initialize(ls: "LspServer", params: types.InitializeParams) -> None:
        # pygls advertises this same choice in the capabilities it builds after us.
        encoding = ServerCapabilitiesBuilder.choose_position_encoding(params.capabilities)
        ls.documents.encoding = encoding.value if isinstance(encoding, types.PositionEncodingKind) else str(encoding)
        ls.initialization_options = params.initialization_options
        ls.workspace_folders.add(initial_folders(params))

    @server.feature(types.INITIALIZED)
    async def initialized(ls: "LspServer", params: types.InitializedParams) -> None:
        # The model loads once the settings are read (one round trip to the client): a
        # completion asked meanwhile waits for it instead of being refused (issue 35).
        ls.engine.expect_load()
        await ls.apply_settings(getattr(ls, "initialization_options", None), "initializationOptions")
        await pull_configuration(ls)
        asyncio.ensure_future(ls.load_model())
        asyncio.ensure_future(index_folders(ls))  # after the settings: `workspaceIndex` may say no

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: "LspServer", params: None) -> None:
        ls.engine.close()
        ls.workspace_folders.close()


async def pull_configuration(ls: "LspServer") -> None:
    """Ask the client for the "infill" section (workspace/configuration), if it can answer."""
    capabilities = ls.client_capabilities
    if not (capabilities.workspace and capabilities.workspace.configuration):
        return
    try:
        answer = await asyncio.wait_for(
            ls.workspace_configuration_async(
                types.ConfigurationParams(items=[types.ConfigurationItem(section=SECTION)])
            ),
            timeout=5,
        )
    except Exception as error:  # a client that errs or never answers keeps the defaults
        ls.tell_log(f"workspace/configuration failed: {error}", types.MessageType.Warning)
        return
    if answer:
        await ls.apply_settings(answer[0], "workspace/configuration")
