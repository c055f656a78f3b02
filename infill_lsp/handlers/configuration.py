"""workspace/didChangeConfiguration: new settings pushed, or a hint to pull them."""
from __future__ import annotations

from lsprotocol import types

from ..config import SECTION
from .lifecycle import pull_configuration
from .host import LspServer


def register(server: "LspServer") -> None:
    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(ls: "LspServer", params: types.DidChangeConfigurationParams) -> None:
        settings = params.settings
        # Pull-model clients send null (or an object without our section) as a nudge.
        if isinstance(settings, dict) and SECTION in settings:
            await ls.apply_settings(settings[SECTION], "didChangeConfiguration")
        else:
            await pull_configuration(ls)
