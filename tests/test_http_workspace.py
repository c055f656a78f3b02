"""The workspace over HTTP (issue 36): `infill.workspace_snippets` and llama.cpp's
`input_extra` reach the engine as the texts its drafts are retrieved from, on every
dialect; a request that names a path as its workspace is refused (the server never reads
a path a client names); snippets are checked for type, count and size. Over real
loopback HTTP against the real engine on a tiny random model; what is checked is the
WorkspaceContext the engine receives, not what the model makes of it."""
from __future__ import annotations

from typing import Any, Iterator

import httpx
import pytest

from infill_lsp.live import llamacpp_api as llama
from infill_lsp.live import ollama_api as ollama
from infill_lsp.live import openai_api as api
from infill_lsp.live.limits import Limits
from infill_lsp.live.server import LiveServer
from lab.fixtures.live_server import bearer_client, http_test_server

TOKEN = "http-workspace-test-token"
LIMITS = Limits(max_message_bytes=256 * 1024)
SNIPPETS = ["def scale(x, k):\n    return x * k\n", "total = scale(price, rate)\nprint(total)"]
FAST = {"max_tokens": 4, "constrained": False}


@pytest.fixture(scope="module")
def live(tiny_engine: Any) -> Iterator[LiveServer]:
    with http_test_server(tiny_engine, TOKEN, LIMITS) as server:
        yield server


@pytest.fixture()
def client(live: LiveServer) -> Iterator[httpx.Client]:
    with bearer_client(live, TOKEN, 60.0) as c:
        yield c


