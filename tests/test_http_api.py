"""The OpenAI-style HTTP API of `infill serve` (POST /v1/completions, GET /v1/models,
GET /health) over real loopback HTTP, against the real engine on a tiny random model:
the answer's shape, streaming, the token and Origin rules, error objects, and that the
server keeps serving after every bad request."""
from __future__ import annotations

import json
import socket
import time
from typing import Any, Iterator

import httpx
import pytest

from infill_lsp.live import openai_api as api
from infill_lsp.live.limits import Limits
from infill_lsp.live.server import LiveServer
from lab.fixtures.live_server import bearer_client, http_test_server

TOKEN = "http-api-test-token"
TIMEOUT = 60.0
LIMITS = Limits(max_message_bytes=32 * 1024)
# A random model rarely ends early, so this needs well over a hundred passes: far more than
# the hang-up test lets it run (tiny_faults.hold), so it is cancelled mid-way.
LONG = {"max_tokens": 256, "infill": {"block_size": 8, "constrained": False}}


@pytest.fixture(scope="module")
def live(tiny_engine: Any) -> Iterator[LiveServer]:
    with http_test_server(tiny_engine, TOKEN, LIMITS) as server:
        yield server


@pytest.fixture()
def client(live: LiveServer) -> Iterator[httpx.Client]:
    with bearer_client(live, TOKEN, TIMEOUT) as c:
        yield c


def body(**fields: Any) -> dict[str, Any]:
    return {"prompt": "def add(a, b):\n    return ", "suffix": "\n\nprint(add(1, 2))\n", "max_tokens": 6,
            "infill": {"language": "python", "constrained": False}, **fields}


def still_serves(client: httpx.Client) -> None:
    answer = client.post("/v1/completions", json=body())
    assert answer.status_code == 200, answer.text
    assert answer.json()["object"] == "text_completion"


def assert_error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["code"] == code, error
    assert error["message"] and isinstance(error["type"], str)
    return error


def test_completion_has_the_openai_shape_and_infill_figures(live: LiveServer, client: httpx.Client) -> None:
    answer = client.post("/v1/completions", json=body(model=live.model_name))
    assert answer.status_code == 200, answer.text
    data = answer.json()
    assert data["object"] == "text_completion" and data["id"].startswith("cmpl-")
    assert data["model"] == live.model_name and abs(data["created"] - time.time()) < 120
    (choice,) = data["choices"]
    assert choice["index"] == 0 and isinstance(choice["text"], str) and choice["finish_reason"] in ("stop", "length")
    usage = data["usage"]
    assert usage["completion_tokens"] <= 6 and usage["prompt_tokens"] > 0
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    figures = data["infill"]
    assert figures["forwards"] >= 1 and figures["ms"] > 0 and figures["replica"] == live.replica_id
    assert figures["tpf"] == pytest.approx(usage["completion_tokens"] / figures["forwards"], abs=1e-3)


def test_the_same_request_gives_the_same_middle_and_stop_cuts_it(client: httpx.Client) -> None:
    first = client.post("/v1/completions", json=body(max_tokens=12)).json()["choices"][0]
    again = client.post("/v1/completions", json=body(max_tokens=12)).json()["choices"][0]
    assert first["text"] == again["text"]  # greedy: deterministic
    if len(first["text"]) >= 2:
        stop = first["text"][1:]
        cut = client.post("/v1/completions", json=body(max_tokens=12, stop=[stop])).json()["choices"][0]
        assert cut["text"] == first["text"][: first["text"].find(stop)] and cut["finish_reason"] == "stop"


def test_stream_sends_one_event_per_changing_step_then_the_answer_and_done(client: httpx.Client) -> None:
    request = body(max_tokens=8, stream=True, stream_options={"include_usage": True})
    with client.stream("POST", "/v1/completions", json=request) as response:
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
        events = [line[len("data: "):] for line in response.iter_lines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(event) for event in events[:-1]]
    *steps, final, usage = chunks
    assert steps, "no step events before the answer"
    texts = [step["infill"]["text"] for step in steps]
    assert all(a != b for a, b in zip(texts, texts[1:])), "an event for a step that changed nothing"
    for step in steps:
        assert step["choices"][0]["text"] == "" and step["choices"][0]["finish_reason"] is None
        assert step["infill"]["step"] >= 1 and step["infill"]["masked"] >= 0
    assert final["choices"][0]["finish_reason"] in ("stop", "length") and final["infill"]["forwards"] >= 1
    assert usage["choices"] == [] and usage["usage"]["completion_tokens"] == final["infill"]["tokens"]
    whole = client.post("/v1/completions", json=body(max_tokens=8)).json()
    # Concatenating the deltas, as every OpenAI client does, gives exactly the non-streamed answer.
    assert "".join(chunk["choices"][0]["text"] for chunk in chunks if chunk["choices"]) == whole["choices"][0]["text"]


