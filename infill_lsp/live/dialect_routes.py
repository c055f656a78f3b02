"""The routes of the other clients' wire formats, next to `/v1/completions` on the same app:

    POST /api/generate   GET /api/tags   POST /api/show   GET /api/version     Ollama (ollama_api.py)
    POST /infill         GET /props                          llama.cpp server (llamacpp_api.py)

Each request goes the way `/v1/completions` goes (app.py): the same Origin and token check,
body cap, model check, load shedding (429), one EngineCall on the hub's engine worker
(cancelled when the client hangs up), the same figures; only the parsing and the shapes of
answers and errors differ. A route here is its parser, its renderer, and `_admit`,
`_check_model`, `_start` below over http_rules.py; app.py registers them (`routes()`).
"""
from __future__ import annotations

import asyncio
from dataclasses import replace
from functools import partial
from typing import Any, AsyncIterator, Callable, Optional, TypeVar

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from engine.language import known_languages
from engine.worker import InfillCall

from . import llamacpp_api as llama
from . import ollama_api as ollama
from . import openai_api as api
from .http_rules import engine_events, figures as _figures, read_body, refusal as _refusal, result as _result
from .engine_call import EngineCall, EngineStream
from .hub import Hub

T = TypeVar("T")
STARTED = ollama.timestamp()  # /api/tags' modified_at: when this server process started


def routes(hub: Hub) -> list[Route]:
    return [Route("/api/generate", partial(generate, hub), methods=["POST"]),
            Route("/api/tags", partial(tags, hub), methods=["GET"]),
            Route("/api/show", partial(show, hub), methods=["POST"]),
            Route("/api/version", partial(version, hub), methods=["GET"]),
            Route("/infill", partial(infill, hub), methods=["POST"]),
            Route("/props", partial(props, hub), methods=["GET"])]


# -- what every route shares ---------------------------------------------------------------------

async def _admit(hub: Hub, request: Request, parse: Callable[[bytes], T]) -> T:
    """Origin and token (403/401), the body cap (413), then the dialect's parser; raises api.ApiError
    for the shared rules (each route renders it in its own shape) and the parser's own error."""
    refusal = _refusal(hub, request)
    if refusal is not None:
        raise refusal
    return parse(await read_body(request, hub.limits.max_message_bytes))


def _check_model(hub: Hub, completion: api.CompletionRequest, name: Optional[str],
                 language: Optional[str], not_found: Callable[[str], Exception]) -> api.CompletionRequest:
    """The served model or none (clients send "" when unset); `NAME:LANGUAGE` names the
    language unless the request names one itself; then the 429 of a full server."""
    if name not in (None, "", hub.model_name):
        raise not_found(str(completion.model))
    if hub.http_in_flight >= hub.limits.max_http_requests:
        raise api.ApiError(429, f"{hub.http_in_flight} requests in flight, the most this server takes; retry shortly",
                           kind="rate_limit_error", code="server_busy")
    if language is not None and completion.language is None:
        completion = replace(completion, language=language)
    return completion


def _start(hub: Hub, completion: api.CompletionRequest) -> EngineCall:
    hub.check_model_dir()
    call = EngineCall(hub, InfillCall(completion.prompt, completion.suffix, completion.language,
                                      dict(completion.settings), cross_file=completion.cross_file,
                                      filename=completion.filename, detect_language=completion.detect_language,
                                      workspace=completion.workspace()))
    call.start(steps=completion.stream)
    return call


async def _outcome(call: EngineCall, request: Request) -> dict[str, Any]:
    """The finished result (http_rules.result's dict), or api.ApiError (499 when the client left)."""
    try:
        outcome = await call.outcome_or_hang_up(request)
        if outcome is None:
            raise api.ApiError(499, "client closed the request", code="client_closed")
        return _result(call, outcome)
    finally:
        call.end()


def _count(hub: Hub, status: int) -> None:
    hub.counters[f"http_{status}"] += 1


def dialect_error(path: str, error: api.ApiError, headers: Optional[dict[str, str]] = None) -> Optional[Response]:
    """A shared refusal (405, an unknown /api/ path) on one of these paths, in its format's shape."""
    if path.startswith("/api/"):
        return JSONResponse(ollama.from_api_error(error).body(), error.status, headers=headers)
    if path in ("/infill", "/props"):
        return JSONResponse(llama.from_api_error(error).body(), error.status, headers=headers)
    return None


# -- Ollama ------------------------------------------------------------------------------------

