"""OpenAI-style completions: parsing a request body and shaping answers and errors.

Pure functions and dataclasses, no I/O (like protocol.py), so every rule is testable
without a server. docs/http-api.md is the reference for clients; keep the two in step.

The request is the `/v1/completions` shape editors already send for fill-in-the-middle
(`prompt` = text before the cursor, `suffix` = text after it). Parameters that change what
is asked for but that a diffusion sampler cannot honour (`n`, `best_of`, `echo`,
`logprobs`) are refused rather than silently ignored; those that only tune an
autoregressive sampler (`top_p`, penalties, `logit_bias`, `user`) are accepted and
ignored, so stock clients work. Anything else is refused as unknown, as OpenAI does.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

from engine.language import UnknownLanguage, check_language
from engine.types import SamplerSettings, SettingsError, brief, check_knob
from engine.workspace import WorkspaceContext

from . import protocol as p

MAX_STOP_SEQUENCES = 4
# Ollama and llama.cpp take any number; Continue's autocomplete sends its templates' 5-10.
DIALECT_STOP_SEQUENCES = 32
MAX_STOP_CHARS = 256
MAX_TEMPERATURE = 2.0  # OpenAI's range
MAX_FILENAME_CHARS = 1024
# `infill.workspace_snippets`: code from the client's own workspace (`infill lsp --remote`
# sends at most 24 snippets, 8 KB), retrieval material for the request's drafts.
MAX_WORKSPACE_SNIPPETS = 64
MAX_WORKSPACE_SNIPPET_BYTES = 64 * 1024  # all of a request's snippets together, UTF-8
# Fields that would name a folder or file of the server's disk as the request's workspace.
# The server never reads a path a client names: these are refused, pointing to
# workspace_snippets (the code itself). `workspace_drafts` is a sampler knob, not a path.
WORKSPACE_PATH_FIELDS = frozenset({"root", "root_path", "rootpath", "root_uri", "rooturi", "project_root", "project_dir",
                                   "repository", "repo", "repo_path", "folder", "directory", "workspacefolders"})

# Accepted and ignored: sampling knobs of autoregressive decoding with no counterpart here.
IGNORED_PARAMETERS = frozenset({"top_p", "presence_penalty", "frequency_penalty", "logit_bias", "user"})
KNOWN_PARAMETERS = frozenset({"model", "prompt", "suffix", "max_tokens", "temperature", "stop", "stream",
                              "stream_options", "seed", "n", "best_of", "echo", "logprobs", "infill"}) | IGNORED_PARAMETERS


class Refusal(Exception):
    """A refused request with its HTTP status; each API renders `body()` in its own shape
    (OpenAI's error object here, Ollama's and llama.cpp's in their modules)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def json_object(body: bytes) -> dict[str, Any]:
    """A request body as a JSON object, or ValueError saying what is wrong with it (in words
    every API's 400 can carry)."""
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ValueError(f"the request body is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError("the request body must be a JSON object")
    return data


class ApiError(Exception):
    """A refused request, answered with an OpenAI-style error object and an HTTP status."""

    def __init__(self, status: int, message: str, *, kind: str = "invalid_request_error",
                 code: Optional[str] = None, param: Optional[str] = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.kind = kind
        self.code = code
        self.param = param

    def body(self) -> dict[str, Any]:
        return error_body(self.message, kind=self.kind, code=self.code, param=self.param)


def error_body(message: str, *, kind: str = "invalid_request_error", code: Optional[str] = None,
               param: Optional[str] = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


@dataclass(frozen=True)
class CompletionRequest:
    prompt: str  # text before the cursor
    suffix: str  # text after it
    model: Optional[str] = None
    stream: bool = False
    include_usage: bool = False  # stream_options.include_usage: a last chunk with the usage
    stop: tuple[str, ...] = ()
    language: Optional[str] = None  # infill.language (checked): picks the syntax constraint
    settings: dict[str, Any] = field(default_factory=dict)  # engine sampler knobs (SamplerSettings names)
    cross_file: str = ""  # infill.cross_file: context from other files (the engine budgets it)
    filename: Optional[str] = None  # infill.filename: the language from its extension, if none is named
    # With neither: detected from prompt and suffix (engine/language.py). `"language": null`
    # says "no language" outright: unconstrained, nothing detected (the language server's
    # remote client sends it for a buffer whose language has no grammar).
    detect_language: bool = True
    # Texts the request's drafts are retrieved from (engine/workspace/retrieve.py), by name:
    # infill.workspace_snippets ("snippet-<i>"), llama.cpp's input_extra chunks ("input_extra-<i>").
    workspace_buffers: tuple[tuple[str, str], ...] = ()

    def workspace(self) -> Optional[WorkspaceContext]:
        """The InfillCall's workspace: the texts the client sent, never a path (None: none sent)."""
        # Excerpts: their line numbers are not their files', so no draft names an origin.
        return WorkspaceContext(buffers=dict(self.workspace_buffers), excerpts=True) if self.workspace_buffers else None


def _bad(message: str, param: Optional[str], code: str = "invalid_value") -> ApiError:
    return ApiError(400, message, code=code, param=param)


def parse_completion_request(body: bytes, *, max_request_tokens: int) -> CompletionRequest:
    """Decode and validate a `/v1/completions` body; raises ApiError (400) naming the bad parameter."""
    data = _request_object(body)
    prompt, suffix, model = _texts_and_model(data)
    _refuse_unsupported(data)
    stream, include_usage = _stream_and_usage(data)
    settings, language, cross_file, filename, detect_language, snippets = _infill_extension(data.get("infill"), max_request_tokens)
    _sampling_settings(data, settings, max_request_tokens)
    return CompletionRequest(prompt=prompt, suffix=suffix, model=model, stream=stream, include_usage=include_usage,
                             stop=_parse_stop(data.get("stop")), language=language, settings=settings,
                             cross_file=cross_file, filename=filename, detect_language=detect_language,
                             workspace_buffers=snippet_buffers(snippets))


def _request_object(body: bytes) -> dict[str, Any]:
    """The body's JSON object, with no workspace path and only known parameters in it."""
    try:
        data = json_object(body)
    except ValueError as exc:
        raise ApiError(400, str(exc), code="invalid_json") from None
    refuse_workspace_paths(data, "")
    unknown = sorted(str(key) for key in data if key not in KNOWN_PARAMETERS)
    if unknown:
        raise _bad(f"unrecognized request argument supplied: {brief(unknown[0])}", unknown[0], "unknown_parameter")
    return data


def _texts_and_model(data: dict[str, Any]) -> tuple[str, str, Optional[str]]:
    """(prompt, suffix, model) of a request."""
    prompt = data.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1:
        prompt = prompt[0]  # a batch of one, as some clients send
    if not isinstance(prompt, str):
        raise _bad("'prompt' is required and must be a string (the text before the cursor)", "prompt")
    suffix = data.get("suffix")
    if suffix is None:
        suffix = ""
    if not isinstance(suffix, str):
        raise _bad("'suffix' must be a string (the text after the cursor)", "suffix")
    model = data.get("model")
    if model is not None and not isinstance(model, str):
        raise _bad("'model' must be a string", "model")
    return prompt, suffix, model


def _refuse_unsupported(data: dict[str, Any]) -> None:
    """Parameters accepted only at their neutral value: one middle, no log probabilities."""
    for name, neutral in (("n", 1), ("best_of", 1), ("echo", False), ("logprobs", 0)):
        value = data.get(name)
        if value is not None and not (value == neutral and type(value) is type(neutral)):
            raise _bad(f"'{name}' is not supported (one middle per request, no log probabilities); "
                       f"leave it out or set it to {json.dumps(neutral)}", name, "unsupported_parameter")


def _stream_and_usage(data: dict[str, Any]) -> tuple[bool, bool]:
    """(stream, include_usage) of a request."""
    stream = data.get("stream", False)
    if stream is None:
        stream = False
    if not isinstance(stream, bool):
        raise _bad("'stream' must be true or false", "stream")
    include_usage = False
    options = data.get("stream_options")
    if options is not None:
        if not stream:
            raise _bad("'stream_options' is only allowed with \"stream\": true", "stream_options")
        if not isinstance(options, dict) or not isinstance(options.get("include_usage", False), bool):
            raise _bad("'stream_options' must be {\"include_usage\": true|false}", "stream_options")
        include_usage = bool(options.get("include_usage", False))
    return stream, include_usage


def _sampling_settings(data: dict[str, Any], settings: dict[str, Any], max_request_tokens: int) -> None:
    """Check max_tokens, temperature and seed into `settings` (over the `infill`
    extension's); top_p and the penalties are only checked (accepted and ignored)."""
    max_tokens = data.get("max_tokens")
    if max_tokens is not None:
        try:  # the engine's schema, as every other surface checks it
            settings["max_tokens"] = check_knob(SamplerSettings, "max_tokens", max_tokens, upper={"max_tokens": max_request_tokens})
        except SettingsError as error:
            raise _bad(str(error), "max_tokens") from None
    temperature = data.get("temperature")
    if temperature is not None:
        if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not 0 <= temperature <= MAX_TEMPERATURE:
            raise _bad(f"'temperature' must be a number in [0, {MAX_TEMPERATURE:g}]", "temperature")
        settings["temperature"] = float(temperature)
    seed = data.get("seed")
    if seed is not None:
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**31:
            raise _bad("'seed' must be a non-negative integer below 2**31", "seed")
        settings["seed"] = seed
    for name in ("top_p", "presence_penalty", "frequency_penalty"):
        value = data.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise _bad(f"'{name}' must be a number (it is accepted and ignored)", name)


def token_budget(value: Any, name: str, max_request_tokens: int) -> Optional[int]:
    """A dialect's count of tokens to write (Ollama's `options.num_predict`, llama.cpp's
    `n_predict`): None when absent or negative (the engine's default), else the count,
    checked against the settings schema and this server's cap. A ValueError says what is
    wrong, in the field's own name."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"'{name}' must be an integer (-1: the engine's default)")
    if value < 0:
        return None
    try:
        return check_knob(SamplerSettings, "max_tokens", value, upper={"max_tokens": max_request_tokens})
    except SettingsError as error:
        raise ValueError(f"'{name}': {error}") from None


def _parse_stop(value: Any, limit: int = MAX_STOP_SEQUENCES) -> tuple[str, ...]:
    """`stop`: a string or a list of up to `limit` (OpenAI's 4 here; the Ollama and llama.cpp
    routes allow as many as their clients send, DIALECT_STOP_SEQUENCES)."""
    if value is None:
        return ()
    stops = [value] if isinstance(value, str) else value
    if (not isinstance(stops, list) or len(stops) > limit
            or not all(isinstance(s, str) and 0 < len(s) <= MAX_STOP_CHARS for s in stops)):
        raise _bad(f"'stop' must be a non-empty string or a list of up to {limit} of them "
                   f"(each at most {MAX_STOP_CHARS} characters)", "stop")
    return tuple(stops)


def _infill_extension(value: Any, max_request_tokens: int) -> tuple[dict[str, Any], Optional[str], str, Optional[str], bool, tuple[str, ...]]:
    """The `infill` object: {"language", "filename", "cross_file", "workspace_snippets",
    <sampler knob>: ...}; the knobs are checked with the live protocol's rules (the
    engine's settings schema)."""
    if value is None:
        return {}, None, "", None, True, ()
    if not isinstance(value, dict):
        raise _bad("'infill' must be an object such as {\"language\": \"python\"}", "infill")
    refuse_workspace_paths(value, "infill.")
    knobs = dict(value)
    detect_language = not ("language" in knobs and knobs["language"] is None)
    language = knobs.pop("language", None)
    if language is not None and (not isinstance(language, str) or not p._LANGUAGE.match(language)):
        raise _bad("'infill.language' must be a short identifier such as \"python\"", "infill.language")
    if language is not None:
        language = known_language(language, "infill.language")
    filename = knobs.pop("filename", None)
    if filename is not None and (not isinstance(filename, str) or not 0 < len(filename) <= MAX_FILENAME_CHARS):
        raise _bad(f"'infill.filename' must be a file name or path of 1-{MAX_FILENAME_CHARS} characters "
                   "(its extension names the language)", "infill.filename")
    cross_file = knobs.pop("cross_file", None)
    if cross_file is None:
        cross_file = ""
    if not isinstance(cross_file, str):
        raise _bad("'infill.cross_file' must be a string (context from other files)", "infill.cross_file")
    snippets = workspace_snippets(knobs.pop("workspace_snippets", None))
    try:
        settings = p.parse_settings(knobs, session=None, request_id=None, max_request_tokens=max_request_tokens)
    except p.ProtocolError as err:
        raise _bad(err.message, "infill") from None
    return settings, language, cross_file, filename, detect_language, snippets


def workspace_snippets(value: Any) -> tuple[str, ...]:
    """`infill.workspace_snippets`: a list of at most MAX_WORKSPACE_SNIPPETS strings, at most
    MAX_WORKSPACE_SNIPPET_BYTES together (UTF-8); ApiError 400 saying which rule broke."""
    if value is None:
        return ()
    param = "infill.workspace_snippets"
    if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
        raise _bad(f"'{param}' must be a list of strings (code from the client's workspace, each a few lines)", param)
    if len(value) > MAX_WORKSPACE_SNIPPETS:
        raise _bad(f"'{param}' holds {len(value)} snippets; at most {MAX_WORKSPACE_SNIPPETS} are accepted", param,
                   "too_many_snippets")
    size = sum(len(s.encode("utf-8", "surrogatepass")) for s in value)
    if size > MAX_WORKSPACE_SNIPPET_BYTES:
        raise _bad(f"'{param}' holds {size} bytes; at most {MAX_WORKSPACE_SNIPPET_BYTES} bytes of snippets are "
                   "accepted in all", param, "snippets_too_large")
    return tuple(s for s in value if s.strip())


def snippet_buffers(snippets: Sequence[str], name: str = "snippet") -> tuple[tuple[str, str], ...]:
    """Snippets as named texts for a WorkspaceContext ("snippet-0", "snippet-1", ...)."""
    return tuple((f"{name}-{i}", text) for i, text in enumerate(snippets))


def refuse_workspace_paths(data: dict[str, Any], where: str) -> None:
    """ApiError 400 for a field that names a workspace on the server's disk (`workspace`,
    `workspace_root`, `root_path`, ...): the server never reads a path a client names."""
    for key in data:
        if not isinstance(key, str):
            continue
        name = key.lower().replace("-", "_")
        if name in ("workspace_snippets", "workspace_drafts"):
            continue
        if name.startswith("workspace") or name in WORKSPACE_PATH_FIELDS:
            raise _bad(f"'{where}{key}' is refused: this server never reads files or folders a request names (it "
                       "may run on another machine, and a path would let a client read the server's disk). Send the "
                       "code itself as 'infill.workspace_snippets': [\"...\", ...], as `infill lsp --remote` does",
                       f"{where}{key}", "workspace_path_refused")


def known_language(name: str, param: str) -> str:
    """The registry name of a language the request names; 400 listing the known ones if none."""
    try:
        return check_language(name)
    except UnknownLanguage as exc:
        raise _bad(str(exc), param, "unknown_language") from None


def split_model(model: Optional[str], served: str) -> tuple[Optional[str], Optional[str]]:
    """`model` as (the model's name, the language after a colon): clients that cannot send
    `infill.language` (editors' FIM settings take a model name and nothing else) may
    name the language there, `infill-default:python`. The served name itself is never
    split, even if it holds a colon; an unknown language is a 400 listing the known ones."""
    if not model or model == served or ":" not in model:
        return model, None
    name, _, language = model.rpartition(":")
    if name != served:
        return model, None  # not ours either way: the caller answers 404
    return name, known_language(language, "model")


# -- answers -----------------------------------------------------------------------------

FINISH_REASONS = {"max_tokens": "length"}  # every other engine stop reason ends the middle: "stop"


def apply_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """`text` cut before the earliest stop sequence; whether one was found."""
    cut = min((index for index in (text.find(s) for s in stop) if index >= 0), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)


def finish_reason(stop_reason: str, stopped_by_sequence: bool) -> str:
    return "stop" if stopped_by_sequence else FINISH_REASONS.get(stop_reason, "stop")


def canvas_text(canvas: Sequence[Optional[str]]) -> str:
    """The text a canvas shows so far: its committed tokens in order, masks left out."""
    return "".join(piece for piece in canvas if piece)


def completion_body(*, completion_id: str, created: int, model: str, text: str, finish: str,
                    usage: dict[str, int], infill: dict[str, Any]) -> dict[str, Any]:
    return {"id": completion_id, "object": "text_completion", "created": created, "model": model,
            "choices": [{"index": 0, "text": text, "finish_reason": finish, "logprobs": None}],
            "usage": usage, "infill": infill}


def chunk_body(*, completion_id: str, created: int, model: str, text: str, finish: Optional[str],
               infill: dict[str, Any]) -> dict[str, Any]:
    """One streamed chunk: `choices[0].text` is a delta (OpenAI's rule), `infill` the step's snapshot."""
    return {"id": completion_id, "object": "text_completion", "created": created, "model": model,
            "choices": [{"index": 0, "text": text, "finish_reason": finish, "logprobs": None}], "infill": infill}


def usage_body(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens}


def models_body(model: str, created: int) -> dict[str, Any]:
    return {"object": "list", "data": [{"id": model, "object": "model", "created": created, "owned_by": "infill"}]}


def sse_event(payload: Any) -> bytes:
    """One server-sent event carrying a JSON payload (or the literal [DONE])."""
    data = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return f"data: {data}\n\n".encode()