def test_models_and_health(live: LiveServer, client: httpx.Client) -> None:
    models = client.get("/v1/models").json()
    assert models["object"] == "list" and [m["id"] for m in models["data"]] == [live.model_name]
    anonymous = httpx.get(live.base_url + "/health", timeout=TIMEOUT)
    assert anonymous.status_code == 200 and anonymous.json() == {"status": "ok"}  # nothing more without a token
    detailed = client.get("/health").json()
    assert detailed["status"] == "ok" and detailed["model"] == live.model_name
    assert detailed["replica"] == live.replica_id and detailed["counters"]["http_requests"] >= 0


@pytest.mark.parametrize("authorization", [None, "", "Bearer", "Bearer wrong-token", f"Basic {TOKEN}", TOKEN])
def test_missing_or_wrong_token_is_401(live: LiveServer, authorization: Any) -> None:
    headers = {} if authorization is None else {"Authorization": authorization}
    for method, path in (("POST", "/v1/completions"), ("GET", "/v1/models")):
        response = httpx.request(method, live.base_url + path, json=body(), headers=headers, timeout=TIMEOUT)
        assert_error(response, 401, "invalid_api_key")
        assert response.headers["www-authenticate"] == "Bearer"


def test_foreign_origin_is_403_and_own_or_allowed_origins_pass(live: LiveServer, client: httpx.Client) -> None:
    for origin in ("http://evil.example", f"http://evil.example:{live.port}", "null"):
        for method, path in (("POST", "/v1/completions"), ("GET", "/v1/models"), ("GET", "/health")):
            response = client.request(method, path, json=body(), headers={"Origin": origin})
            assert_error(response, 403, "origin_not_allowed")
    for origin in (f"http://127.0.0.1:{live.port}", "https://editor.example"):
        assert client.post("/v1/completions", json=body(), headers={"Origin": origin}).status_code == 200


@pytest.mark.parametrize("raw, status, code, param", [
    (b"{oops", 400, "invalid_json", None),
    (b"\xff\xfe", 400, "invalid_json", None),
    (b"[1, 2]", 400, "invalid_json", None),
    (json.dumps({"suffix": "x"}).encode(), 400, "invalid_value", "prompt"),
    (json.dumps({"prompt": 5}).encode(), 400, "invalid_value", "prompt"),
    (json.dumps({"prompt": "x", "suffix": ["y"]}).encode(), 400, "invalid_value", "suffix"),
    (json.dumps({"prompt": "x", "max_tokens": 2049}).encode(), 400, "invalid_value", "max_tokens"),  # the schema's bound (0 is allowed, as on every surface)
    (json.dumps({"prompt": "x", "max_tokens": 10_000}).encode(), 400, "invalid_value", "max_tokens"),
    (json.dumps({"prompt": "x", "temperature": -1}).encode(), 400, "invalid_value", "temperature"),
    (json.dumps({"prompt": "x", "stop": [""]}).encode(), 400, "invalid_value", "stop"),
    (json.dumps({"prompt": "x", "stream": "yes"}).encode(), 400, "invalid_value", "stream"),
    (json.dumps({"prompt": "x", "n": 3}).encode(), 400, "unsupported_parameter", "n"),
    (json.dumps({"prompt": "x", "logprobs": 5}).encode(), 400, "unsupported_parameter", "logprobs"),
    (json.dumps({"prompt": "x", "teleport": True}).encode(), 400, "unknown_parameter", "teleport"),
    (json.dumps({"prompt": "x", "infill": {"context_tokens": 9}}).encode(), 400, "invalid_value", "infill"),
    (json.dumps({"prompt": "x", "model": "gpt-5"}).encode(), 404, "model_not_found", "model"),
    (json.dumps({"prompt": "x", "infill": {"language": "cobol"}}).encode(), 400, "unknown_language", "infill.language"),
    (json.dumps({"prompt": "x", "infill": {"filename": 5}}).encode(), 400, "invalid_value", "infill.filename"),
    (json.dumps({"prompt": "", "suffix": ""}).encode(), 400, "engine_refused", None),
    (json.dumps({"prompt": "data = '\x00\x00'\n"}).encode(), 400, "engine_refused", None),
])
def test_malformed_or_invalid_bodies_get_4xx_error_objects_and_the_server_lives_on(
        client: httpx.Client, raw: bytes, status: int, code: str, param: Any) -> None:
    error = assert_error(client.post("/v1/completions", content=raw), status, code)
    assert error["param"] == param
    still_serves(client)