def _ollama_error(hub: Hub, error: Exception) -> JSONResponse:
    failure = error if isinstance(error, ollama.OllamaError) else ollama.from_api_error(error)  # type: ignore[arg-type]
    _count(hub, failure.status)
    headers = {"WWW-Authenticate": "Bearer"} if failure.status == 401 else None
    return JSONResponse(failure.body(), failure.status, headers=headers)


async def generate(hub: Hub, request: Request) -> Response:
    try:
        parsed = await _admit(hub, request, partial(ollama.parse_generate_request,
                                                    max_request_tokens=hub.limits.max_request_tokens))
        name, language = ollama.split_model(parsed.completion.model, hub.model_name)
        completion = _check_model(hub, parsed.completion, name, language, ollama.not_found)
    except (api.ApiError, ollama.OllamaError) as error:
        return _ollama_error(hub, error)
    created_at = ollama.timestamp()
    if parsed.load_only:  # Ollama's "load the model" request: nothing to fill
        return JSONResponse(ollama.part(hub.model_name, created_at, "", done=True, done_reason="load"))
    call = _start(hub, completion)
    if completion.stream:
        return EngineStream(call, _ollama_stream(hub, call, completion, created_at),
                            media_type="application/x-ndjson", headers={"Cache-Control": "no-store"})
    try:
        result = await _outcome(call, request)
    except api.ApiError as error:
        return _ollama_error(hub, error)
    text, stopped = api.apply_stop(result["text"], completion.stop)
    final = await _ollama_final(hub, call, result, stopped)
    return JSONResponse(ollama.part(hub.model_name, created_at, text, **final))


async def _ollama_final(hub: Hub, call: EngineCall, result: dict[str, Any], stopped: bool) -> dict[str, Any]:
    stats = result["stats"]
    return ollama.final_fields(reason=ollama.done_reason(stats.get("stop_reason", ""), stopped),
                               prompt_tokens=await asyncio.to_thread(call.prompt_tokens),
                               tokens=stats.get("tokens", 0), engine_ms=float(stats.get("ms") or 0.0),
                               elapsed_ms=float(result.get("elapsed_ms") or 0.0), infill=_figures(hub, result))


async def _ollama_stream(hub: Hub, call: EngineCall, completion: api.CompletionRequest,
                         created_at: str) -> AsyncIterator[bytes]:
    """NDJSON, Ollama's streaming: `response` is a piece to append. A diffusion model's text
    is final only at the end, so step lines carry `response: ""` and the step's snapshot
    under `infill`; then one line with the whole middle, then the `done` line with the
    counters (its `response` empty, as Ollama's is). Concatenating `response` gives
    exactly the non-streamed answer."""
    try:
        async for kind, payload in engine_events(hub, call):
            if kind == "step":
                yield ollama.ndjson(ollama.part(hub.model_name, created_at, "", infill=payload))
            elif kind == "error":
                yield ollama.ndjson(ollama.from_api_error(payload).body())
            else:
                text, stopped = api.apply_stop(payload["text"], completion.stop)
                if text:
                    yield ollama.ndjson(ollama.part(hub.model_name, created_at, text))
                final = await _ollama_final(hub, call, payload, stopped)
                yield ollama.ndjson(ollama.part(hub.model_name, created_at, "", **final))
    finally:
        call.end()


async def tags(hub: Hub, request: Request) -> Response:
    refusal = _refusal(hub, request)
    if refusal is not None:
        return _ollama_error(hub, refusal)
    return JSONResponse(ollama.tags_body(hub.model_name, known_languages(), STARTED))


async def show(hub: Hub, request: Request) -> Response:
    try:
        model = await _admit(hub, request, ollama.parse_show_request)
        name, _ = ollama.split_model(model, hub.model_name)
        if name not in (None, "", hub.model_name):
            raise ollama.not_found(str(model))
    except (api.ApiError, ollama.OllamaError) as error:
        return _ollama_error(hub, error)
    return JSONResponse(ollama.show_body(_context_tokens(hub), STARTED))


def _context_tokens(hub: Hub) -> int:
    """What the model reads and writes at most: the prefix and suffix windows and the middle."""
    settings = getattr(hub.engine, "settings", None)
    return (int(getattr(settings, "context_tokens", 1024)) + int(getattr(settings, "suffix_tokens", 256))
            + int(getattr(settings, "max_tokens", 64)))


async def version(hub: Hub, request: Request) -> Response:
    """Public, like /health (clients probe it before they have a token in play); Origin still applies."""
    origin = request.headers.get("origin")
    if not hub.origins.allows(origin):
        return _ollama_error(hub, api.ApiError(403, f"origin {origin!r} is not allowed", kind="permission_error"))
    return JSONResponse(ollama.version_body())


