"""Ollama's `/api/generate`, `/api/tags` and `/api/version` on `infill serve`, driven by the
official `ollama` Python client (pinned in pyproject's `test` extra) over real loopback HTTP
against the real engine on a tiny random model: fill-in-the-middle with a suffix, streaming
and not, the client's own error type for every refusal, a hang-up cancelling the engine
job; the raw wire (NDJSON, `infill` figures, error shapes) with httpx."""
from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any, Iterator

import httpx
import ollama
import pytest

from infill_lsp.live import ollama_api
from infill_lsp.live.limits import Limits
from infill_lsp.live.server import LiveServer
from lab.fixtures.live_server import http_test_server

TOKEN = "ollama-api-test-token"
TIMEOUT = 60.0
LIMITS = Limits(max_message_bytes=32 * 1024)
PREFIX = ('import os\n\n\ndef walk(root, skip_hidden=True):\n    """Yield the names under root."""\n'
          '    for name in sorted(os.listdir(root)):\n        if skip_hidden and name.startswith("."):\n'
          '            continue\n        path = os.path.join(root, name)\n        if os.path.isdir(path):\n'
          '            yield from walk(path, skip_hidden)\n        else:\n            yield ')
CONTINUE = json.loads((Path(__file__).parent / "fixtures" / "clients" / "continue_ollama.json").read_text())["requests"]
SUFFIX = "\n\n\nif __name__ == \"__main__\":\n    for found in walk(\".\"):\n        print(found)\n"


@pytest.fixture(scope="module")
def live(tiny_engine: Any) -> Iterator[LiveServer]:
    with http_test_server(tiny_engine, TOKEN, LIMITS) as server:
        yield server


@pytest.fixture()
def client(live: LiveServer) -> ollama.Client:
    return ollama.Client(host=live.base_url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=TIMEOUT)


@pytest.fixture()
def http(live: LiveServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=live.base_url, timeout=TIMEOUT, headers={"Authorization": f"Bearer {TOKEN}"}) as c:
        yield c


def generate(client: ollama.Client, live: LiveServer, **fields: Any) -> Any:
    return client.generate(**{"model": live.model_name, "prompt": PREFIX, "suffix": SUFFIX,
                              "options": {"num_predict": 6}, **fields})


def test_generate_with_a_suffix_answers_the_middle(live: LiveServer, client: ollama.Client) -> None:
    answer = generate(client, live)
    assert isinstance(answer.response, str) and answer.done is True and answer.done_reason in ("stop", "length")
    assert answer.model == live.model_name and answer.created_at
    assert 0 <= answer.eval_count <= 6 and answer.prompt_eval_count > 0
    assert answer.total_duration >= answer.eval_duration > 0
    assert generate(client, live).response == answer.response  # greedy: the same request, the same middle


def test_streaming_parts_concatenate_to_the_answer(live: LiveServer, client: ollama.Client) -> None:
    parts = list(generate(client, live, stream=True))
    *pieces, last = parts
    assert last.done is True and last.done_reason in ("stop", "length") and last.response == ""
    assert all(part.done is False for part in pieces) and len(pieces) >= 2  # step lines, then the middle
    assert "".join(part.response for part in parts) == generate(client, live).response


def test_the_wire_carries_infill_figures_and_steps(live: LiveServer, http: httpx.Client) -> None:
    """The official client drops fields it does not know; the wire has them for clients that read them."""
    request = {"model": live.model_name, "prompt": PREFIX, "suffix": SUFFIX, "options": {"num_predict": 6}}
    whole = http.post("/api/generate", json={**request, "stream": False}).json()
    figures = whole["infill"]
    assert figures["forwards"] >= 1 and (figures["language"], figures["language_source"]) == ("python", "detected")
    assert figures["tokens"] == whole["eval_count"]
    import grammars  # the detected language's constraint ran: the middle leaves the Python parseable

    assert grammars.constraint_for("python").accept_final(PREFIX, whole["response"], SUFFIX)
    with http.stream("POST", "/api/generate", json=request) as response:  # Ollama streams by default
        assert response.headers["content-type"].startswith("application/x-ndjson")
        lines = [json.loads(line) for line in response.iter_lines() if line]
    steps = [line for line in lines if not line["done"] and "infill" in line]
    assert steps and all(step["response"] == "" and step["infill"]["step"] >= 1 for step in steps)
    assert lines[-1]["done"] and lines[-1]["infill"]["forwards"] >= 1
    assert "".join(line["response"] for line in lines) == whole["response"]


def test_options_stop_and_the_model_suffix(live: LiveServer, client: ollama.Client, http: httpx.Client) -> None:
    first = generate(client, live, options={"num_predict": 12}).response
    if len(first) >= 2:
        stop = first[1:]
        cut = generate(client, live, options={"num_predict": 12, "stop": [stop]})
        assert cut.response == first[: first.find(stop)] and cut.done_reason == "stop"
    go = http.post("/api/generate", json={"model": f"{live.model_name}:go", "prompt": PREFIX, "suffix": SUFFIX,
                                          "stream": False, "options": {"num_predict": 4}}).json()["infill"]
    assert (go["language"], go["language_source"]) == ("go", "request")
    latest = generate(client, live, model=f"{live.model_name}:latest", raw=True, keep_alive="5m")
    assert latest.done is True  # Ollama's default tag, raw and keep_alive are accepted