def test_an_unknown_language_is_refused_with_the_known_ones_wherever_it_is_named(live: LiveServer,
                                                                                client: httpx.Client) -> None:
    """Issue 26 (4): `cobol` used to run silently unconstrained."""
    for request, param in ((body(infill={"language": "cobol"}), "infill.language"),
                           (body(model=f"{live.model_name}:cobol"), "model")):
        error = assert_error(client.post("/v1/completions", json=request), 400, "unknown_language")
        assert error["param"] == param and "'cobol'" in error["message"]
        assert all(name in error["message"] for name in ("go", "javascript", "python", "rust", "tsx", "typescript"))
    still_serves(client)


PYTHON_PROMPT = ('import os\n\n\ndef walk(root, skip_hidden=True):\n    """Yield the names under root."""\n'
                 '    for name in sorted(os.listdir(root)):\n        if skip_hidden and name.startswith("."):\n'
                 '            continue\n        path = os.path.join(root, name)\n        if os.path.isdir(path):\n'
                 '            yield from walk(path, skip_hidden)\n        else:\n            yield ')
PYTHON_SUFFIX = "\n\n\nif __name__ == \"__main__\":\n    for found in walk(\".\"):\n        print(found)\n"


def test_a_request_without_a_language_gets_one_and_its_syntax_constraint(live: LiveServer,
                                                                         client: httpx.Client) -> None:
    """Issue 26 (8): OpenAI-style clients send no language. It comes from `infill.language`,
    else the `model` suffix, else `infill.filename`, else detection on prompt and suffix;
    `"language": null` says "none". The figures say which, and a detected language's
    constraint is on: the middle leaves the Python parseable."""
    import grammars

    def ask(**fields: Any) -> dict[str, Any]:
        answer = client.post("/v1/completions", json={"prompt": PYTHON_PROMPT, "suffix": PYTHON_SUFFIX,
                                                      "max_tokens": 8, **fields})
        assert answer.status_code == 200, answer.text
        return answer.json()

    detected = ask()
    assert (detected["infill"]["language"], detected["infill"]["language_source"]) == ("python", "detected")
    middle = detected["choices"][0]["text"]
    assert grammars.constraint_for("python").accept_final(PYTHON_PROMPT, middle, PYTHON_SUFFIX), middle
    streamed = client.post("/v1/completions", json={"prompt": PYTHON_PROMPT, "suffix": PYTHON_SUFFIX,
                                                    "max_tokens": 8, "stream": True})
    final = json.loads([line for line in streamed.text.splitlines() if line.startswith("data: {")][-1][6:])
    assert final["infill"]["language"] == "python" and final["choices"][0]["text"] == middle
    cases = [({"model": f"{live.model_name}:go"}, "go", "request"),
             ({"infill": {"filename": "src/lib.rs"}}, "rust", "filename"),
             ({"infill": {"filename": "notes.txt"}}, "python", "detected"),  # an unknown extension: detected
             ({"infill": {"language": "typescriptreact"}, "model": f"{live.model_name}:go"}, "tsx", "request"),
             ({"infill": {"language": None}}, None, "none"),
             ({"infill": {"constrained": False}}, None, "none")]  # nothing to constrain: nothing detected
    for fields, language, source in cases:
        figures = ask(**fields)["infill"]
        assert (figures["language"], figures["language_source"]) == (language, source), fields
    assert ask(prompt="x = ", suffix="\n")["infill"]["language"] is None  # too little to tell: unconstrained


def test_oversized_body_is_413_declared_or_streamed(live: LiveServer, client: httpx.Client) -> None:
    big = json.dumps(body(prompt="y" * (LIMITS.max_message_bytes + 10))).encode()
    assert_error(client.post("/v1/completions", content=big), 413, "request_too_large")

    def chunks() -> Iterator[bytes]:  # no Content-Length: chunked transfer, counted as it arrives
        for start in range(0, len(big), 4096):
            yield big[start:start + 4096]

    assert_error(client.post("/v1/completions", content=chunks()), 413, "request_too_large")
    still_serves(client)


def test_unknown_endpoints_and_methods(live: LiveServer, client: httpx.Client) -> None:
    assert_error(client.post("/v1/chat/completions", json={}), 404, "not_found")
    assert_error(client.get("/v1/completions"), 405, "method_not_allowed")
    assert client.get("/no-such-page").status_code == 404
    still_serves(client)


