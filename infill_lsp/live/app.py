"""The ASGI application of `infill serve`: one port, five things.

    GET  /, /playground.*     the playground page (no token: it asks for one)
    WS   /ws                  live rewrite sessions (docs/live-protocol.md)
    POST /v1/completions      OpenAI-style infilling, JSON or server-sent events (docs/http-api.md)
    GET  /v1/models, /health
    POST /api/generate, /infill (+ GET /api/tags, POST /api/show, GET /api/version, GET /props)
                              Ollama's and llama.cpp's formats (dialect_routes.py, docs/clients.md)

Every request passes the same Origin check (a browser page from elsewhere gets 403), and
the API the same token (`Authorization: Bearer TOKEN`; the live protocol carries it in
`open`). It is a plain Starlette app so that uvicorn runs it in-process and Ray Serve runs
the very same app in each replica (infill_lsp/live/cluster.py).
"""
from __future__ import annotations

import asyncio
import dataclasses
import logging
import secrets
import time
from functools import partial
from typing import Any, AsyncIterator, Optional

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket

from engine.worker import InfillCall

from . import dialect_routes
from . import openai_api as api
from . import pages
from .http_rules import engine_events, figures as _figures, read_body, refusal as _refusal, result as _result
from .channel import StarletteChannel
from .connection import LiveConnection
from .engine_call import EngineCall, EngineStream
from .hub import Hub
from .protocol import WEBSOCKET_PATH

log = logging.getLogger("infill.live")

API_METHODS = {"/v1/completions": "POST", "/v1/models": "GET", "/health": "GET",
               "/api/generate": "POST", "/api/tags": "GET", "/api/show": "POST", "/api/version": "GET",
               "/infill": "POST", "/props": "GET"}


