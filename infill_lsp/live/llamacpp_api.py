"""llama.cpp server's `/infill` (plus `/props`; `/health` is the app's own, whose anonymous
answer `{"status": "ok"}` is llama.cpp's): parsing a body and shaping answers and errors.
Pure functions, no I/O, like openai_api.py; docs/http-api.md ("llama.cpp's /infill") is
the reference, docs/clients.md the editor settings. The requests llama.vim and
llama.vscode send are recorded in tests/fixtures/llamacpp/.

The request: `input_prefix` (the lines before the cursor's line), `prompt` (the cursor's
line up to the cursor), `input_suffix` (the rest), `input_extra` (chunks of other files,
`[{"filename", "text"}]`), `n_predict`, `stream`, `stop`, `temperature`, `seed`,
`response_fields`. The text before the cursor is `input_prefix + prompt`; the chunks of
`input_extra` become the engine's cross-file context, and each chunk a text the
request's drafts are retrieved from (engine/workspace/retrieve.py; no file is ever read
by name). The request becomes the same
`CompletionRequest` the OpenAI route runs.

The language: none is sent. `input_extra`'s file names are not the current file's (llama.vim
and llama.vscode take chunks from any buffer, other languages included), so they do not
decide it; it comes from the `model` suffix (`infill-default:python`), the `infill`
extension field (`language`, `filename`), else detection on the prefix and suffix.

Rules, as llama.cpp applies them: unknown fields are ignored (`/infill` takes every
`/completion` option; the sampler knobs of autoregressive decoding — `top_k`, `top_p`,
`samplers`, `cache_prompt`, `id_slot`, `t_max_*`, `n_indent`, `lora`, ... — have no
meaning here); `n_predict` 0 (llama.vim and llama.vscode send it to warm the cache with new
`input_extra`) answers an empty completion without running the model; -1 means the
engine's default; `n_cmpl` (llama.vscode's parallel completions) is accepted and one
completion comes back (greedy decoding makes the others the same). Refused: `grammar` and
`json_schema` (the syntax constraint is infill's own).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Optional, Sequence


from . import openai_api as api

MAX_EXTRA_CHUNKS = 256
ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
               404: "not_found_error", 405: "invalid_request_error", 413: "invalid_request_error",
               429: "unavailable_error", 499: "invalid_request_error", 501: "not_supported_error",
               503: "unavailable_error"}
STOP_TYPES = {"max_tokens": "limit"}  # every other engine stop reason: "eos"


class LlamaError(api.Refusal):
    """A refused request: llama.cpp's `{"error": {"code", "message", "type"}}` with an HTTP status."""

    def error(self) -> dict[str, Any]:
        return {"code": self.status, "message": self.message, "type": ERROR_TYPES.get(self.status, "server_error")}

    def body(self) -> dict[str, Any]:
        return {"error": self.error()}


def from_api_error(error: api.ApiError) -> LlamaError:
    return LlamaError(error.status, error.message)


@dataclass(frozen=True)
class InfillRequest:
    completion: api.CompletionRequest  # what runs: the /v1/completions request it amounts to
    warm_only: bool = False  # n_predict 0: nothing to generate (a cache warm-up); answered without the model
    response_fields: Optional[tuple[str, ...]] = None  # keep only these ("a/b" unnests), as llama.cpp does


def _bad(message: str) -> LlamaError:
    return LlamaError(400, message)


def _string(data: dict[str, Any], name: str) -> str:
    value = data.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _bad(f"'{name}' must be a string")
    return value


def parse_infill_request(body: bytes, *, max_request_tokens: int) -> InfillRequest:
    """Decode and validate an `/infill` body; raises LlamaError (400) saying what is wrong."""
    data = _request_data(body)
    prefix, suffix, line = _string(data, "input_prefix"), _string(data, "input_suffix"), _string(data, "prompt")
    model, stream = _model_and_stream(data)
    try:
        settings, language, cross_file, filename, detect, snippets = api._infill_extension(data.get("infill"), max_request_tokens)
    except api.ApiError as error:
        raise _bad(error.message) from None
    chunks = _extra(data.get("input_extra"))
    cross_file = "".join(chunks) + cross_file
    # The chunks are also retrieval material for the request's drafts, as snippets are.
    buffers = api.snippet_buffers(snippets) + api.snippet_buffers(chunks, "input_extra")
    warm_only = _sampling_settings(data, settings, max_request_tokens)
    stop, fields = _stop_and_fields(data)
    completion = api.CompletionRequest(prompt=prefix + line, suffix=suffix, model=model or None, stream=stream,
                                       stop=stop, language=language, settings=settings, cross_file=cross_file,
                                       filename=filename, detect_language=detect, workspace_buffers=buffers)
    return InfillRequest(completion, warm_only=warm_only, response_fields=fields)


