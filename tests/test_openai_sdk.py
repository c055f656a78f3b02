"""The official `openai` Python SDK (pinned in pyproject's `test` extra), unmodified, against
a real `infill serve` on loopback with the real engine on a tiny random model: completions
with a suffix, streaming and not, the SDK's own error types for a wrong token, an unknown
model and a bad argument, a request with no language getting one, and a stream the client
abandons cancelling its engine job (issue 27's acceptance; docs/clients.md)."""
from __future__ import annotations

import time
from typing import Any, Iterator

import httpx
import openai
import pytest

from infill_lsp.live.server import LiveServer
from lab.fixtures.live_server import http_test_server

TOKEN = "openai-sdk-test-token"
TIMEOUT = 60.0
PREFIX = "def add(a, b):\n    return "
SUFFIX = "\n\nprint(add(1, 2))\n"


@pytest.fixture(scope="module")
def live(tiny_engine: Any) -> Iterator[LiveServer]:
    with http_test_server(tiny_engine, TOKEN, origins=()) as server:
        yield server


def sdk(live: LiveServer, token: str = TOKEN) -> openai.OpenAI:
    # max_retries=0: a refusal must surface as the SDK's error at once, not after retries.
    return openai.OpenAI(base_url=f"{live.base_url}/v1", api_key=token, timeout=TIMEOUT, max_retries=0)


def test_a_completion_with_a_suffix_and_infill_figures(live: LiveServer) -> None:
    answer = sdk(live).completions.create(model=live.model_name, prompt=PREFIX, suffix=SUFFIX, max_tokens=6,
                                          extra_body={"infill": {"language": "python", "constrained": False}})
    (choice,) = answer.choices
    assert answer.object == "text_completion" and answer.model == live.model_name
    assert isinstance(choice.text, str) and choice.finish_reason in ("stop", "length")
    assert answer.usage is not None and answer.usage.completion_tokens <= 6
    figures = answer.model_extra["infill"]  # the SDK keeps fields it does not know
    assert figures["forwards"] >= 1 and figures["language"] == "python"


def test_streamed_deltas_join_to_the_answer_not_streamed(live: LiveServer) -> None:
    client = sdk(live)
    request = dict(model=live.model_name, prompt=PREFIX, suffix=SUFFIX, max_tokens=8,
                   extra_body={"infill": {"language": "python", "constrained": False}})
    whole = client.completions.create(**request).choices[0].text
    chunks = list(client.completions.create(stream=True, **request))
    assert chunks and "".join(chunk.choices[0].text for chunk in chunks if chunk.choices) == whole
    assert chunks[-1].choices[0].finish_reason in ("stop", "length")


def test_a_request_without_a_language_is_detected_and_constrained(live: LiveServer) -> None:
    # The SDK has no language field; the server finds Python from the text (docs/languages.md).
    prefix = ("import os\n\n\ndef walk(root):\n    for name in sorted(os.listdir(root)):\n"
              "        path = os.path.join(root, name)\n        if os.path.isdir(path):\n"
              "            yield from walk(path)\n        else:\n            yield ")
    answer = sdk(live).completions.create(model=live.model_name, prompt=prefix, suffix="\n", max_tokens=6)
    figures = answer.model_extra["infill"]
    assert figures["language"] == "python" and figures["language_source"] == "detected"


def test_refusals_are_the_sdks_own_errors(live: LiveServer) -> None:
    with pytest.raises(openai.AuthenticationError):
        sdk(live, token="wrong").completions.create(model=live.model_name, prompt=PREFIX, suffix=SUFFIX, max_tokens=2)
    with pytest.raises(openai.NotFoundError):
        sdk(live).completions.create(model="no-such-model", prompt=PREFIX, suffix=SUFFIX, max_tokens=2)
    with pytest.raises(openai.BadRequestError) as bad:
        sdk(live).completions.create(model=live.model_name, prompt=PREFIX, suffix=SUFFIX, max_tokens=100_000)
    assert "max_tokens" in str(bad.value)
    with pytest.raises(openai.BadRequestError) as unknown:
        sdk(live).completions.create(model=live.model_name, prompt=PREFIX, suffix=SUFFIX, max_tokens=2,
                                     extra_body={"infill": {"language": "cobol"}})
    assert "cobol" in str(unknown.value)
    models = [m.id for m in sdk(live).models.list()]
    assert live.model_name in models  # and the server lives on


def test_an_abandoned_stream_cancels_its_engine_job(live: LiveServer, tiny_faults: Any) -> None:
    with httpx.Client(base_url=live.base_url, timeout=TIMEOUT, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        def cancelled() -> int:
            return http.get("/health").json()["counters"].get("http_cancelled", 0)

        before = cancelled()
        # A random model rarely ends early: 256 tokens take over a hundred passes, and the
        # engine runs a few, then waits: the job cannot finish before the stream is dropped.
        tiny_faults.hold(after=4)
        stream = sdk(live).completions.create(model=live.model_name, prompt="x = ", suffix="\n", max_tokens=256, stream=True,
                                              extra_body={"infill": {"block_size": 8, "constrained": False}})
        next(iter(stream))
        stream.close()  # the SDK closes the HTTP response: the connection goes away mid-stream
        deadline = time.monotonic() + TIMEOUT
        while cancelled() < before + 1:
            assert time.monotonic() < deadline, "the server did not cancel the abandoned stream"
            time.sleep(0.05)
        tiny_faults.release()
