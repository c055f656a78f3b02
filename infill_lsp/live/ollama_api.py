"""Ollama's `/api/generate` (plus `/api/tags`, `/api/version`): parsing a body and shaping
answers and errors. Pure functions, no I/O, like openai_api.py; docs/http-api.md
("Ollama's API") is the reference for clients, docs/clients.md the editor settings.

What fill-in-the-middle clients send (Continue's Ollama provider, minuet-ai.nvim, the
`ollama` Python client): `model`, `prompt` (text before the cursor), `suffix` (after it),
`stream` (Ollama's default: true), `raw`, `keep_alive`, `options` {`num_predict`,
`temperature`, `stop`, `seed`, ...}. The request becomes the same `CompletionRequest` the
OpenAI route runs, so language resolution, sampler knobs (`infill` extension field) and
the engine call are the one path of `/v1/completions`.

Rules, as Ollama's own server applies them where it has one:
- unknown top-level fields and unknown `options` are ignored (Ollama decodes into a struct
  and drops what it does not know; clients send model-runner options such as `num_ctx`
  that have no meaning here);
- what would change the answer and cannot be honoured is refused with 400: a `system`
  prompt, a `template`, a `context` from an earlier chat turn, `images`, a `format`
  (JSON mode), `think`, `logprobs`. `raw` is accepted either way: infill never applies a
  template, every request is raw;
- `keep_alive` (a number of seconds or a duration such as "5m") is accepted and ignored:
  the model stays loaded for the server's life;
- `options.num_predict` is the longest middle (-1 and -2, "no limit" in Ollama, mean the
  engine's default); `options.stop` cuts the answer before the first stop string.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Optional, Sequence


from . import openai_api as api

OLLAMA_VERSION = "0.11.0"  # the API generation whose shapes this follows (clients check /api/version)

# Refused when set to anything but their "off" value: they ask for what a fill-in-the-middle
# diffusion model does not do, and ignoring them would answer another question.
REFUSED_FIELDS = {
    "system": "a system prompt", "template": "a prompt template", "context": "a chat context from an earlier answer",
    "images": "images", "format": "structured output (format)", "think": "thinking", "logprobs": "log probabilities",
    "top_logprobs": "log probabilities",
}
DONE_REASONS = {"max_tokens": "length"}  # every other engine stop reason: "stop"


class OllamaError(api.Refusal):
    """A refused request: Ollama's error shape `{"error": "message"}` with an HTTP status."""

    def body(self) -> dict[str, Any]:
        return {"error": self.message}


def from_api_error(error: api.ApiError) -> OllamaError:
    """An error of the shared request rules (token, Origin, size, busy, engine) in Ollama's shape."""
    return OllamaError(error.status, error.message)


@dataclass(frozen=True)
class GenerateRequest:
    completion: api.CompletionRequest  # what runs: the /v1/completions request it amounts to
    load_only: bool = False  # no prompt and no suffix: Ollama answers "loaded" (done_reason "load") without running


def _bad(message: str) -> OllamaError:
    return OllamaError(400, message)


def _is_off(value: Any) -> bool:
    return value is None or value is False or value == "" or value == [] or value == {} or value == 0


def parse_generate_request(body: bytes, *, max_request_tokens: int) -> GenerateRequest:
    """Decode and validate an `/api/generate` body; raises OllamaError (400) saying what is wrong."""
    try:
        data = api.json_object(body)
    except ValueError as exc:
        raise _bad(str(exc)) from None
    try:
        api.refuse_workspace_paths(data, "")  # the server never reads a path a client names
    except api.ApiError as error:
        raise _bad(error.message) from None
    prompt, suffix, model = data.get("prompt"), data.get("suffix"), data.get("model")
    for name, value in (("prompt", prompt), ("suffix", suffix), ("model", model)):
        if value is not None and not isinstance(value, str):
            raise _bad(f"'{name}' must be a string")
    for name, what in REFUSED_FIELDS.items():
        if not _is_off(data.get(name)):
            raise _bad(f"'{name}' is not supported: infill fills the middle between prompt and suffix and takes "
                       f"no {what}; leave it out")
    stream = data.get("stream", True)
    if stream is None:
        stream = True  # Ollama streams unless told not to
    if not isinstance(stream, bool):
        raise _bad("'stream' must be true or false")
    for name in ("raw", "truncate", "shift"):
        if data.get(name) is not None and not isinstance(data.get(name), bool):
            raise _bad(f"'{name}' must be true or false")
    keep_alive = data.get("keep_alive")
    if keep_alive is not None and (isinstance(keep_alive, bool) or not isinstance(keep_alive, (int, float, str))):
        raise _bad("'keep_alive' must be a number of seconds or a duration such as \"5m\" (it is accepted and "
                   "ignored: the model stays loaded)")

    try:
        settings, language, cross_file, filename, detect, snippets = api._infill_extension(data.get("infill"), max_request_tokens)
    except api.ApiError as error:
        raise _bad(error.message) from None
    stop: tuple[str, ...] = ()
    options = data.get("options")
    if options is not None:
        if not isinstance(options, dict):
            raise _bad("'options' must be an object such as {\"num_predict\": 64}")
        settings.update(_options(options, max_request_tokens))
        try:
            stop = api._parse_stop(options.get("stop"), api.DIALECT_STOP_SEQUENCES)
        except api.ApiError as error:
            raise _bad(error.message.replace("'stop'", "'options.stop'")) from None
    prompt, suffix = prompt or "", suffix or ""
    completion = api.CompletionRequest(prompt=prompt, suffix=suffix, model=model or None, stream=stream, stop=stop,
                                       language=language, settings=settings, cross_file=cross_file,
                                       filename=filename, detect_language=detect,
                                       workspace_buffers=api.snippet_buffers(snippets))
    return GenerateRequest(completion, load_only=not prompt and not suffix)


