"""The ASGI application of `infill serve`: one port, four things.

    GET  /, /playground.*     the playground page (no token: it asks for one)
    WS   /ws                  live rewrite sessions (docs/live-protocol.md)
    POST /v1/completions      OpenAI-style infilling, JSON or server-sent events (docs/http-api.md)
    GET  /v1/models, /health

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
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket

from engine.types import InfillError, ModelFailure
from engine.worker import InfillCall, Job, Outcome

from . import openai_api as api
from . import pages
from .channel import StarletteChannel
from .connection import LiveConnection
from .hub import Hub
from .protocol import WEBSOCKET_PATH
from .frames import result_payload

log = logging.getLogger("infill.live")

STEP_BACKLOG = 32
KEY = "completion"  # the worker's key within an HTTP request's own group
API_METHODS = {"/v1/completions": "POST", "/v1/models": "GET", "/health": "GET"}


def build_app(hub: Hub) -> Starlette:
    """The app over one Hub (whose engine worker runs every model call)."""
    routes = [
        Route("/v1/completions", partial(completions, hub), methods=["POST"]),
        Route("/v1/models", partial(models, hub), methods=["GET"]),
        Route("/health", partial(health, hub), methods=["GET"]),
        WebSocketRoute(WEBSOCKET_PATH, partial(live_socket, hub)),
        Route("/{path:path}", partial(page, hub), methods=["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]),
    ]
    return Starlette(routes=routes)


def error_response(error: api.ApiError, headers: Optional[dict[str, str]] = None) -> JSONResponse:
    if error.status == 401:
        headers = {**(headers or {}), "WWW-Authenticate": "Bearer"}
    return JSONResponse(error.body(), error.status, headers=headers)


def _refusal(hub: Hub, request: Request) -> Optional[api.ApiError]:
    """403 for a foreign browser origin, 401 without the right bearer token."""
    origin = request.headers.get("origin")
    if not hub.origins.allows(origin):
        return api.ApiError(403, f"origin {origin!r} is not allowed; start the server with --allow-origin to admit it",
                            kind="permission_error", code="origin_not_allowed")
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not hub.token_ok(token.strip() or None):
        reason = "missing" if not token.strip() else "wrong"
        return api.ApiError(401, f"{reason} API token: send 'Authorization: Bearer TOKEN' with the token "
                            "`infill serve` printed at start", code="invalid_api_key")
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


# -- /v1/completions -------------------------------------------------------------------------

class EngineCall:
    """One completion as a job on the hub's engine worker, its steps and outcome handed to
    this event loop. Each HTTP request is a group of its own: turns go round robin across
    requests and live connections alike."""

    def __init__(self, hub: Hub, request: api.CompletionRequest) -> None:
        self.hub = hub
        self.request = request
        self.queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self.finished = False
        self.ended = False
        loop = asyncio.get_running_loop()

        def post(kind: str, payload: Any) -> None:  # on the engine thread: hand off, never block
            try:
                loop.call_soon_threadsafe(self.queue.put_nowait, (kind, payload))
            except RuntimeError:
                pass  # the loop is gone: the server is shutting down

        group = ("http", hub.next_http_id())
        # The whole prompt and suffix: the engine decides the window it reads (engine/window.py).
        call = InfillCall(request.prompt, request.suffix, request.language, dict(request.settings),
                          cross_file=request.cross_file, filename=request.filename,
                          detect_language=request.detect_language)
        self.job = Job(group, KEY, call, hub.worker.supersede(group, KEY))
        self.job.on_step = lambda step: post("step", step)
        self.job.on_done = lambda outcome: post("done", outcome)

    def start(self) -> None:
        self.hub.http_in_flight += 1
        self.hub.counters["http_requests"] += 1
        self.hub.worker.submit(self.job)

    async def next(self) -> tuple[str, Any]:
        """The next ("step", DenoiseStep) or ("done", Outcome). Once a reader falls behind
        by more than STEP_BACKLOG steps, steps collapse into the newest one (a step carries
        the whole canvas, so a slow reader gets fewer, fuller snapshots, never a backlog)."""
        kind, payload = await self.queue.get()
        while kind == "step" and self.queue.qsize() > STEP_BACKLOG:
            kind, payload = self.queue.get_nowait()
        if kind != "step":
            self.finished = True
        return kind, payload

    def end(self) -> None:
        """Called when the answer is over, however it ended (more than once is harmless): a
        request that ends early (client gone, server stopping) stops the engine."""
        if self.ended:
            return
        self.ended = True
        self.hub.http_in_flight -= 1
        if not self.finished:
            self.hub.worker.cancel(self.job.group, KEY)
            self.hub.counters["http_cancelled"] += 1
        self.hub.worker.forget(self.job.group, KEY)  # a request is a group of its own: nothing reuses its context

    def prompt_tokens(self) -> int:
        """Tokens of the window the model reads (BOS, prefix tail, suffix head)."""
        context_ids = getattr(self.hub.engine, "context_ids", None)
        if context_ids is None:
            return 0
        prefix_ids, suffix_ids = context_ids(self.request.prompt, self.request.suffix, self.request.cross_file)
        return len(prefix_ids) + len(suffix_ids)


def _result(call: EngineCall, outcome: Outcome) -> dict[str, Any]:
    """The finished job as {"text", "stats", "queue_ms", "elapsed_ms"}, or ApiError."""
    if outcome.result is not None:
        return result_payload(outcome.result, call.job)
    if isinstance(outcome.error, InfillError):  # the input's fault; its message is meant for users
        raise api.ApiError(400, str(outcome.error), code="engine_refused")
    if isinstance(outcome.error, ModelFailure) and outcome.error.retryable:  # out of memory, timed out: retry
        raise api.ApiError(503, str(outcome.error), kind="server_error", code="model_failed")
    if outcome.cancelled:
        raise api.ApiError(503, "the request was cancelled: the server is shutting down", kind="server_error",
                           code="cancelled")
    message = str(outcome.error) if isinstance(outcome.error, ModelFailure) else "the engine failed; see the server log"
    raise api.ApiError(500, message, kind="server_error", code="internal_error")


def _figures(hub: Hub, result: dict[str, Any]) -> dict[str, Any]:
    stats = result["stats"]
    return {"forwards": stats.get("forwards"), "tpf": stats.get("tokens_per_forward"), "ms": stats.get("ms"),
            "replica": hub.replica_id, "tokens": stats.get("tokens"), "stop_reason": stats.get("stop_reason"),
            "queue_ms": result.get("queue_ms"), "elapsed_ms": result.get("elapsed_ms"),
            "language": stats.get("language"), "language_source": stats.get("language_source")}


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
    call = EngineCall(hub, parsed)
    call.start()
    meta = {"completion_id": f"cmpl-{secrets.token_hex(12)}", "created": int(time.time()), "model": hub.model_name}
    if parsed.stream:
        return _EngineStream(call, _stream(hub, call, parsed, meta), media_type="text/event-stream",
                             headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})
    try:
        result = await _until_result(call, request)
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


async def _until_result(call: EngineCall, request: Request) -> dict[str, Any]:
    """Wait for the result; if the client hangs up first, give up (the caller cancels the job)."""
    disconnected = asyncio.ensure_future(_disconnect(request))
    try:
        while True:
            frame = asyncio.ensure_future(call.next())
            await asyncio.wait({frame, disconnected}, return_when=asyncio.FIRST_COMPLETED)
            if not frame.done():
                frame.cancel()
                raise api.ApiError(499, "client closed the request", code="client_closed")
            kind, payload = frame.result()
            if kind == "done":
                return _result(call, payload)
    finally:
        disconnected.cancel()


async def _disconnect(request: Request) -> None:
    """Returns when the client disconnects (the body has been read, so nothing else arrives)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


