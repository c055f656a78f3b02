"""`infill complete --server URL` asks a running `infill serve` instead of loading the model
(issue 35, item 8: the load, mostly `import torch`, was most of a CLI call's wall time).

Verdicts are about what the call did, never how long it took: the CLI process must not
import torch, and its answer must be the one the same model gives in-process."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from infill_lsp.live.server import LiveConfig
from lab.fixtures.live_server import ServerThread

TOKEN = "complete-server-test-token"
SOURCE = "def add(a, b):\n    return \n\n\nprint(add(1, 2))\n"

# The CLI in a fresh interpreter, then whether it imported torch (a JSON line on stderr's last line).
RUN_CLI = textwrap.dedent("""
    import json, sys
    from infill_lsp import cli
    code = cli.main(sys.argv[1:])
    print(json.dumps({"code": code, "torch": "torch" in sys.modules}), file=sys.stderr)
""")


def _complete(args: list[str], env_extra: dict[str, str]) -> tuple[dict, dict, str]:
    import os

    env = {k: v for k, v in os.environ.items() if k not in ("INFILL_SERVER", "INFILL_TOKEN")}
    out = subprocess.run([sys.executable, "-c", RUN_CLI, "complete", *args], capture_output=True, text=True, timeout=300, env={**env, **env_extra})
    status = json.loads(out.stderr.strip().splitlines()[-1])
    return json.loads(out.stdout) if out.stdout.strip() else {}, status, out.stderr


def test_complete_asks_a_running_server_and_imports_no_torch(tiny_engine, tiny_model_dir, tmp_path):
    path = tmp_path / "sample.py"
    path.write_text(SOURCE)
    where = [str(path), "--line", "2", "--column", "12", "--max-tokens", "8", "--json"]
    local = tiny_engine.infill("def add(a, b):\n    return ", SOURCE[len("def add(a, b):\n    return "):], filename=str(path), detect_language=True, max_tokens=8)
    tiny_engine.forget_context()
    with ServerThread(tiny_engine, LiveConfig(port=0, token=TOKEN)) as server:
        answer, status, _ = _complete([*where, "--server", server.base_url], {"INFILL_TOKEN": TOKEN})
        assert status == {"code": 0, "torch": False}
        assert answer["server"].startswith("http://127.0.0.1:") and answer["middle"] == local.middle
        assert answer["stop_reason"] == local.stop_reason and answer["language"] == "python"
        # INFILL_SERVER does the same without the flag.
        again, status, _ = _complete(where, {"INFILL_TOKEN": TOKEN, "INFILL_SERVER": server.base_url})
        assert status == {"code": 0, "torch": False} and again["middle"] == local.middle
        # An explicit --model is loaded here, whatever INFILL_SERVER says.
        here, status, _ = _complete([*where, "--model", str(tiny_model_dir)], {"INFILL_TOKEN": TOKEN, "INFILL_SERVER": server.base_url})
        assert status == {"code": 0, "torch": True} and "server" not in here and here["middle"] == local.middle


def test_complete_loads_the_model_here_when_the_server_cannot_answer(tiny_model_dir, tmp_path):
    import socket

    with socket.socket() as free:  # a loopback port nobody listens on
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    path = tmp_path / "sample.py"
    path.write_text(SOURCE)
    answer, status, stderr = _complete([str(path), "--line", "2", "--column", "12", "--max-tokens", "4", "--json", "--server", f"http://127.0.0.1:{port}"],
                                       {"INFILL_SERVER": "", "INFILL_TOKEN": ""})
    assert status["code"] == 0 and status["torch"] and "middle" in answer and "server" not in answer
    assert "cannot reach the server" in stderr and "loading the model here instead" in stderr


# The workspace: a line the current file lacks, which only another file of the folder holds.
LIB = "def total(items):\n    result = compute_old(items)\n    return result\n"
MAIN = "def total(items):\n    result = \n    return result\n"


def test_the_server_verifies_the_drafts_of_the_local_workspace(tiny_engine, tmp_path, monkeypatch):
    """`--workspace DIR --server URL` sent only prefix and suffix, so the server never saw the
    folder's drafts. Now the text around their places travels with the request, and the
    server's middle is the one the same weights give in-process with the folder's index.
    The accept rule keeps every draft here (ACCEPT 0): the test is about what reaches the
    model, not the fitted threshold."""
    import engine.drafts
    from engine.workspace import WorkspaceContext, WorkspaceIndex

    monkeypatch.setattr(engine.drafts, "ACCEPT", 0.0)
    root = tmp_path / "project"
    root.mkdir()
    (root / "lib.py").write_text(LIB)
    path = root / "main.py"
    path.write_text(MAIN)
    cache = tmp_path / "cache"
    prefix = "def total(items):\n    result = "
    index = WorkspaceIndex(root, cache_dir=cache)
    index.refresh()
    local = tiny_engine.infill(prefix, MAIN[len(prefix):], filename=str(path), detect_language=True, max_tokens=32,
                               workspace=WorkspaceContext(index, copy_tables=False))
    tiny_engine.forget_context()
    assert local.draft == "workspace" and local.middle == "compute_old(items)"  # the folder's drafts matter
    assert local.draft_origin == "lib.py:2"
    where = [str(path), "--line", "2", "--column", "14", "--max-tokens", "32", "--json"]
    env = {"INFILL_TOKEN": TOKEN, "INFILL_CACHE_DIR": str(cache)}
    with ServerThread(tiny_engine, LiveConfig(port=0, token=TOKEN)) as server:
        answer, status, _ = _complete([*where, "--workspace", str(root), "--server", server.base_url], env)
        assert status == {"code": 0, "torch": False}
        assert answer["middle"] == local.middle and answer["snippets_sent"] >= 1 and answer["server"]
        # The server saw snippets and names no place; this side's draft with the same text does.
        assert (answer["source"], answer["origin"]) == ("workspace", "lib.py:2")
        alone, status, _ = _complete([*where, "--no-workspace", "--server", server.base_url], env)
        assert status == {"code": 0, "torch": False} and alone["snippets_sent"] == 0
        assert alone["source"] == "model" and "origin" not in alone
        assert alone["middle"] != local.middle  # without the folder the model writes on its own


def test_input_mistakes_answer_before_the_model_loads(tmp_path):
    """A missing --workspace folder (and the other checks of the input) is answered with one
    line before `import torch`, not after seconds of loading the model."""
    path = tmp_path / "sample.py"
    path.write_text(SOURCE)
    where = [str(path), "--line", "2", "--column", "12"]
    for extra, says in (([ "--workspace", str(tmp_path / "missing")], "is not a folder"),
                        (["--max-tokens", "99999"], "max_tokens"),
                        (["--line", "99"], "outside the file")):
        _, status, stderr = _complete([*where, *extra], {"INFILL_CACHE_DIR": str(tmp_path / "cache")})
        assert status == {"code": 2, "torch": False}, stderr
        lines = stderr.strip().splitlines()
        assert len(lines) == 2 and says in lines[0] and "Traceback" not in stderr  # the error, then the wrapper's status