def _options(options: dict[str, Any], max_request_tokens: int) -> dict[str, Any]:
    """The `options` that mean something here, as engine settings; the others are ignored."""
    settings: dict[str, Any] = {}
    try:
        num_predict = api.token_budget(options.get("num_predict"), "options.num_predict", max_request_tokens)
    except ValueError as error:
        raise _bad(str(error)) from None
    if num_predict is not None:
        settings["max_tokens"] = num_predict
    temperature = options.get("temperature")
    if temperature is not None:
        if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not 0 <= temperature <= api.MAX_TEMPERATURE:
            raise _bad(f"'options.temperature' must be a number in [0, {api.MAX_TEMPERATURE:g}]")
        settings["temperature"] = float(temperature)
    seed = options.get("seed")
    if seed is not None:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise _bad("'options.seed' must be an integer")
        if 0 <= seed < 2**31:  # Ollama's -1 is "random": the engine's own seed
            settings["seed"] = seed
    return settings


def split_model(model: Optional[str], served: str) -> tuple[Optional[str], Optional[str]]:
    """`model` as (name, language): `infill-default`, `infill-default:latest` (Ollama's
    default tag) and `infill-default:python` name the served model; OllamaError 400 for
    an unknown language after the colon."""
    if model and model == f"{served}:latest":
        return served, None
    try:
        return api.split_model(model, served)
    except api.ApiError as error:
        raise _bad(error.message) from None


def not_found(model: str) -> OllamaError:
    return OllamaError(404, f"model '{model}' not found; GET /api/tags lists the served one")


# -- answers -----------------------------------------------------------------------------------

def timestamp(now: Optional[datetime] = None) -> str:
    """Ollama's `created_at`: RFC 3339 in UTC."""
    return (now or datetime.now(timezone.utc)).isoformat().replace("+00:00", "Z")


def done_reason(stop_reason: str, stopped_by_sequence: bool) -> str:
    return "stop" if stopped_by_sequence else DONE_REASONS.get(stop_reason, "stop")


def part(model: str, created_at: str, response: str, **fields: Any) -> dict[str, Any]:
    """One answer object (a whole answer, or one line of a stream): Ollama's fields first."""
    return {"model": model, "created_at": created_at, "response": response, "done": False, **fields}


def final_fields(*, reason: str, prompt_tokens: int, tokens: int, engine_ms: float, elapsed_ms: float,
                 infill: dict[str, Any]) -> dict[str, Any]:
    """The closing fields: Ollama's counters (durations in nanoseconds; the engine's time is
    all `eval_duration`, a diffusion model has no separate prompt pass to time) and infill's
    figures under `infill`."""
    return {"done": True, "done_reason": reason, "total_duration": int(elapsed_ms * 1e6), "load_duration": 0,
            "prompt_eval_count": prompt_tokens, "prompt_eval_duration": 0, "eval_count": tokens,
            "eval_duration": int(engine_ms * 1e6), "infill": infill}


def ndjson(payload: dict[str, Any]) -> bytes:
    return (json.dumps(payload, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


DETAILS = {"parent_model": "", "format": "safetensors", "family": "infill", "families": ["infill"],
           "parameter_size": "", "quantization_level": ""}
# What /api/show says a model's prompt template is. Clients read it to decide whether the
# model fills in the middle: Continue's Ollama provider sends `suffix` only to a model
# whose template mentions `.Suffix`. infill applies no template (every request is raw).
TEMPLATE = "{{ .Prompt }}{{ .Suffix }}"


def tags_body(model: str, languages: Sequence[str], modified_at: str) -> dict[str, Any]:
    """`/api/tags`: the served model, and one name per language (`infill-default:python`) so
    that clients with a model picker can name the language the way they name a model."""
    names = [model] + [f"{model}:{language}" for language in languages]
    return {"models": [{"name": name, "model": name, "modified_at": modified_at, "size": 0, "digest": "",
                        "details": DETAILS} for name in names]}


def parse_show_request(body: bytes) -> Optional[str]:
    """`/api/show`'s model name (`model`, or `name` as older clients send it); OllamaError 400."""
    try:
        data = api.json_object(body)
    except ValueError as exc:
        raise _bad(str(exc)) from None
    model = data.get("model") or data.get("name")
    if model is not None and not isinstance(model, str):
        raise _bad("'model' must be a string")
    return model


def show_body(context_tokens: int, modified_at: str) -> dict[str, Any]:
    """`/api/show`: a fill-in-the-middle model (capability "insert", a template with
    `.Suffix`), its context size as the `num_ctx` parameter (one `name value` per line)."""
    return {"modelfile": "", "parameters": f"num_ctx {context_tokens}", "template": TEMPLATE, "details": DETAILS,
            "model_info": {"general.architecture": "infill", "infill.context_length": context_tokens},
            "capabilities": ["completion", "insert"], "modified_at": modified_at}


def version_body() -> dict[str, str]:
    return {"version": OLLAMA_VERSION}