def _request_data(body: bytes) -> dict[str, Any]:
    """The body's JSON object, with no workspace path in it."""
    try:
        data = api.json_object(body)
    except ValueError as exc:
        raise _bad(str(exc)) from None
    try:
        api.refuse_workspace_paths(data, "")  # the server never reads a path a client names
    except api.ApiError as error:
        raise _bad(error.message) from None
    return data


def _model_and_stream(data: dict[str, Any]) -> tuple[Optional[str], bool]:
    """(model, stream) of a request, after refusing grammars and checking `n_cmpl`."""
    model = data.get("model")
    if model is not None and not isinstance(model, str):
        raise _bad("'model' must be a string")
    for name in ("grammar", "json_schema"):
        if data.get(name) not in (None, "", {}):
            raise _bad(f"'{name}' is not supported: infill constrains the middle with the language's own syntax "
                       "(the `infill` field's `language`); leave it out")
    stream = data.get("stream", False)
    if stream is None:
        stream = False
    if not isinstance(stream, bool):
        raise _bad("'stream' must be true or false")
    n_cmpl = data.get("n_cmpl")
    if n_cmpl is not None and (isinstance(n_cmpl, bool) or not isinstance(n_cmpl, int) or n_cmpl < 1):
        raise _bad("'n_cmpl' must be a positive integer (one completion comes back)")
    return model, stream


def _sampling_settings(data: dict[str, Any], settings: dict[str, Any], max_request_tokens: int) -> bool:
    """Check n_predict, temperature and seed into `settings` (over the `infill`
    extension's); whether the request only warms the cache (n_predict 0)."""
    try:
        n_predict = api.token_budget(data.get("n_predict"), "n_predict", max_request_tokens)
    except ValueError as error:
        raise _bad(str(error)) from None
    warm_only = n_predict == 0  # llama.vim's cache warm-up: encode the context, write nothing
    if n_predict:
        settings["max_tokens"] = n_predict
    temperature = data.get("temperature")
    if temperature is not None:
        if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or temperature > api.MAX_TEMPERATURE:
            raise _bad(f"'temperature' must be a number of at most {api.MAX_TEMPERATURE:g}")
        settings["temperature"] = max(0.0, float(temperature))  # llama.cpp: below 0 is greedy
    seed = data.get("seed")
    if seed is not None:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise _bad("'seed' must be an integer")
        if 0 <= seed < 2**31:  # -1: random, the engine's own
            settings["seed"] = seed
    return warm_only


def _stop_and_fields(data: dict[str, Any]) -> tuple[tuple[str, ...], Optional[tuple[str, ...]]]:
    """(stop sequences, response_fields) of a request."""
    try:
        stop = api._parse_stop(data.get("stop") or None, api.DIALECT_STOP_SEQUENCES)  # llama.vim sends [] for "none"
    except api.ApiError as error:
        raise _bad(error.message) from None
    fields = data.get("response_fields")
    if fields is not None and (not isinstance(fields, list) or not all(isinstance(f, str) for f in fields)):
        raise _bad("'response_fields' must be a list of field names such as [\"content\", \"timings/predicted_n\"]")
    return stop, None if fields is None else tuple(fields)


