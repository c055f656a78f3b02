"""A remote engine for the language server: completions from an OpenAI-style HTTP server.

    infill lsp --remote http://gpu-box:8765 [--remote-token-file FILE] [--remote-model NAME]

`RemoteEngineHost` has the surface the language server uses from `EngineHost` (load,
supersede, cancel, run, model_name, close), so the completion service keeps its
typed-through cache, supersede and debounce; only the model call becomes
`POST /v1/completions` with `prompt` (text before the cursor) and `suffix` (text after
it). The server is infill's own `infill serve` (recognised by `owned_by: "infill"` in
`GET /v1/models`, and then also sent the language, the cross-file context and the
sampler knobs under `infill`) or any OpenAI-compatible server that accepts `suffix` (the
cross-file comment block then goes before the prompt).

The remote host cannot read this machine's disk, so the workspace travels with each
request to `infill serve`: the snippets around the places the local index and the open
documents propose drafts from (`workspace_snippets`: a few lines before and after each,
at most MAX_SNIPPETS, MAX_SNIPPET_BYTES in all) under `infill.workspace_snippets`, where
the server's engine retrieves its drafts from them. Lines that look like a secret
(engine/workspace/files.py holds_secret: private keys, known token shapes) are dropped
from the snippets and from the cross-file context before anything is sent. `infill complete
--server` sends the same snippets of its workspace (`snippets_for`, `complete_once`).

A superseded or cancelled request closes its HTTP connection, which `infill serve` takes
as "stop": the engine drops the request at its next pass. Server down, timeouts and a
refused token become `RemoteUnavailable` with one sentence for the user. The token comes
from a file or the INFILL_TOKEN environment variable, never from the command line (where
`ps` shows it), and is never logged.
"""
from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Hashable, Mapping, Optional, Sequence, Union
from urllib.parse import urlsplit

import httpx

from engine.types import InfillResult
from engine.context_window import prefix_tail, suffix_head
from engine.worker import InfillCall, NextEditCall, Outcome
from engine.workspace.files import holds_secret
from engine.workspace.retrieve import AROUND, Draft, WorkspaceContext, buffer_lines_around

from .engine_host import EngineUnavailable
from .live.protocol import CLIENT_SETTINGS

log = logging.getLogger(__name__)

TOKEN_ENV = "INFILL_TOKEN"
CANCEL_POLL_S = 0.01  # how often a running request looks at its cancel Event
# What is sent around the cursor, in tokens' worth of characters: more than any model's
# window reads (the server's engine cuts it further), far less than whole large files.
SENT_PREFIX_TOKENS = 8192
SENT_SUFFIX_TOKENS = 4096
# The workspace snippets sent with a request to `infill serve` (its cap is larger).
MAX_SNIPPETS = 24
MAX_SNIPPET_BYTES = 8 * 1024  # all of a request's snippets together, UTF-8


class RemoteUnavailable(EngineUnavailable):
    """The remote server cannot serve completions now (down, slow, refused the token).
    `notify`: worth a popup (once), rather than a line in the log."""

    notify = True


class RemoteRefused(EngineUnavailable):
    """The server refused this one request (e.g. the input is too large): log it, carry on."""

    notify = False


@dataclass(frozen=True)
class RemoteConfig:
    url: str  # the server's base URL, http(s)://host:port (a trailing /v1 is accepted)
    token: Optional[str] = None
    model: Optional[str] = None  # the model name to ask for; default: the first one GET /v1/models lists
    timeout_s: float = 10.0  # one completion, connection included

    @property
    def api_base(self) -> str:
        base = self.url.rstrip("/")
        return base if base.endswith("/v1") else base + "/v1"