def test_an_empty_prompt_is_ollamas_load_request(live: LiveServer, client: ollama.Client) -> None:
    answer = client.generate(model=live.model_name)
    assert answer.done is True and answer.done_reason == "load" and answer.response == ""


def test_tags_and_version(live: LiveServer, client: ollama.Client) -> None:
    names = [model.model for model in client.list().models]
    assert names[0] == live.model_name and f"{live.model_name}:python" in names
    version = httpx.get(live.base_url + "/api/version", timeout=TIMEOUT)  # public, as Ollama's
    assert version.status_code == 200 and version.json()["version"]


@pytest.mark.parametrize("token", [None, "wrong-token"])
def test_a_missing_or_wrong_token_is_the_clients_response_error(live: LiveServer, token: Any) -> None:
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    client = ollama.Client(host=live.base_url, headers=headers, timeout=TIMEOUT)
    for call in (lambda: generate(client, live), lambda: list(generate(client, live, stream=True)), client.list):
        with pytest.raises(ollama.ResponseError) as info:
            call()
        assert info.value.status_code == 401 and "API token" in info.value.error


def test_an_unknown_model_is_404_and_a_refused_field_400(live: LiveServer, client: ollama.Client) -> None:
    with pytest.raises(ollama.ResponseError) as info:
        generate(client, live, model="qwen2.5-coder:1.5b")
    assert info.value.status_code == 404 and "qwen2.5-coder:1.5b" in info.value.error
    with pytest.raises(ollama.ResponseError) as info:
        generate(client, live, system="You are a helpful assistant")
    assert info.value.status_code == 400 and "'system'" in info.value.error
    with pytest.raises(ollama.ResponseError) as info:
        generate(client, live, model=f"{live.model_name}:cobol")
    assert info.value.status_code == 400 and "cobol" in info.value.error