def _extra(value: Any) -> list[str]:
    """`input_extra`'s texts, in order, each ending in a newline: joined, the cross-file
    context (llama.cpp's own layout for a model without repository tokens: the chunks' text
    before the prefix); each one, a text the request's drafts are retrieved from."""
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > MAX_EXTRA_CHUNKS:
        raise _bad(f"'input_extra' must be a list of up to {MAX_EXTRA_CHUNKS} {{\"filename\", \"text\"}} objects")
    texts = []
    for index, chunk in enumerate(value):
        if (not isinstance(chunk, dict) or not isinstance(chunk.get("text", ""), str)
                or not isinstance(chunk.get("filename", ""), str)):
            raise _bad(f"'input_extra[{index}]' must be an object {{\"filename\": string, \"text\": string}}")
        text = chunk.get("text", "")
        if text:
            texts.append(text if text.endswith("\n") else text + "\n")
    return texts


# -- answers -----------------------------------------------------------------------------------

def stop_type(stop_reason: str, stopped_by_sequence: bool) -> str:
    return "word" if stopped_by_sequence else STOP_TYPES.get(stop_reason, "eos")


def timings(prompt_tokens: int, tokens: int, engine_ms: float) -> dict[str, float]:
    """llama.cpp's `timings`. A diffusion model reads the prompt in the same passes that
    write the middle, so the engine's time is all `predicted_ms` and `prompt_ms` is 0."""
    per_token = engine_ms / tokens if tokens else 0.0
    return {"prompt_n": prompt_tokens, "prompt_ms": 0.0, "prompt_per_token_ms": 0.0, "prompt_per_second": 0.0,
            "predicted_n": tokens, "predicted_ms": round(engine_ms, 3), "predicted_per_token_ms": round(per_token, 3),
            "predicted_per_second": round(1000.0 / per_token, 3) if per_token else 0.0}


def result_body(*, model: str, content: str, stop_type_: str, stopping_word: str, prompt_tokens: int, tokens: int,
                engine_ms: float, n_predict: int, infill: Optional[dict[str, Any]], stream: bool) -> dict[str, Any]:
    """The finished completion (non-streamed, or the last event of a stream)."""
    body = {"index": 0, "content": content, "tokens": [], "id_slot": 0, "stop": True, "model": model,
            "tokens_predicted": tokens, "tokens_evaluated": prompt_tokens,
            "generation_settings": {"n_predict": n_predict, "model": model, "stream": stream},
            "prompt": "", "has_new_line": "\n" in content, "truncated": False, "stop_type": stop_type_,
            "stopping_word": stopping_word, "tokens_cached": 0,
            "timings": timings(prompt_tokens, tokens, engine_ms)}
    if infill is not None:
        body["infill"] = infill
    return body


def partial_body(content: str, infill: Optional[dict[str, Any]] = None) -> dict[str, Any]:
    """One streamed event before the end: `content` is a piece to append (llama.cpp's rule)."""
    body: dict[str, Any] = {"index": 0, "content": content, "tokens": [], "stop": False, "id_slot": 0}
    if infill is not None:
        body["infill"] = infill
    return body


def select_fields(body: dict[str, Any], fields: Optional[Sequence[str]]) -> dict[str, Any]:
    """llama.cpp's `response_fields`: only the named fields; "a/b" takes body["a"]["b"] and
    puts it at the top level under the key "a/b"; a missing field is left out."""
    if fields is None:
        return body
    selected: dict[str, Any] = {}
    for path in fields:
        value: Any = body
        for key in path.split("/"):
            if not isinstance(value, dict) or key not in value:
                break
            value = value[key]
        else:
            if path:
                selected[path] = value
    return selected


def sse_event(payload: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(payload, ensure_ascii=False, separators=(',', ':'))}\n\n".encode()


def sse_error(error: LlamaError) -> bytes:
    """A failure after the stream started: llama.cpp sends it as an `error:` event."""
    return f"error: {json.dumps(error.error(), ensure_ascii=False, separators=(',', ':'))}\n\n".encode()


def props_body(model: str, max_tokens: int, n_ctx: int) -> dict[str, Any]:
    """`/props`: what llama.vscode and other clients read (the context size, the model);
    no file paths (llama.cpp's `model_path` is the model's name here)."""
    return {"default_generation_settings": {"n_ctx": n_ctx, "n_predict": max_tokens, "model": model,
                                            "params": {"n_predict": max_tokens}},
            "total_slots": 1, "model_path": model, "model_alias": model, "modalities": {"vision": False, "audio": False},
            "build_info": "infill", "infill": {"fim": True, "streaming_steps": True, "syntax_constraint": True}}