class _EngineStream(StreamingResponse):
    """A streamed answer that ends its engine call even if the body never starts (the
    client left before the headers went out, so the generator never ran)."""

    def __init__(self, call: EngineCall, content: AsyncIterator[bytes], **kwargs: Any) -> None:
        super().__init__(content, **kwargs)
        self.call = call

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.call.end()


async def _stream(hub: Hub, call: EngineCall, request: api.CompletionRequest,
                  meta: dict[str, Any]) -> AsyncIterator[bytes]:
    """Server-sent events: one chunk per denoising step that changes the text, then the
    answer, then [DONE]. A diffusion model does not write left to right, so the text is
    final only at the end: step chunks carry `choices[0].text` = "" (nothing to append yet)
    and the step's snapshot under `infill`; the last chunk carries the whole middle.
    Clients that concatenate deltas (every OpenAI client) thus get exactly the answer."""
    shown: Optional[str] = None
    try:
        while True:
            kind, payload = await call.next()
            if kind == "step":
                text = api.canvas_text(payload.canvas)
                if text == shown:
                    continue
                shown = text
                yield api.sse_event(api.chunk_body(**meta, text="", finish=None, infill={
                    "step": payload.step, "text": text, "masked": payload.masked,
                    "forwards": payload.forwards, "ms": round(float(payload.ms), 3)}))
                continue
            try:
                result = _result(call, payload)
            except api.ApiError as error:
                hub.counters[f"http_{error.status}"] += 1
                yield api.sse_event(error.body())
                break
            text, stopped = api.apply_stop(result["text"], request.stop)
            finish = api.finish_reason(result["stats"].get("stop_reason", ""), stopped)
            yield api.sse_event(api.chunk_body(**meta, text=text, finish=finish, infill=_figures(hub, result)))
            if request.include_usage:
                usage = api.usage_body(await asyncio.to_thread(call.prompt_tokens), result["stats"].get("tokens", 0))
                yield api.sse_event({"id": meta["completion_id"], "object": "text_completion",
                                     "created": meta["created"], "model": meta["model"], "choices": [],
                                     "usage": usage})
            break
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
        return error_response(api.ApiError(405, f"{path} takes {API_METHODS[path]}, not {request.method}",
                                           code="method_not_allowed"), headers={"Allow": API_METHODS[path]})
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