def check_url(url: str) -> str:
    """The URL, or ValueError with what is wrong with it."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"--remote must be an http:// or https:// URL such as http://127.0.0.1:8765, got {url!r}")
    return url


def read_token(token_file: Optional[str], environ: Mapping[str, str] = os.environ) -> Optional[str]:
    """The token from `token_file` (first line), else from $INFILL_TOKEN, else None.
    Raises ValueError naming the file (never its content) when it cannot be read."""
    if token_file:
        path = Path(token_file).expanduser()
        try:
            token = path.read_text(encoding="utf-8").strip().splitlines()[0].strip() if path.stat().st_size else ""
        except (OSError, UnicodeDecodeError, IndexError) as error:
            raise ValueError(f"cannot read the token file {path}: {getattr(error, 'strerror', None) or error}") from None
        if not token:
            raise ValueError(f"the token file {path} is empty")
        return token
    token = environ.get(TOKEN_ENV, "").strip()
    return token or None


class RemoteEngineHost:
    """An HTTP client of `infill serve` that the language server runs its completions on: an
    engine.protocols.ModelHost, like the local EngineHost."""

    def __init__(self, config: RemoteConfig) -> None:
        self.config = config
        self._client: Optional[httpx.AsyncClient] = None
        self._model: Optional[str] = config.model
        self._infill_server = False  # infill's own server: also send language and knobs
        self._probed = False
        # Set once the first load() (after the client's settings arrived) has run, as with
        # EngineHost: a completion waits for it, so it never runs with default settings.
        self._first_load: Optional[asyncio.Future[None]] = None
        self._tokens: dict[Hashable, threading.Event] = {}  # the cancel token of each key's newest request

    # -- what the language server reads -------------------------------------------------------

    @property
    def model_name(self) -> Optional[str]:
        """"<model> @ <url>" once the server has said which model it serves (like a local
        engine's name, None before it is ready)."""
        return f"{self._model} @ {self.config.url}" if self._probed else None

    @property
    def requested_dir(self) -> Optional[str]:
        return None

    @property
    def loaded(self) -> bool:
        return self._probed

    async def load(self, model_dir: Optional[str]) -> str:
        """Ask the server which model it serves (GET /v1/models). Raises RemoteUnavailable."""
        if self._first_load is None:
            self._first_load = asyncio.get_running_loop().create_future()
        try:
            await self._probe()
        finally:
            if not self._first_load.done():
                self._first_load.set_result(None)
        return str(self.model_name)

    def model_dir_notice(self) -> None:
        """No local model directory to watch (EngineHost has one)."""
        return None

    def expect_load(self) -> None:
        """Nothing loads here: the team server has the model."""

    async def wait_ready(self) -> Any:
        raise EngineUnavailable("next edits need a local model; with --remote only completions are served")

    def supersede(self, key: Hashable) -> threading.Event:
        """The cancel token of a new request for `key`; the previous one for `key` stops
        (its HTTP request is aborted)."""
        fresh = threading.Event()
        older = self._tokens.get(key)
        self._tokens[key] = fresh
        if older is not None:
            older.set()
        return fresh

    def cancel(self, key: Hashable) -> None:
        token = self._tokens.pop(key, None)
        if token is not None:
            token.set()

    def forget(self, key: Hashable) -> None:
        """Nothing cached here for `key` (the remote server forgets each request's context)."""

    def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            try:
                asyncio.get_running_loop().create_task(client.aclose())
            except RuntimeError:
                pass  # no loop left: the process is exiting and the sockets go with it

    # -- completions ---------------------------------------------------------------------------

    async def run(self, key: Hashable, call: Union[InfillCall, NextEditCall], cancel: threading.Event,
                  on_outcome: Optional[Callable[[Outcome], None]] = None) -> Outcome:
        """POST /v1/completions for an InfillCall. A cancel while it runs aborts the HTTP
        request (the server stops its engine) and ends "cancelled". Raises
        RemoteUnavailable / RemoteRefused when the server cannot answer."""
        if isinstance(call, NextEditCall):
            raise EngineUnavailable("next edits need a local model; with --remote only completions are served")
        if self._first_load is None:
            raise EngineUnavailable("the model has not started loading (the client never sent 'initialized')")
        await asyncio.shield(self._first_load)
        if cancel.is_set():
            return Outcome(cancelled=True)
        if not self._probed:  # the server was down at start; it may be up now
            try:
                await self._probe()
            except RemoteUnavailable:
                if self._model is None:
                    raise
        started = time.perf_counter()
        body = self._body(call)
        drafts: list[Draft] = []
        if self._infill_server and call.workspace is not None:
            drafts, snippets = await asyncio.to_thread(drafts_and_snippets, call)  # SQLite lookups: off the event loop
            if snippets:
                body.setdefault("infill", {})["workspace_snippets"] = snippets
            if cancel.is_set():
                return Outcome(cancelled=True)
        request = asyncio.ensure_future(self._post(body))
        try:
            while not request.done():
                await asyncio.wait({request}, timeout=CANCEL_POLL_S)
                if cancel.is_set() and not request.done():
                    request.cancel()  # closes the connection: the server cancels the job
                    try:
                        await request
                    except (asyncio.CancelledError, Exception):
                        pass
                    result = InfillResult("", 0, 0, (time.perf_counter() - started) * 1000, "cancelled")
                    return _reported(Outcome(result=result, started=True, cancelled=True), on_outcome)
        except asyncio.CancelledError:
            request.cancel()
            raise
        result = name_origin(_result(request.result(), (time.perf_counter() - started) * 1000), drafts)
        return _reported(Outcome(result=result, started=True, cancelled=cancel.is_set()), on_outcome)

    def _body(self, call: InfillCall) -> dict:
        prefix = prefix_tail(call.prefix, SENT_PREFIX_TOKENS)
        suffix = suffix_head(call.suffix, SENT_SUFFIX_TOKENS)
        body: dict[str, Any] = {"prompt": prefix, "suffix": suffix, "stream": False}
        if self._model:
            body["model"] = self._model
        for name in ("max_tokens", "temperature"):
            if call.settings.get(name) is not None:
                body[name] = call.settings[name]
        cross_file = redacted(call.cross_file)
        if not self._infill_server:
            body["prompt"] = cross_file + prefix  # comment lines: harmless to any code model
            return body
        extension: dict[str, Any] = {k: v for k, v in call.settings.items()
                                     if k in CLIENT_SETTINGS and k not in ("max_tokens", "temperature")}
        # A buffer whose language has no grammar runs unconstrained, as in-process; null
        # says so (without a language the server would detect one: engine/language.py).
        extension["language"] = call.language or None
        if cross_file:
            extension["cross_file"] = cross_file
        if extension:
            body["infill"] = extension
        return body

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            headers = {"Authorization": f"Bearer {self.config.token}"} if self.config.token else {}
            timeout = httpx.Timeout(self.config.timeout_s, connect=min(3.0, self.config.timeout_s))
            self._client = httpx.AsyncClient(base_url=self.config.api_base, headers=headers, timeout=timeout,
                                             trust_env=False)  # loopback and LAN servers: no proxies from the env
        return self._client

    async def _probe(self) -> None:
        data = await self._request("GET", "/models")
        models = data.get("data") if isinstance(data, dict) else None
        if not isinstance(models, list) or not models or not isinstance(models[0], dict):
            raise RemoteUnavailable(f"{self.config.url} answered GET /v1/models without any model")
        served = [m for m in models if isinstance(m, dict) and isinstance(m.get("id"), str)]
        chosen = next((m for m in served if m["id"] == self._model), served[0] if served else None)
        if chosen is None:
            raise RemoteUnavailable(f"{self.config.url} answered GET /v1/models without any model")
        if self.config.model and chosen["id"] != self.config.model:
            names = ", ".join(m["id"] for m in served)
            raise RemoteUnavailable(f"{self.config.url} does not serve the model {self.config.model!r} (it serves {names})")
        self._model = chosen["id"]
        self._infill_server = chosen.get("owned_by") == "infill"
        self._probed = True

    async def _post(self, body: dict) -> Any:
        return await self._request("POST", "/completions", body)

    async def _request(self, method: str, path: str, body: Optional[dict] = None) -> Any:
        url = self.config.url
        try:
            response = await self._http().request(method, path, json=body)
        except httpx.ConnectTimeout:
            raise RemoteUnavailable(f"cannot reach the server at {url}: connecting timed out") from None
        except httpx.TimeoutException:
            raise RemoteUnavailable(f"the server at {url} did not answer within {self.config.timeout_s:g} s") from None
        except httpx.ConnectError as error:
            reason = _reason(error)
            raise RemoteUnavailable(f"cannot reach the server at {url} ({reason}); is `infill serve` running there?") from None
        except httpx.HTTPError as error:
            raise RemoteUnavailable(f"the connection to {url} failed: {_reason(error)}") from None
        if response.status_code in (401, 403):
            where = "INFILL_TOKEN or the token file" if response.status_code == 401 else "the server's --allow-origin"
            raise RemoteUnavailable(f"the server at {url} refused us (HTTP {response.status_code}: "
                                    f"{_server_message(response)}); check {where}")
        if response.status_code in (404, 405) and path == "/models" and body is None:
            raise RemoteUnavailable(f"{url} has no OpenAI-style API (GET /v1/models: HTTP {response.status_code})")
        if response.status_code == 429 or response.status_code >= 500:
            raise RemoteUnavailable(f"the server at {url} is failing or busy (HTTP {response.status_code}: "
                                    f"{_server_message(response)})")
        if response.status_code >= 400:
            raise RemoteRefused(f"the server refused the request (HTTP {response.status_code}: {_server_message(response)})")
        try:
            return response.json()
        except ValueError:
            raise RemoteUnavailable(f"the server at {url} answered with something that is not JSON") from None


def redacted(text: str) -> str:
    """`text` without the lines that look like a secret (holds_secret)."""
    if not holds_secret(text):
        return text
    return "".join(line for line in text.splitlines(keepends=True) if not holds_secret(line))


def workspace_snippets(call: InfillCall) -> list[str]:
    """The snippets of an LSP completion's workspace (`snippets_for`)."""
    return drafts_and_snippets(call)[1]


def drafts_and_snippets(call: InfillCall) -> tuple[list[Draft], list[str]]:
    """An LSP completion's local drafts (which name their places: `name_origin`) and the
    snippets around those places (`snippets_for`)."""
    if call.workspace is None:
        return [], []
    drafts = call.workspace.drafts(call.prefix, call.suffix, call.filename)
    return drafts, snippets_for(call.workspace, call.prefix, call.suffix, call.filename, drafts)


def snippets_for(workspace: Optional[WorkspaceContext], prefix: str, suffix: str, filename: Optional[str],
                 drafts: Optional[Sequence[Draft]] = None) -> list[str]:
    """The text around each place the request's drafts come from (the index of the
    document's folder, the other open documents): AROUND non-blank lines before the place,
    its line, AROUND after, as indented there; secret-looking lines dropped; in the drafts'
    order (strongest evidence first), each once, at most MAX_SNIPPETS and MAX_SNIPPET_BYTES
    in all. The request's own document is left out: its text is the prompt and suffix.
    `infill lsp --remote` and `infill complete --server` send them alike. `drafts`: the
    workspace's drafts for this request, when the caller has them already."""
    if workspace is None:
        return []
    if drafts is None:
        drafts = workspace.drafts(prefix, suffix, filename)
    # Buffer n >= 1 of a draft's places is the n-th other text, as drafts_for numbers them.
    others = [text for name, text in workspace.buffers.items() if name != filename]
    out: list[str] = []
    used = 0
    for draft in drafts:
        for kind, where, line in draft.places:  # type: ignore[misc]
            if kind == "index":
                if workspace.index is None:
                    continue
                lines = workspace.index.lines_around(int(where), line, AROUND)
            elif where == 0 or not 0 < int(where) <= len(others):
                continue
            else:
                before, at, after = buffer_lines_around(others[int(where) - 1], line, AROUND)
                lines = [raw.rstrip("\r") for raw in before + [at] + after]
            snippet = "\n".join(text for text in lines if not holds_secret(text))
            size = len(snippet.encode("utf-8", "surrogatepass"))
            if not snippet.strip() or snippet in out or used + size > MAX_SNIPPET_BYTES:
                continue
            out.append(snippet)
            used += size
            if len(out) >= MAX_SNIPPETS:
                return out
    return out


def name_origin(result: InfillResult, drafts: Sequence[Draft]) -> InfillResult:
    """The server answered with a line of the workspace (`source` "workspace") but cannot
    say where it stands: it saw snippets. Here the drafts' places are known: the local
    draft with the same text names it (`draft_origin`, as a local run would)."""
    if result.draft == "workspace" and not result.draft_origin:
        answer = result.middle.strip()
        result.draft_origin = next((d.origin for d in drafts if d.origin and d.text.strip() == answer), "")
    return result


def _result(data: Any, ms: float) -> InfillResult:
    """An OpenAI completion answer as the engine's InfillResult (what the service reads)."""
    try:
        choice = data["choices"][0]
        text = choice["text"]
        if not isinstance(text, str):
            raise TypeError("text is not a string")
    except (KeyError, IndexError, TypeError) as error:
        raise RemoteUnavailable(f"the server's answer is not an OpenAI completion ({error})") from None
    figures = data.get("infill") if isinstance(data.get("infill"), dict) else {}
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    forwards = figures.get("forwards") if isinstance(figures.get("forwards"), int) else 0
    tokens = usage.get("completion_tokens") if isinstance(usage.get("completion_tokens"), int) else 0
    stop_reason = {"length": "max_tokens"}.get(str(choice.get("finish_reason")), "end_of_middle")
    result = InfillResult(text, tokens, forwards, ms, stop_reason)
    if figures.get("source") in ("workspace", "edited"):  # `infill serve`'s: a line of the snippets, kept as is or edited
        result.draft = figures["source"]
        result.draft_origin = figures["origin"] if isinstance(figures.get("origin"), str) else ""
    return result


def _reported(outcome: Outcome, on_outcome: Optional[Callable[[Outcome], None]]) -> Outcome:
    if on_outcome is not None:
        on_outcome(outcome)
    return outcome


def _server_message(response: httpx.Response) -> str:
    try:
        message = response.json()["error"]["message"]
    except Exception:
        message = response.reason_phrase or "no reason given"
    return str(message)[:200]


def _reason(error: BaseException) -> str:
    """The most telling cause in an httpx error's chain ("connection refused", not "All
    connection attempts failed")."""
    seen: Optional[BaseException] = error
    while seen is not None:
        if isinstance(seen, ConnectionRefusedError) or "Connection refused" in str(seen):
            return "connection refused"
        seen = seen.__cause__ or seen.__context__
    text = str(error) or type(error).__name__
    return text.splitlines()[0][:120]


SERVER_ENV = "INFILL_SERVER"  # `infill complete` sends its request to this running `infill serve`


def complete_once(config: RemoteConfig, prefix: str, suffix: str, *, language: Optional[str] = None,
                  filename: Optional[str] = None, settings: Optional[Mapping[str, Any]] = None,
                  snippets: Sequence[str] = ()) -> tuple[InfillResult, str]:
    """One completion from a running server, for `infill complete --server` (issue 35, item 8:
    a CLI call that loads the model spent 2-7 s of its wall time on the load, most of it
    `import torch`, and ~0.3-0.5 s on the completion). The same client as `lsp --remote`
    (GET /v1/models, then POST /v1/completions; RemoteUnavailable with one sentence when the
    server cannot answer); no torch is imported. With no `language` the server picks it as
    a local run does: from `filename`'s extension, else detected. `snippets`: the local
    workspace's text around the drafts' places (`snippets_for`), sent as
    `infill.workspace_snippets` so the server's drafts are the ones a local run verifies.
    Returns (the result with the server's figures, the served model's name)."""
    import asyncio

    async def ask() -> tuple[InfillResult, str]:
        host = RemoteEngineHost(config)
        try:
            await host._probe()
            if not host._infill_server:
                raise RemoteUnavailable(f"{config.url} is not an `infill serve` (GET /v1/models does not say owned_by infill)")
            knobs = {k: v for k, v in (settings or {}).items() if k in CLIENT_SETTINGS and v is not None}
            extension: dict[str, Any] = {k: v for k, v in knobs.items() if k not in ("max_tokens", "temperature")}
            if language:
                extension["language"] = language
            if filename:
                extension["filename"] = Path(filename).name  # the extension is what is read; the path stays here
            if snippets:
                extension["workspace_snippets"] = list(snippets)
            body: dict[str, Any] = {"prompt": prefix_tail(prefix, SENT_PREFIX_TOKENS), "suffix": suffix_head(suffix, SENT_SUFFIX_TOKENS),
                                    "stream": False, "model": host._model, **{k: v for k, v in knobs.items() if k in ("max_tokens", "temperature")}}
            if extension:
                body["infill"] = extension
            started = time.perf_counter()
            data = await host._post(body)
            result = _result(data, (time.perf_counter() - started) * 1000)
            figures = data.get("infill") if isinstance(data.get("infill"), dict) else {}
            for name in ("stop_reason", "language", "language_source"):
                if isinstance(figures.get(name), str):
                    setattr(result, name, figures[name])
            for name in ("tokens", "forwards"):
                if isinstance(figures.get(name), int):
                    setattr(result, name, figures[name])
            return result, str(host._model)
        finally:
            if host._client is not None:
                await host._client.aclose()

    return asyncio.run(ask())