def assert_error(response: httpx.Response, status: int, words: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"} and isinstance(body["error"], str) and words in body["error"], body


def still_serves(client: ollama.Client, live: LiveServer) -> None:
    assert generate(client, live).done is True


@pytest.mark.parametrize("raw, status, words", [
    (b"{oops", 400, "not valid JSON"),
    (b"\xff\xfe", 400, "not valid JSON"),
    (b"[1, 2]", 400, "JSON object"),
    (json.dumps({"prompt": 5}).encode(), 400, "'prompt'"),
    (json.dumps({"prompt": "x", "suffix": ["y"]}).encode(), 400, "'suffix'"),
    (json.dumps({"prompt": "x", "stream": "yes"}).encode(), 400, "'stream'"),
    (json.dumps({"prompt": "x", "raw": "yes"}).encode(), 400, "'raw'"),
    (json.dumps({"prompt": "x", "keep_alive": [5]}).encode(), 400, "'keep_alive'"),
    (json.dumps({"prompt": "x", "options": 5}).encode(), 400, "'options'"),
    (json.dumps({"prompt": "x", "options": {"num_predict": "many"}}).encode(), 400, "'options.num_predict'"),
    (json.dumps({"prompt": "x", "options": {"num_predict": 10_000}}).encode(), 400, "'options.num_predict'"),
    (json.dumps({"prompt": "x", "options": {"temperature": -1}}).encode(), 400, "'options.temperature'"),
    (json.dumps({"prompt": "x", "options": {"stop": [""]}}).encode(), 400, "'options.stop'"),
    (json.dumps({"prompt": "x", "format": "json"}).encode(), 400, "'format'"),
    (json.dumps({"prompt": "x", "images": ["aGk="]}).encode(), 400, "'images'"),
    (json.dumps({"prompt": "x", "model": "llama3"}).encode(), 404, "'llama3' not found"),
    (json.dumps({"prompt": "x", "infill": {"language": "cobol"}}).encode(), 400, "cobol"),
    (json.dumps({"prompt": "", "suffix": "\n", "stream": False}).encode(), 400, ""),  # the engine's refusal
])
def test_bad_input_gets_ollama_errors_and_the_server_lives_on(live: LiveServer, client: ollama.Client,
                                                             http: httpx.Client, raw: bytes, status: int,
                                                             words: str) -> None:
    assert_error(http.post("/api/generate", content=raw), status, words)
    still_serves(client, live)


def test_oversized_no_token_foreign_origin_and_wrong_methods(live: LiveServer, client: ollama.Client,
                                                            http: httpx.Client) -> None:
    big = json.dumps({"prompt": "y" * (LIMITS.max_message_bytes + 10)}).encode()
    assert_error(http.post("/api/generate", content=big), 413, "limit")
    assert_error(httpx.post(live.base_url + "/api/generate", json={"prompt": "x"}, timeout=TIMEOUT), 401, "API token")
    for method, path in (("POST", "/api/generate"), ("GET", "/api/tags"), ("GET", "/api/version")):
        response = http.request(method, path, json={"prompt": "x"}, headers={"Origin": "http://evil.example"})
        assert_error(response, 403, "origin")
    assert_error(http.get("/api/generate"), 405, "POST")
    assert_error(http.post("/api/chat", json={}), 404, "/api/generate")
    still_serves(client, live)


def test_a_hang_up_cancels_the_engine_job(live: LiveServer, client: ollama.Client, http: httpx.Client, tiny_faults: Any) -> None:
    def cancelled() -> int:
        return http.get("/health").json()["counters"].get("http_cancelled", 0)

    def wait_for(count: int) -> None:
        deadline = time.monotonic() + TIMEOUT
        while cancelled() < count:
            assert time.monotonic() < deadline, "the server did not cancel the abandoned request"
            time.sleep(0.05)

    before = cancelled()
    # Streaming, with the official client: read the first line (a denoising step), then drop
    # the stream; 256 tokens from a random model take over a hundred passes, and the engine
    # runs a few, then waits: the job cannot finish before the hang-up, however fast the machine.
    tiny_faults.hold(after=4)
    parts = generate(client, live, prompt="x = ", suffix="\n", stream=True, options={"num_predict": 256})
    assert next(parts).done is False
    parts.close()  # closes the HTTP response: the connection goes away mid-stream
    wait_for(before + 1)
    tiny_faults.release()
    # Not streaming: a raw connection that goes away while the engine is on it (held).
    tiny_faults.hold()
    payload = json.dumps({"prompt": "x = ", "suffix": "\n", "stream": False,
                          "options": {"num_predict": 256}, "infill": {"block_size": 8, "constrained": False}}).encode()
    with socket.create_connection(("127.0.0.1", live.port), timeout=TIMEOUT) as raw:
        raw.sendall(b"POST /api/generate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    b"Authorization: Bearer " + TOKEN.encode() + b"\r\nContent-Length: "
                    + str(len(payload)).encode() + b"\r\n\r\n" + payload)
        deadline = time.monotonic() + TIMEOUT
        while http.get("/health").json()["http_in_flight"] < 1:
            assert time.monotonic() < deadline, "the request never started"
            time.sleep(0.02)
    wait_for(before + 2)
    tiny_faults.release()
    assert http.get("/health").json()["http_in_flight"] == 0
    still_serves(client, live)


def test_parse_rules() -> None:
    parsed = ollama_api.parse_generate_request(json.dumps({
        "model": "m", "prompt": "a", "suffix": "b", "raw": True, "keep_alive": 1800, "system": "",
        "options": {"num_predict": -1, "temperature": 0.2, "seed": -1, "stop": ["\n\n"], "num_ctx": 4096, "top_k": 40},
    }).encode(), max_request_tokens=64)
    completion = parsed.completion
    assert (completion.prompt, completion.suffix, completion.model, completion.stream) == ("a", "b", "m", True)
    assert completion.settings == {"temperature": 0.2} and completion.stop == ("\n\n",) and not parsed.load_only
    assert ollama_api.split_model("m:latest", "m") == ("m", None)
    assert ollama_api.split_model("m:python", "m") == ("m", "python")
    assert ollama_api.timestamp().endswith("Z")



def test_show_tells_continue_the_model_fills_in_the_middle(live: LiveServer, client: ollama.Client,
                                                          http: httpx.Client) -> None:
    shown = client.show(live.model_name)
    assert ".Suffix" in shown.template and "insert" in shown.capabilities
    assert shown.parameters.startswith("num_ctx ") and int(shown.parameters.split()[1]) > 0
    continue_show = http.post("/api/show", json={**CONTINUE["show"], "name": live.model_name})
    assert continue_show.status_code == 200 and ".Suffix" in continue_show.json()["template"]
    assert_error(http.post("/api/show", json={"name": "llama3"}), 404, "'llama3' not found")
    assert_error(httpx.post(live.base_url + "/api/show", json={"name": live.model_name}, timeout=TIMEOUT),
                 401, "API token")


def test_the_recorded_continue_request_streams_the_middle(live: LiveServer, http: httpx.Client) -> None:
    request = {**CONTINUE["fim"], "model": live.model_name}
    request["options"] = {**request["options"], "num_predict": 6}  # eight stop strings: more than OpenAI's 4
    with http.stream("POST", "/api/generate", json=request) as response:
        assert response.status_code == 200
        lines = [json.loads(line) for line in response.iter_lines() if line]
    assert lines[-1]["done"] is True and lines[-1]["infill"]["language"] == "python"
    whole = http.post("/api/generate", json={**request, "stream": False}).json()
    assert "".join(line["response"] for line in lines) == whole["response"]
