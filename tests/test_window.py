"""The one context window (engine/window.py): what text the model sees, decided by the
engine from the model's trained window, with a budget for cross-file context inside it."""
from __future__ import annotations

import asyncio
from dataclasses import replace

from lsprotocol import types

from engine.context_window import CHARS_PER_TOKEN_BUDGET, CUT_GRID, context_window, cross_file_head, prefix_tail, suffix_head

LINES = "".join(f"value_{i} = {i}\n" for i in range(2000))  # ~30k characters


def test_without_cross_file_the_prefix_gets_the_whole_budget_cut_at_a_line_on_the_grid() -> None:
    window = context_window(LINES, LINES, prefix_tokens=256, suffix_tokens=96)
    budget = int(256 * CHARS_PER_TOKEN_BUDGET)
    assert LINES.endswith(window.prefix) and len(window.prefix) <= budget and window.prefix.startswith("value_")
    cut = len(LINES) - len(window.prefix)
    assert cut >= len(LINES) - budget and LINES[cut - 1] == "\n"
    # The left edge moves in CUT_GRID steps: typing a few characters keeps it in place.
    typed = context_window(LINES + "abc", "", prefix_tokens=256, suffix_tokens=96)
    assert len(LINES + "abc") - len(typed.prefix) == cut
    assert LINES.startswith(window.suffix) and window.suffix.endswith("\n") and len(window.suffix) <= int(96 * CHARS_PER_TOKEN_BUDGET)
    assert window.cross_file == ""


def test_cross_file_context_gets_its_share_and_the_local_prefix_the_rest() -> None:
    cross = "".join(f"# def helper_{i}(x): ...\n" for i in range(100))  # far more than its share
    window = context_window(LINES, "", prefix_tokens=256, suffix_tokens=96, cross_file=cross, cross_file_share=0.25)
    budget = int(256 * CHARS_PER_TOKEN_BUDGET)
    assert window.cross_file and cross.startswith(window.cross_file) and window.cross_file.endswith("\n")
    assert len(window.cross_file) <= budget // 4 + 1
    assert len(window.cross_file) + len(window.prefix) <= budget and len(window.prefix) >= budget // 2
    # A short cross-file block leaves the rest of its share to the local prefix.
    small = context_window(LINES, "", prefix_tokens=256, suffix_tokens=96, cross_file="# x = 1\n", cross_file_share=0.25)
    assert small.cross_file == "# x = 1\n" and len(small.prefix) > len(window.prefix)


def test_window_helpers_keep_whole_lines() -> None:
    assert prefix_tail("short", 100) == "short" and suffix_head("short", 100) == "short"
    assert cross_file_head("# a\n# b\n", 2) == "# a\n"  # 6 characters of budget: the first line only
    assert cross_file_head("# one very long line without an end", 2) == ""
    assert CUT_GRID > 0


def test_the_engine_reads_cross_file_context_then_the_code_before_the_cursor(tiny_engine) -> None:
    tok = tiny_engine.tokenizer
    prefix_ids, suffix_ids = tiny_engine.context_ids(LINES, "tail = 1\n", cross_file="# def helper_zeta(n):\n")
    text = tok.decode(prefix_ids)
    assert text.startswith("# def helper_zeta(n):\n") and text.endswith("value_1999 = 1999\n")
    assert len(prefix_ids) <= tiny_engine.settings.context_tokens
    assert tok.decode(suffix_ids) == "tail = 1\n"
    # Without cross-file context the window is exactly the tail of the prefix.
    plain, _ = tiny_engine.context_ids(LINES, "")
    assert tok.decode(plain).endswith("value_1999 = 1999\n") and "helper" not in tok.decode(plain)


def test_cross_file_context_reaches_the_model_when_the_local_prefix_is_long(tiny_model_dir) -> None:
    """Issue 16 item 7. The language server used to keep 16,000 characters of prefix
    after its cross-file block, and the engine then kept only its trained window from the
    end: with a long file, the other file's outline never reached the model."""
    from infill_lsp.server import InfillServer

    server = InfillServer(model_dir=str(tiny_model_dir))

    async def scenario() -> list[str]:
        await server.engine.load(str(tiny_model_dir))
        eng = await server.engine.wait_ready()
        seen: list[str] = []
        encode, merged = eng.model.encode_context, eng.model.encode_with_canvas

        def spy(prefix_ids, suffix_ids, reuse=None):
            seen.append(eng.tokenizer.decode(prefix_ids))
            return encode(prefix_ids, suffix_ids, reuse=reuse)

        def merged_spy(prefix_ids, suffix_ids, canvas_ids, reuse=None):  # a new context is encoded in the first pass
            seen.append(eng.tokenizer.decode(prefix_ids))
            return merged(prefix_ids, suffix_ids, canvas_ids, reuse=reuse)

        eng.model.encode_context, eng.model.encode_with_canvas = spy, merged_spy
        helper = "import os\n\ndef helper_zeta(n):\n    return n * 2\n"
        server.documents.open(types.TextDocumentItem(uri="file:///w/helpers.py", language_id="python", version=1, text=helper))
        server.documents.open(types.TextDocumentItem(uri="file:///w/main.py", language_id="python", version=1, text=LINES))
        server.settings = replace(server.settings, debounce_ms=0)
        server.sampler_overrides = {"max_tokens": 2, "constrained": False}
        await server.suggest("file:///w/main.py", types.Position(line=2000, character=0))
        return seen

    try:
        seen = asyncio.run(scenario())
    finally:
        server.engine.close()
    assert seen, "the model never ran"
    assert "def helper_zeta(n):" in seen[-1]  # the other file's outline
    assert seen[-1].endswith("value_1999 = 1999\n")  # and the code right before the cursor