def test_a_client_that_hangs_up_cancels_its_request_on_the_server(live: LiveServer, client: httpx.Client, tiny_faults: Any) -> None:
    before = client.get("/health").json()["counters"].get("http_cancelled", 0)
    request = json.dumps(body(**LONG)).encode()
    for stream in (False, True):
        # A few passes (the stream's first steps), then the engine waits: the request cannot
        # finish before the hang-up, however fast the machine or slow the server to notice.
        tiny_faults.hold(after=4)
        with socket.create_connection(("127.0.0.1", live.port), timeout=TIMEOUT) as raw:
            payload = request if not stream else json.dumps(body(**LONG, stream=True)).encode()
            raw.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                        b"Authorization: Bearer " + TOKEN.encode() + b"\r\nContent-Length: "
                        + str(len(payload)).encode() + b"\r\n\r\n" + payload)
            if stream:
                assert raw.recv(64).startswith(b"HTTP/1.1 200")  # the stream started
            else:
                deadline = time.monotonic() + TIMEOUT  # the server has taken it
                while client.get("/health").json()["http_in_flight"] < 1:
                    assert time.monotonic() < deadline, "the request never started"
                    time.sleep(0.02)
        # The socket is closed: the server must notice and stop the engine on that request.
        deadline = time.monotonic() + TIMEOUT
        while client.get("/health").json()["counters"].get("http_cancelled", 0) < before + 1:
            assert time.monotonic() < deadline, "the server did not cancel the abandoned request"
            time.sleep(0.05)
        tiny_faults.release()
        before += 1
    health = client.get("/health").json()
    assert health["http_in_flight"] == 0
    still_serves(client)


def test_parse_completion_request_rules() -> None:
    parsed = api.parse_completion_request(json.dumps({
        "model": "m", "prompt": ["p"], "suffix": None, "max_tokens": 3, "temperature": 0.5, "seed": 7,
        "stop": "\n\n", "top_p": 1, "user": "me", "n": 1, "echo": False, "logprobs": None,
        "infill": {"language": "python", "edit_threshold": 0.5, "cross_file": "# other.py: def f()\n"}}).encode(),
        max_request_tokens=16)
    assert parsed.prompt == "p" and parsed.suffix == "" and parsed.model == "m" and parsed.stop == ("\n\n",)
    assert parsed.cross_file == "# other.py: def f()\n"
    assert parsed.language == "python" and not parsed.stream
    assert parsed.detect_language and parsed.filename is None
    assert api.split_model("infill-default:python", "infill-default") == ("infill-default", "python")
    assert api.split_model("infill-default", "infill-default") == ("infill-default", None)
    assert api.split_model("a:b", "a:b") == ("a:b", None)  # a served name with a colon is never split
    assert api.split_model("other:python", "infill-default") == ("other:python", None)  # not ours: 404 later
    assert parsed.settings == {"max_tokens": 3, "temperature": 0.5, "seed": 7, "edit_threshold": 0.5}
    with pytest.raises(api.ApiError) as info:
        api.parse_completion_request(b'{"prompt": "x", "stream_options": {"include_usage": true}}', max_request_tokens=16)
    assert info.value.param == "stream_options"
    assert api.apply_stop("abc\n\ndef", ["\n\n", "c"]) == ("ab", True)
    assert api.apply_stop("abc", ["z"]) == ("abc", False)
    assert api.finish_reason("max_tokens", False) == "length" and api.finish_reason("max_tokens", True) == "stop"
    assert api.canvas_text(["a", None, "b", ""]) == "ab"


def test_infill_serve_prints_a_token_that_curl_style_clients_can_use(tiny_model_dir: Any) -> None:
    """The command itself: no --token, so it makes one and prints it; the API takes it;
    SIGTERM stops it cleanly."""
    import re
    import signal
    import subprocess
    import sys

    process = subprocess.Popen([sys.executable, "-m", "infill_lsp.live.server", "--port", "0", "--model",
                                str(tiny_model_dir)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        printed = ""
        while "token:" not in printed:
            line = process.stdout.readline()
            assert line, f"infill serve exited: {process.stderr.read() if process.stderr else ''}"
            printed += line
        base = re.search(r"api:\s+(http://\S+)/v1", printed).group(1)  # type: ignore[union-attr]
        token = re.search(r"token:\s+(\S+)", printed).group(1)  # type: ignore[union-attr]
        assert f"#token={token}" in printed  # the playground link carries it too
        answer = httpx.post(base + "/v1/completions", json={"prompt": "x = ", "max_tokens": 2},
                            headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT)
        assert answer.status_code == 200 and answer.json()["object"] == "text_completion"
        assert httpx.post(base + "/v1/completions", json={"prompt": "x = "}, timeout=TIMEOUT).status_code == 401
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
