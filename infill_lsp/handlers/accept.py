"""The `infill.accept` command: clients run it when the user takes a suggestion."""
from __future__ import annotations

from typing import Any

from lsprotocol import types

from ..completion_service import Suggestion
from .host import LspServer


ACCEPT_COMMAND = "infill.accept"


def accept_command(suggestion: Suggestion) -> types.Command:
    # The second argument names the document version the suggestion belongs to, and where
    # its text came from: `source` "model", "workspace" (a line of the workspace kept as
    # is) or "edited" (one the model edited) with `origin` ("path:line", only when known), which the infill clients show after
    # the ghost text. An inline completion item has no other field to say them in.
    details: dict[str, object] = {"version": suggestion.version, "source": suggestion.answer_source}
    if suggestion.answer_source in ("workspace", "edited") and suggestion.origin:
        details["origin"] = suggestion.origin
    return types.Command(
        title="Accept infill suggestion",
        command=ACCEPT_COMMAND,
        arguments=[suggestion.suggestion_id, details],
    )


def register(server: "LspServer") -> None:
    # No annotation on `ls`: pygls resolves command handlers' type hints at call time
    # (and the server's type, LspServer, is a Protocol, no class to convert into).
    @server.command(ACCEPT_COMMAND)
    def accept(ls, *arguments: Any) -> dict:  # type: ignore[no-untyped-def]
        suggestion_id = arguments[0] if arguments else None
        if not isinstance(suggestion_id, str):
            ls.tell_log(f"{ACCEPT_COMMAND} expects one suggestion id, got {list(arguments)!r}", types.MessageType.Warning)
            return {"accepted": False}
        return {"accepted": ls.completions.accepted(suggestion_id)}