@pytest.fixture()
def received(tiny_engine: Any, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The `workspace` of every job the engine is asked for while the test runs."""
    seen: list[Any] = []
    job = tiny_engine.job

    def recording(*args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs.get("workspace"))
        return job(*args, **kwargs)

    monkeypatch.setattr(tiny_engine, "job", recording)
    return seen


def test_openai_workspace_snippets_reach_the_engine(client: httpx.Client, received: list[Any]) -> None:
    answer = client.post("/v1/completions", json={"prompt": "total = ", "suffix": "\nprint(total)\n", "max_tokens": 4,
                                                   "infill": {"language": "python", "constrained": False,
                                                              "workspace_snippets": SNIPPETS}})
    assert answer.status_code == 200, answer.text
    (workspace,) = received
    assert dict(workspace.buffers) == {"snippet-0": SNIPPETS[0], "snippet-1": SNIPPETS[1]}
    assert workspace.index is None  # the server has no index of anyone's disk
    # The snippets are retrieval material: the line after `total = scale(...)` is a draft.
    assert "scale(price, rate)" in [d.text for d in workspace.drafts("total = ", "\nprint(total)\n")]


def test_a_request_without_snippets_has_no_workspace(client: httpx.Client, received: list[Any]) -> None:
    assert client.post("/v1/completions", json={"prompt": "x = ", "max_tokens": 2, "infill": {"constrained": False}}).status_code == 200
    assert received == [None]


def test_ollama_takes_workspace_snippets_too(client: httpx.Client, received: list[Any]) -> None:
    answer = client.post("/api/generate", json={"model": "", "prompt": "total = ", "suffix": "\n", "stream": False,
                                                 "options": {"num_predict": 4},
                                                 "infill": {"constrained": False, "workspace_snippets": SNIPPETS[:1]}})
    assert answer.status_code == 200, answer.text
    assert [dict(w.buffers) for w in received] == [{"snippet-0": SNIPPETS[0]}]


def test_llamacpp_input_extra_chunks_are_retrieval_material(client: httpx.Client, received: list[Any]) -> None:
    answer = client.post("/infill", json={
        "input_prefix": "", "prompt": "total = ", "input_suffix": "\nprint(total)\n", "n_predict": 4,
        "input_extra": [{"filename": "a.py", "text": "total = scale(price, rate)\nprint(total)"},
                        {"filename": "b.py", "text": ""}],
        "infill": {"constrained": False, "workspace_snippets": SNIPPETS[:1]}})
    assert answer.status_code == 200, answer.text
    (workspace,) = received
    assert dict(workspace.buffers) == {"snippet-0": SNIPPETS[0],
                                       "input_extra-0": "total = scale(price, rate)\nprint(total)\n"}
    assert "scale(price, rate)" in [d.text for d in workspace.drafts("total = ", "\nprint(total)\n")]


@pytest.mark.parametrize("path, body", [
    ("/v1/completions", {"prompt": "x", "infill": {"workspace": "/home/someone/project"}}),
    ("/v1/completions", {"prompt": "x", "infill": {"workspace_root": "/etc"}}),
    ("/v1/completions", {"prompt": "x", "infill": {"root_path": "/etc"}}),
    ("/v1/completions", {"prompt": "x", "workspace": "/etc"}),
    ("/api/generate", {"prompt": "x", "infill": {"workspace": "/etc"}}),
    ("/api/generate", {"prompt": "x", "workspace_folders": ["/etc"]}),
    ("/infill", {"prompt": "x", "infill": {"workspace": "/etc"}}),
    ("/infill", {"prompt": "x", "workspace": {"path": "/etc"}}),
])
def test_a_workspace_path_is_refused(client: httpx.Client, received: list[Any], path: str, body: dict) -> None:
    answer = client.post(path, json=body)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    message = error if isinstance(error, str) else error["message"]
    assert "never reads files or folders a request names" in message and "workspace_snippets" in message
    if path == "/v1/completions":
        assert error["code"] == "workspace_path_refused"
    assert received == []  # the engine never saw it


@pytest.mark.parametrize("snippets, says", [
    ("def f(): pass", "must be a list of strings"),
    (["ok", 3], "must be a list of strings"),
    (["x"] * (api.MAX_WORKSPACE_SNIPPETS + 1), f"at most {api.MAX_WORKSPACE_SNIPPETS} are accepted"),
    (["y" * 40_000, "z" * 40_000], f"at most {api.MAX_WORKSPACE_SNIPPET_BYTES} bytes"),
])
def test_bad_workspace_snippets_are_a_clear_400(client: httpx.Client, snippets: Any, says: str) -> None:
    for path, body in (("/v1/completions", {"prompt": "x", "infill": {"workspace_snippets": snippets}}),
                       ("/api/generate", {"prompt": "x", "infill": {"workspace_snippets": snippets}}),
                       ("/infill", {"prompt": "x", "infill": {"workspace_snippets": snippets}})):
        answer = client.post(path, json=body)
        assert answer.status_code == 400, (path, answer.text)
        error = answer.json()["error"]
        message = error if isinstance(error, str) else error["message"]
        assert "workspace_snippets" in message and says in message, (path, message)


def test_the_parsers_agree_without_a_server() -> None:
    """The same rules in every dialect's pure parser; `workspace_drafts` stays a knob, not a path."""
    infill = {"workspace_snippets": SNIPPETS, "workspace_drafts": False, "constrained": False}
    openai = api.parse_completion_request(api.json.dumps({"prompt": "a", "infill": infill}).encode(), max_request_tokens=64)
    generate = ollama.parse_generate_request(api.json.dumps({"prompt": "a", "infill": infill}).encode(), max_request_tokens=64)
    fill = llama.parse_infill_request(api.json.dumps({"prompt": "a", "infill": infill}).encode(), max_request_tokens=64)
    for parsed in (openai, generate.completion, fill.completion):
        assert parsed.settings["workspace_drafts"] is False
        assert list(parsed.workspace().buffers.values()) == SNIPPETS
    assert api.parse_completion_request(b'{"prompt": "a"}', max_request_tokens=64).workspace() is None


def test_every_dialect_says_the_middle_is_a_workspace_line(client: httpx.Client, received: list[Any],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """`infill.source`: "workspace" when the middle is a line of the snippets kept as is,
    "model" otherwise; no `origin` over HTTP: snippets are excerpts, whose line numbers are
    not their files' (the client that sent them names the place: infill_lsp/remote.py).
    The accept rule keeps every draft here (ACCEPT 0): the test is about the fields."""
    import engine.drafts as drafts_module

    monkeypatch.setattr(drafts_module, "ACCEPT", 0.0)
    knobs = {"constrained": False, "workspace_snippets": SNIPPETS[1:]}
    openai = client.post("/v1/completions", json={"prompt": "total = ", "suffix": "\nprint(total)\n", "max_tokens": 32,
                                                   "infill": {"language": "python", **knobs}}).json()
    generate = client.post("/api/generate", json={"model": "", "prompt": "total = ", "suffix": "\nprint(total)\n", "stream": False,
                                                  "options": {"num_predict": 32}, "infill": knobs}).json()
    infill = client.post("/infill", json={"input_prefix": "", "prompt": "total = ", "input_suffix": "\nprint(total)\n",
                                          "n_predict": 32, "infill": knobs}).json()
    assert (openai["choices"][0]["text"], generate["response"], infill["content"]) == ("scale(price, rate)",) * 3
    for figures in (openai["infill"], generate["infill"], infill["infill"]):
        assert figures["source"] == "workspace" and "origin" not in figures
    assert all(w.excerpts for w in received) and received[0].drafts("total = ", "\nprint(total)\n")[0].origin == ""
    plain = client.post("/v1/completions", json={"prompt": "x = ", "max_tokens": 2, "infill": {"constrained": False}}).json()
    assert plain["infill"]["source"] == "model" and "origin" not in plain["infill"]
