"""The rules every HTTP route of `infill serve` applies, whatever its wire format
(`/v1/completions` in app.py; Ollama's and llama.cpp's routes in dialect_routes.py): the
Origin and token check, the body cap, and a finished engine job as a result or an error.
Errors are raised as OpenAI-style `ApiError`s (status, message); each format renders
them in its own shape."""
from __future__ import annotations

from typing import Any, AsyncIterator, Optional

from starlette.requests import Request

from engine.worker import Outcome

from ..request_path import ErrorCode, UserError, user_error
from . import openai_api as api
from .engine_call import EngineCall
from .frames import result_payload
from .hub import Hub


def refusal(hub: Hub, request: Request) -> Optional[api.ApiError]:
    """403 for a foreign browser origin, 401 without the right bearer token."""
    origin = request.headers.get("origin")
    if not hub.origins.allows(origin):
        return api.ApiError(403, f"origin {origin!r} is not allowed; start the server with --allow-origin to admit it",
                            kind="permission_error", code="origin_not_allowed")
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not hub.token_ok(token.strip() or None):
        return api.ApiError(401, f"{hub.token_refusal(token.strip(), 'API token')}; send it as 'Authorization: Bearer TOKEN'",
                            code="invalid_api_key")
    return None


async def read_body(request: Request, limit: int) -> bytes:
    """The body, refused with 413 past `limit` bytes (before reading it when the length is declared)."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > limit):
        raise api.ApiError(413, f"request body over the {limit:,}-byte limit", code="request_too_large")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise api.ApiError(413, f"request body over the {limit:,}-byte limit", code="request_too_large")
        chunks.append(chunk)
    return b"".join(chunks)


# The request path's errors as OpenAI error objects: (code, type) by ErrorCode; the HTTP
# status is the request path's (UserError.http_status).
_API_CODES = {ErrorCode.REFUSED: "engine_refused", ErrorCode.MODEL_FAILED: "model_failed",
              ErrorCode.CANCELLED: "cancelled", ErrorCode.UNAVAILABLE: "model_unavailable"}


def api_error(failure: UserError) -> api.ApiError:
    """A UserError as the OpenAI-style error this API answers with."""
    kind = "invalid_request_error" if failure.http_status < 500 else "server_error"
    return api.ApiError(failure.http_status, failure.message, kind=kind, code=_API_CODES.get(failure.code, "internal_error"))


def result(call: EngineCall, outcome: Outcome) -> dict[str, Any]:
    """The finished job as {"text", "stats", "queue_ms", "elapsed_ms"}, or ApiError."""
    failure = user_error(outcome)
    if failure is not None:
        raise api_error(failure)
    return result_payload(outcome.result, call.job)


def figures(hub: Hub, result: dict[str, Any]) -> dict[str, Any]:
    """The `infill` extension object every format's answer carries: the engine's figures,
    and where the middle came from (`source`: "model" or "workspace", a line of the
    client's snippets kept as is; `origin`, "path:line", only when the engine knows it,
    which over HTTP it does not: snippets are excerpts)."""
    stats = result["stats"]
    out = {"forwards": stats.get("forwards"), "tpf": stats.get("tokens_per_forward"), "ms": stats.get("ms"),
           "replica": hub.replica_id, "tokens": stats.get("tokens"), "stop_reason": stats.get("stop_reason"),
           "queue_ms": result.get("queue_ms"), "elapsed_ms": result.get("elapsed_ms"),
           "language": stats.get("language"), "language_source": stats.get("language_source"),
           "source": stats.get("source", "model")}
    if stats.get("origin"):
        out["origin"] = stats["origin"]
    return out



async def engine_events(hub: Hub, call: EngineCall) -> AsyncIterator[tuple[str, Any]]:
    """A streamed call's events, whatever the format: ("step", figures) for each denoising
    step that changes the text (`step`, `text`: the canvas's committed tokens in order,
    `masked`, `forwards`, `ms`), then ("result", the finished result) or ("error",
    ApiError). A diffusion model's text is final only at the end, so every format sends
    the steps with nothing to append and the middle once, at the end."""
    shown: Optional[str] = None
    while True:
        kind, payload = await call.next()
        if kind == "step":
            text = api.canvas_text(payload.canvas)
            if text != shown:
                shown = text
                yield "step", {"step": payload.step, "text": text, "masked": payload.masked,
                               "forwards": payload.forwards, "ms": round(float(payload.ms), 3)}
            continue
        try:
            finished = result(call, payload)
        except api.ApiError as error:
            hub.counters[f"http_{error.status}"] += 1
            yield "error", error
            return
        yield "result", finished
        return