# -- llama.cpp ---------------------------------------------------------------------------------

def _llama_error(hub: Hub, error: Exception) -> JSONResponse:
    failure = error if isinstance(error, llama.LlamaError) else llama.from_api_error(error)  # type: ignore[arg-type]
    _count(hub, failure.status)
    headers = {"WWW-Authenticate": "Bearer"} if failure.status == 401 else None
    return JSONResponse(failure.body(), failure.status, headers=headers)


def _llama_not_found(model: str) -> llama.LlamaError:
    return llama.LlamaError(404, f"model {model!r} is not served here; GET /props names the served one")


async def infill(hub: Hub, request: Request) -> Response:
    try:
        parsed = await _admit(hub, request, partial(llama.parse_infill_request,
                                                    max_request_tokens=hub.limits.max_request_tokens))
        try:
            name, language = api.split_model(parsed.completion.model, hub.model_name)
        except api.ApiError as error:
            raise llama.LlamaError(400, error.message) from None
        completion = _check_model(hub, parsed.completion, name, language, _llama_not_found)
    except (api.ApiError, llama.LlamaError) as error:
        return _llama_error(hub, error)
    n_predict = int(completion.settings.get("max_tokens", -1))
    if parsed.warm_only:  # n_predict 0: the clients' cache warm-up; a diffusion model keeps no prompt cache
        body = llama.result_body(model=hub.model_name, content="", stop_type_="limit", stopping_word="",
                                 prompt_tokens=0, tokens=0, engine_ms=0.0, n_predict=0, infill=None,
                                 stream=completion.stream)
        return JSONResponse(llama.select_fields(body, parsed.response_fields))
    call = _start(hub, completion)
    if completion.stream:
        return EngineStream(call, _llama_stream(hub, call, parsed, n_predict), media_type="text/event-stream",
                            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})
    try:
        result = await _outcome(call, request)
    except api.ApiError as error:
        return _llama_error(hub, error)
    body = await _llama_final(hub, call, parsed, result, n_predict, stream=False)
    return JSONResponse(llama.select_fields(body, parsed.response_fields))


async def _llama_final(hub: Hub, call: EngineCall, parsed: llama.InfillRequest, result: dict[str, Any],
                       n_predict: int, *, stream: bool, content: Optional[str] = None) -> dict[str, Any]:
    stats = result["stats"]
    text, stopped = api.apply_stop(result["text"], parsed.completion.stop)
    word = next((s for s in parsed.completion.stop if stopped and result["text"][len(text):].startswith(s)), "")
    return llama.result_body(model=hub.model_name, content=text if content is None else content,
                             stop_type_=llama.stop_type(stats.get("stop_reason", ""), stopped), stopping_word=word,
                             prompt_tokens=await asyncio.to_thread(call.prompt_tokens),
                             tokens=stats.get("tokens", 0), engine_ms=float(stats.get("ms") or 0.0),
                             n_predict=n_predict, infill=_figures(hub, result), stream=stream)


async def _llama_stream(hub: Hub, call: EngineCall, parsed: llama.InfillRequest, n_predict: int) -> AsyncIterator[bytes]:
    """Server-sent events, llama.cpp's streaming: `content` is a piece to append, the last
    event has `stop: true` and the counters (no `[DONE]`: llama.cpp sends none on /infill).
    Step events carry `content: ""` and the step's snapshot under `infill`; then one event
    with the whole middle; then the last, whose `content` is empty."""
    try:
        async for kind, payload in engine_events(hub, call):
            if kind == "step":
                yield llama.sse_event(llama.partial_body("", payload))
            elif kind == "error":
                yield llama.sse_error(llama.from_api_error(payload))
            else:
                text, _ = api.apply_stop(payload["text"], parsed.completion.stop)
                if text:
                    yield llama.sse_event(llama.partial_body(text))
                final = await _llama_final(hub, call, parsed, payload, n_predict, stream=True, content="")
                yield llama.sse_event(llama.select_fields(final, parsed.response_fields))
    finally:
        call.end()


async def props(hub: Hub, request: Request) -> Response:
    """Public, as llama.cpp's is (it names the model, nothing more); Origin still applies."""
    origin = request.headers.get("origin")
    if not hub.origins.allows(origin):
        return _llama_error(hub, api.ApiError(403, f"origin {origin!r} is not allowed", kind="permission_error"))
    max_tokens = int(getattr(getattr(hub.engine, "settings", None), "max_tokens", 64))
    return JSONResponse(llama.props_body(hub.model_name, max_tokens, _context_tokens(hub)))

