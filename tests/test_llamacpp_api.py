"""llama.cpp server's `/infill`, `/props` and `/health` on `infill serve`, over real loopback
HTTP against the real engine on a tiny random model: the requests llama.vim and
llama.vscode send (recorded in tests/fixtures/clients/) replayed, streaming and not; the
language found for them; llama.cpp's error shape for every refusal; a hang-up cancels."""
from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest

from infill_lsp.live import llamacpp_api as llama
from infill_lsp.live.limits import Limits
from infill_lsp.live.server import LiveServer
from lab.fixtures.live_server import bearer_client, http_test_server

TOKEN = "llamacpp-api-test-token"
TIMEOUT = 60.0
LIMITS = Limits(max_message_bytes=32 * 1024)
FIXTURES = Path(__file__).parent / "fixtures" / "clients"
VIM = json.loads((FIXTURES / "llama_vim.json").read_text())["requests"]
VSCODE = json.loads((FIXTURES / "llama_vscode.json").read_text())["requests"]


@pytest.fixture(scope="module")
def live(tiny_engine: Any) -> Iterator[LiveServer]:
    with http_test_server(tiny_engine, TOKEN, LIMITS) as server:
        yield server


@pytest.fixture()
def client(live: LiveServer) -> Iterator[httpx.Client]:
    with bearer_client(live, TOKEN, TIMEOUT) as c:
        yield c