def build_app(hub: Hub) -> Starlette:
    """The app over one Hub (whose engine worker runs every model call)."""
    routes = [
        Route("/v1/completions", partial(completions, hub), methods=["POST"]),
        Route("/v1/models", partial(models, hub), methods=["GET"]),
        Route("/health", partial(health, hub), methods=["GET"]),
        *dialect_routes.routes(hub),
        WebSocketRoute(WEBSOCKET_PATH, partial(live_socket, hub)),
        Route("/{path:path}", partial(page, hub), methods=["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]),
    ]
    return Starlette(routes=routes)


def error_response(error: api.ApiError, headers: Optional[dict[str, str]] = None) -> JSONResponse:
    if error.status == 401:
        headers = {**(headers or {}), "WWW-Authenticate": "Bearer"}
    return JSONResponse(error.body(), error.status, headers=headers)


# -- /v1/completions -------------------------------------------------------------------------

async def completions(hub: Hub, request: Request) -> Response:
    try:
        refusal = _refusal(hub, request)
        if refusal is not None:
            hub.counters[f"http_{refusal.status}"] += 1
            return error_response(refusal)
        body = await read_body(request, hub.limits.max_message_bytes)
        parsed = api.parse_completion_request(body, max_request_tokens=hub.limits.max_request_tokens)
        model, model_language = api.split_model(parsed.model, hub.model_name)  # `infill-default:python`
        if model_language is not None and parsed.language is None:
            parsed = dataclasses.replace(parsed, model=model, language=model_language)
        if model not in (None, "", hub.model_name):
            raise api.ApiError(404, f"model {parsed.model!r} is not served here; GET /v1/models lists "
                               f"{hub.model_name!r}", code="model_not_found", param="model")
        if hub.http_in_flight >= hub.limits.max_http_requests:
            raise api.ApiError(429, f"{hub.http_in_flight} requests in flight, the most this server takes; retry "
                               "shortly", kind="rate_limit_error", code="server_busy")
    except api.ApiError as error:
        hub.counters[f"http_{error.status}"] += 1
        return error_response(error)
    hub.check_model_dir()
    # The whole prompt and suffix: the engine decides the window it reads (engine/window.py).
    call = EngineCall(hub, InfillCall(parsed.prompt, parsed.suffix, parsed.language, dict(parsed.settings),
                                      cross_file=parsed.cross_file, filename=parsed.filename,
                                      detect_language=parsed.detect_language, workspace=parsed.workspace()))
    call.start(steps=parsed.stream)
    meta = {"completion_id": f"cmpl-{secrets.token_hex(12)}", "created": int(time.time()), "model": hub.model_name}
    if parsed.stream:
        return EngineStream(call, _stream(hub, call, parsed, meta), media_type="text/event-stream",
                             headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})
    try:
        outcome = await call.outcome_or_hang_up(request)
        if outcome is None:
            raise api.ApiError(499, "client closed the request", code="client_closed")
        result = _result(call, outcome)
    except api.ApiError as error:
        hub.counters[f"http_{error.status}"] += 1
        return error_response(error)
    finally:
        call.end()
    text, stopped = api.apply_stop(result["text"], parsed.stop)
    usage = api.usage_body(await asyncio.to_thread(call.prompt_tokens), result["stats"].get("tokens", 0))
    return JSONResponse(api.completion_body(
        **meta, text=text, finish=api.finish_reason(result["stats"].get("stop_reason", ""), stopped), usage=usage,
        infill=_figures(hub, result)))


async def _stream(hub: Hub, call: EngineCall, request: api.CompletionRequest,
                  meta: dict[str, Any]) -> AsyncIterator[bytes]:
    """Server-sent events: one chunk per denoising step that changes the text, then the
    answer, then [DONE]. A diffusion model does not write left to right, so the text is
    final only at the end: step chunks carry `choices[0].text` = "" (nothing to append yet)
    and the step's snapshot under `infill`; the last chunk carries the whole middle.
    Clients that concatenate deltas (every OpenAI client) thus get exactly the answer."""
    try:
        async for kind, payload in engine_events(hub, call):
            if kind == "step":
                yield api.sse_event(api.chunk_body(**meta, text="", finish=None, infill=payload))
            elif kind == "error":
                yield api.sse_event(payload.body())
            else:
                result = payload
                text, stopped = api.apply_stop(result["text"], request.stop)
                finish = api.finish_reason(result["stats"].get("stop_reason", ""), stopped)
                yield api.sse_event(api.chunk_body(**meta, text=text, finish=finish, infill=_figures(hub, result)))
                if request.include_usage:
                    usage = api.usage_body(await asyncio.to_thread(call.prompt_tokens), result["stats"].get("tokens", 0))
                    yield api.sse_event({"id": meta["completion_id"], "object": "text_completion",
                                         "created": meta["created"], "model": meta["model"], "choices": [],
                                         "usage": usage})
        yield api.sse_event("[DONE]")
    finally:
        call.end()


# -- the rest ----------------------------------------------------------------------------------

async def models(hub: Hub, request: Request) -> Response:
    refusal = _refusal(hub, request)
    if refusal is not None:
        return error_response(refusal)
    return JSONResponse(api.models_body(hub.model_name, 0))


async def health(hub: Hub, request: Request) -> Response:
    origin = request.headers.get("origin")
    if not hub.origins.allows(origin):
        return error_response(api.ApiError(403, f"origin {origin!r} is not allowed", kind="permission_error",
                                           code="origin_not_allowed"))
    return JSONResponse(hub.health(detailed=_refusal(hub, request) is None))


async def page(hub: Hub, request: Request) -> Response:
    path = request.url.path
    if path in API_METHODS:  # a known endpoint, the wrong method (the routes above took the right one)
        error = api.ApiError(405, f"{path} takes {API_METHODS[path]}, not {request.method}", code="method_not_allowed")
        return dialect_routes.dialect_error(path, error, {"Allow": API_METHODS[path]}) or error_response(
            error, headers={"Allow": API_METHODS[path]})
    if path.startswith("/api/"):
        return dialect_routes.dialect_error(path, api.ApiError(404, f"no endpoint {request.method} {path}; this server has POST "
                                                "/api/generate, GET /api/tags, POST /api/show and GET /api/version"))
    if path.startswith("/v1/"):
        return error_response(api.ApiError(404, f"no endpoint {request.method} {path}; this server has "
                                           "POST /v1/completions and GET /v1/models", code="not_found"))
    if request.method in ("GET", "HEAD"):
        return pages.static_response(path) or pages.text_response(404, "not found\n")
    return pages.text_response(405, "method not allowed\n")


async def live_socket(hub: Hub, ws: WebSocket) -> None:
    origin = ws.headers.get("origin")
    if not hub.origins.allows(origin):
        log.warning("refused a WebSocket handshake from origin %r", origin)
        return await _deny(ws, pages.text_response(403, f"origin {origin!r} is not allowed; start the server "
                                                   "with --allow-origin to admit it\n"))
    if hub.connections >= hub.limits.max_connections:
        return await _deny(ws, pages.text_response(503, "too many connections; try later\n"))
    await ws.accept()
    channel = StarletteChannel(ws, hub.limits.max_message_bytes)
    hub.connections += 1
    hub.channels.add(channel)
    try:
        await LiveConnection(hub, channel).serve()
    finally:
        hub.channels.discard(channel)
        hub.connections -= 1
        await channel.close(1000)


async def _deny(ws: WebSocket, response: Response) -> None:
    """Refuse a handshake with an HTTP answer (status and a reason), where the server can send one."""
    if "websocket.http.response" in ws.scope.get("extensions", {}):
        await ws.send_denial_response(response)
    else:
        await ws.close()  # the server answers 403 without a body
