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