def small(request: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """A recorded request with a short middle (the tiny model is random: keep it quick)."""
    return {**request, "n_predict": 6, **fields}


def events(response: httpx.Response) -> list[tuple[str, Any]]:
    """The SSE events of a llama.cpp stream as (field, decoded JSON)."""
    found = []
    for line in response.iter_lines():
        if line:
            field, _, data = line.partition(": ")
            found.append((field, json.loads(data)))
    return found


def assert_error(response: httpx.Response, status: int, kind: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()["error"]
    assert set(error) == {"code", "message", "type"}, error
    assert error["code"] == status and error["type"] == kind and error["message"], error
    return error


def still_serves(client: httpx.Client) -> None:
    answer = client.post("/infill", json=small(VIM["fim"]))
    assert answer.status_code == 200, answer.text
    assert isinstance(answer.json()["content"], str)


@pytest.mark.parametrize("recorded", [VIM["fim"], VSCODE["fim"]], ids=["llama.vim", "llama.vscode"])
def test_the_recorded_fim_requests_get_llamacpp_answers(client: httpx.Client, recorded: dict[str, Any]) -> None:
    answer = client.post("/infill", json=small(recorded, response_fields=None))
    assert answer.status_code == 200, answer.text
    data = answer.json()
    assert isinstance(data["content"], str) and data["stop"] is True and data["stop_type"] in ("eos", "limit")
    timings = data["timings"]
    assert timings["predicted_n"] == data["tokens_predicted"] <= 6 and timings["prompt_n"] > 0
    assert data["infill"]["forwards"] >= 1
    # The language: none is sent, the prefix is Python; input_extra names a .js file too and does not decide it.
    assert (data["infill"]["language"], data["infill"]["language_source"]) == ("python", "detected")
    import grammars  # the detected language's constraint ran: the middle leaves the Python parseable

    before = recorded["input_prefix"] + recorded["prompt"]
    assert grammars.constraint_for("python").accept_final(before, data["content"], recorded["input_suffix"])
    # The same request gives the same middle (greedy), whatever the client.
    assert client.post("/infill", json=small(recorded, response_fields=None)).json()["content"] == data["content"]


def test_llama_vim_gets_the_response_fields_it_asks_for_as_flat_keys(client: httpx.Client) -> None:
    data = client.post("/infill", json=small(VIM["fim"])).json()
    assert set(data) == set(VIM["fim"]["response_fields"])
    assert isinstance(data["content"], str) and data["timings/predicted_n"] <= 6 and data["truncated"] is False


@pytest.mark.parametrize("recorded", [VIM["ring_update"], VSCODE["prepare"]], ids=["llama.vim", "llama.vscode"])
def test_the_cache_warm_up_requests_answer_empty_without_running_the_model(client: httpx.Client,
                                                                         recorded: dict[str, Any]) -> None:
    before = client.get("/health").json()["counters"].get("http_requests", 0)
    answer = client.post("/infill", json=recorded)
    assert answer.status_code == 200, answer.text
    if recorded.get("response_fields") == [""]:
        assert answer.json() == {}  # llama.vim asks for nothing
    else:
        assert answer.json()["content"] == "" and answer.json()["tokens_predicted"] == 0
    assert client.get("/health").json()["counters"].get("http_requests", 0) == before  # no engine call


@pytest.mark.parametrize("recorded", [VIM["fim"], VSCODE["fim"]], ids=["llama.vim", "llama.vscode"])
def test_streaming_sends_steps_then_the_middle_then_the_last_event(client: httpx.Client,
                                                                 recorded: dict[str, Any]) -> None:
    request = small(recorded, stream=True, response_fields=None)
    with client.stream("POST", "/infill", json=request) as response:
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
        found = events(response)
    assert all(field == "data" for field, _ in found)  # no [DONE]: llama.cpp sends none on /infill
    *parts, last = [payload for _, payload in found]
    assert last["stop"] is True and last["content"] == "" and last["timings"]["predicted_n"] <= 6
    assert all(part["stop"] is False for part in parts)
    steps = [part for part in parts if "infill" in part]
    assert steps and all(step["content"] == "" and step["infill"]["step"] >= 1 for step in steps)
    whole = client.post("/infill", json=small(recorded, response_fields=None)).json()["content"]
    # Appending `content`, as llama.cpp clients do, gives exactly the non-streamed answer.
    assert "".join(part["content"] for part in parts) == whole


def test_the_language_comes_from_the_model_suffix_or_the_infill_field(live: LiveServer, client: httpx.Client) -> None:
    def language(**fields: Any) -> tuple[Any, Any]:
        figures = client.post("/infill", json=small(VIM["fim"], response_fields=None, **fields)).json()["infill"]
        return figures["language"], figures["language_source"]

    assert language(model=f"{live.model_name}:go") == ("go", "request")
    assert language(infill={"filename": "src/lib.rs"}) == ("rust", "filename")
    assert language(infill={"language": None}) == (None, "none")
    assert language(model=live.model_name) == ("python", "detected")


def test_health_and_props_answer_what_the_clients_read(live: LiveServer) -> None:
    health = httpx.get(live.base_url + "/health", timeout=TIMEOUT)  # public, as llama.cpp's
    assert health.status_code == 200 and health.json() == {"status": "ok"}
    props = httpx.get(live.base_url + "/props", timeout=TIMEOUT).json()
    assert props["default_generation_settings"]["n_ctx"] > 0 and props["model_alias"] == live.model_name
    assert props["total_slots"] == 1


@pytest.mark.parametrize("authorization", [None, "Bearer wrong-token", TOKEN])
def test_missing_or_wrong_token_is_401_in_llamacpp_shape(live: LiveServer, authorization: Any) -> None:
    headers = {} if authorization is None else {"Authorization": authorization}
    response = httpx.post(live.base_url + "/infill", json=small(VIM["fim"]), headers=headers, timeout=TIMEOUT)
    assert_error(response, 401, "authentication_error")


def test_foreign_origin_is_403(client: httpx.Client) -> None:
    for method, path in (("POST", "/infill"), ("GET", "/props")):
        response = client.request(method, path, json=small(VIM["fim"]), headers={"Origin": "http://evil.example"})
        assert_error(response, 403, "permission_error")
    assert client.post("/infill", json=small(VIM["fim"]), headers={"Origin": "https://editor.example"}).status_code == 200


@pytest.mark.parametrize("raw, status, kind, words", [
    (b"{oops", 400, "invalid_request_error", "not valid JSON"),
    (b"\xff\xfe", 400, "invalid_request_error", "not valid JSON"),
    (b"[1, 2]", 400, "invalid_request_error", "JSON object"),
    (json.dumps({"input_prefix": 5}).encode(), 400, "invalid_request_error", "'input_prefix'"),
    (json.dumps({"input_prefix": "x", "input_suffix": ["y"]}).encode(), 400, "invalid_request_error", "'input_suffix'"),
    (json.dumps({"input_prefix": "x", "input_extra": "y"}).encode(), 400, "invalid_request_error", "'input_extra'"),
    (json.dumps({"input_prefix": "x", "input_extra": [{"text": 5}]}).encode(), 400, "invalid_request_error", "input_extra[0]"),
    (json.dumps({"input_prefix": "x", "n_predict": "many"}).encode(), 400, "invalid_request_error", "'n_predict'"),
    (json.dumps({"input_prefix": "x", "n_predict": 10_000}).encode(), 400, "invalid_request_error", "'n_predict'"),
    (json.dumps({"input_prefix": "x", "stream": "yes"}).encode(), 400, "invalid_request_error", "'stream'"),
    (json.dumps({"input_prefix": "x", "stop": [""]}).encode(), 400, "invalid_request_error", "'stop'"),
    (json.dumps({"input_prefix": "x", "grammar": "root ::= x"}).encode(), 400, "invalid_request_error", "'grammar'"),
    (json.dumps({"input_prefix": "x", "response_fields": "content"}).encode(), 400, "invalid_request_error", "response_fields"),
    (json.dumps({"input_prefix": "x", "model": "qwen2.5-coder"}).encode(), 404, "not_found_error", "qwen2.5-coder"),
    (json.dumps({"input_prefix": "x", "model": "infill-default:cobol"}).encode(), 400, "invalid_request_error", "cobol"),
    (json.dumps({"input_prefix": "x", "infill": {"language": "cobol"}}).encode(), 400, "invalid_request_error", "cobol"),
    (json.dumps({"input_prefix": "", "input_suffix": ""}).encode(), 400, "invalid_request_error", ""),
])
def test_bad_input_gets_llamacpp_errors_and_the_server_lives_on(live: LiveServer, client: httpx.Client, raw: bytes,
                                                                status: int, kind: str, words: str) -> None:
    raw = raw.replace(b"infill-default", live.model_name.encode())
    error = assert_error(client.post("/infill", content=raw), status, kind)
    assert words in error["message"]
    still_serves(client)


def test_oversized_body_is_413(client: httpx.Client) -> None:
    big = json.dumps(small(VIM["fim"], input_prefix="y" * (LIMITS.max_message_bytes + 10))).encode()
    assert_error(client.post("/infill", content=big), 413, "invalid_request_error")
    still_serves(client)


def test_wrong_methods_are_405_in_llamacpp_shape(client: httpx.Client) -> None:
    assert_error(client.get("/infill"), 405, "invalid_request_error")
    assert_error(client.post("/props"), 405, "invalid_request_error")


LONG = {"n_predict": 256, "infill": {"block_size": 8, "constrained": False}}


def test_a_client_that_hangs_up_cancels_its_request(live: LiveServer, client: httpx.Client, tiny_faults: Any) -> None:
    before = client.get("/health").json()["counters"].get("http_cancelled", 0)
    for stream in (False, True):
        # A few passes (the stream's first steps), then the engine waits: the request cannot
        # finish before the hang-up, however fast the machine or slow the server to notice.
        tiny_faults.hold(after=4)
        payload = json.dumps({**VIM["fim"], **LONG, "stream": stream}).encode()
        with socket.create_connection(("127.0.0.1", live.port), timeout=TIMEOUT) as raw:
            raw.sendall(b"POST /infill HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                        b"Authorization: Bearer " + TOKEN.encode() + b"\r\nContent-Length: "
                        + str(len(payload)).encode() + b"\r\n\r\n" + payload)
            if stream:
                assert raw.recv(64).startswith(b"HTTP/1.1 200")  # the stream started
            else:
                deadline = time.monotonic() + TIMEOUT  # the engine is on it
                while client.get("/health").json()["http_in_flight"] < 1:
                    assert time.monotonic() < deadline, "the request never started"
                    time.sleep(0.02)
        deadline = time.monotonic() + TIMEOUT
        while client.get("/health").json()["counters"].get("http_cancelled", 0) < before + 1:
            assert time.monotonic() < deadline, "the server did not cancel the abandoned request"
            time.sleep(0.05)
        tiny_faults.release()
        before += 1
    assert client.get("/health").json()["http_in_flight"] == 0
    still_serves(client)


def test_parse_and_render_rules() -> None:
    parsed = llama.parse_infill_request(json.dumps(VSCODE["fim"]).encode(), max_request_tokens=2048)
    fim = VSCODE["fim"]
    assert parsed.completion.prompt == fim["input_prefix"] + fim["prompt"]
    assert parsed.completion.suffix == fim["input_suffix"]
    assert parsed.completion.cross_file == fim["input_extra"][0]["text"]
    assert parsed.completion.settings == {"max_tokens": 128} and not parsed.warm_only
    assert parsed.completion.language is None and parsed.completion.detect_language
    assert llama.parse_infill_request(json.dumps(VIM["ring_update"]).encode(), max_request_tokens=64).warm_only
    assert llama.select_fields({"content": "a", "timings": {"prompt_n": 3}}, ["content", "timings/prompt_n", "x/y"]) \
        == {"content": "a", "timings/prompt_n": 3}
    assert llama.select_fields({"content": "a"}, [""]) == {}
    assert llama.sse_error(llama.LlamaError(503, "busy")).startswith(b"error: {\"code\":503")


def over_indented(recorded: dict[str, Any]) -> dict[str, Any]:
    """llama.vim's recorded request with its cursor on a new line indented deeper than its
    block: after `path = os.path.join(root, name)` (8 spaces), a line of 12, the rest of
    the function below it (issue 34: such a request took 119 passes to answer nothing)."""
    text = recorded["input_prefix"] + recorded["prompt"] + recorded["input_suffix"]
    anchor = "        path = os.path.join(root, name)\n"
    cut = text.index(anchor) + len(anchor)
    return {**recorded, "input_prefix": text[:cut], "prompt": " " * 12, "input_suffix": "\n" + text[cut:], "response_fields": None}


def test_an_over_indented_line_answers_nothing_without_running_the_model(client: httpx.Client) -> None:
    request = over_indented(VIM["fim"])
    data = client.post("/infill", json=request).json()
    assert data["content"] == "" and data["infill"]["stop_reason"] == "indentation"
    assert data["infill"]["forwards"] <= 4  # issue 34's bar; no pass is needed at all
    # The same line at its block's indentation (8 spaces) runs the model as usual.
    right = {**request, "prompt": " " * 8, "n_predict": 6}
    figures = client.post("/infill", json=right).json()["infill"]
    assert figures["forwards"] >= 1 and figures["stop_reason"] != "indentation"
