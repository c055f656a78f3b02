"""The playground in headless Chromium: type code, infill at the cursor, watch the
denoising render pass by pass, and check the text that lands in the editor.

Needs Debian's chromium and the pinned `playwright` package: scripts/setup_browser_tests.sh
installs both (never `playwright install`, which downloads browsers and fails offline).
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

import engine
from lab.fixtures.tiny_model import make_tiny_model_dir
from infill_lsp.live.server import LiveConfig, LiveServer
from lab.fixtures.live_server import ServerThread

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
if not os.path.exists(CHROMIUM):
    pytest.skip("Chromium is not installed (run scripts/setup_browser_tests.sh)", allow_module_level=True)

from playwright.sync_api import Page, sync_playwright  # noqa: E402  (a declared test dependency)

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
MAX_TOKENS = 16
TYPED_PREFIX = "def add(a, b):\n    return "
TYPED_SUFFIX = "\n\nprint(add(1, 2))\n"

# Records every rendering of the live canvas: how many step frames it reflects and how many
# positions it shows masked. Installed before the request, so no rendering is missed.
RECORD_RENDERS = """() => {
  const view = document.getElementById('canvas');
  window.__renders = [];
  new MutationObserver(() => {
    window.__renders.push({steps: Number(view.dataset.steps || 0),
                           masked: view.querySelectorAll('.tok.masked').length,
                           tokens: view.querySelectorAll('.tok').length});
  }).observe(view, {childList: true, subtree: true, characterData: true});
}"""


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[Any, LiveServer]]:
    with tempfile.TemporaryDirectory(prefix="infill-live-browser-") as tmp:
        eng = engine.load(model_dir=str(make_tiny_model_dir(Path(tmp) / "model")))
        # The tiny model's passes take well under a millisecond: the server coalesces step
        # frames the client has not been sent yet (infill_lsp/live/outbox.py), and a busy
        # machine merged every pass of a request into one frame (no intermediate canvas to
        # see). A pass here takes 20 ms more, so each step frame is sent before the next.
        eng.model.blocks[0].register_forward_pre_hook(lambda module, args: time.sleep(0.02))
        with ServerThread(eng, LiveConfig(port=0)) as server:
            yield eng, server


@pytest.fixture()
def page(tmp_path: Path) -> Iterator[Page]:
    with sync_playwright() as pw:
        # A persistent context is how Playwright takes a fresh --user-data-dir of our own.
        context = pw.chromium.launch_persistent_context(str(tmp_path / "profile"), executable_path=CHROMIUM,
                                                        headless=True, args=FLAGS)
        try:
            yield context.pages[0] if context.pages else context.new_page()
        finally:
            context.close()


def test_playground_shows_denoising_live_and_applies_the_result(served: tuple[Any, LiveServer], page: Page) -> None:
    eng, server = served
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(server.playground_url)
    page.wait_for_selector("body[data-state=ready]", timeout=30_000)
    assert page.locator("#model").inner_text() == server.model_name

    editor = page.locator("#editor")
    editor.fill("")
    editor.click()
    page.keyboard.type(TYPED_PREFIX + TYPED_SUFFIX)
    # Put the cursor back after "return ", where the infill should land.
    page.evaluate(f"() => {{ const e = document.getElementById('editor'); "
                  f"e.setSelectionRange({len(TYPED_PREFIX)}, {len(TYPED_PREFIX)}); }}")
    page.locator("#max-tokens").fill(str(MAX_TOKENS))
    page.evaluate(RECORD_RENDERS)
    editor.press("Control+Enter")
    page.wait_for_selector("body[data-state=done]", timeout=60_000)

    renders = page.evaluate("() => window.__renders")
    intermediate = [r for r in renders if r["steps"] >= 1 and r["masked"] > 0]
    assert len({r["steps"] for r in intermediate}) >= 2, f"fewer than two intermediate frames rendered: {renders}"
    assert intermediate[0]["masked"] > intermediate[-1]["masked"], "masked positions did not resolve over the passes"
    step_lines = page.locator("#steps li").all_inner_texts()
    assert len(step_lines) >= 2 and all(" ms" in line and "tokens" in line for line in step_lines)
    stats = page.locator("#stats").inner_text()
    assert not errors, errors
    # The line's count of passes is the list's (issue 26: "4 passes" over a list of 3, the
    # context's encoding counted as a pass): each item is one pass, or says how many merged.
    listed = sum(int(line.split("(")[-1].split()[0]) if "passes merged" in line else 1 for line in step_lines)
    passes = int(stats.split(" tokens in ")[1].split()[0])
    assert passes == listed == int(step_lines[-1].split(":")[0].split()[1]), (stats, step_lines)
    assert "tokens/forward" in stats  # the engine's figure, per forward (the encoding included)
    forwards = eng.infill(TYPED_PREFIX, TYPED_SUFFIX, language="python", max_tokens=MAX_TOKENS).forwards
    assert ("context encoding" in stats) == (f"({passes + 1} forwards)" in stats), stats
    assert forwards in (passes, passes + 1)

    # Greedy decoding is deterministic: the engine, asked directly, gives the same middle.
    expected = eng.infill(TYPED_PREFIX, TYPED_SUFFIX, language="python", max_tokens=MAX_TOKENS).middle
    assert editor.input_value() == TYPED_PREFIX + expected + TYPED_SUFFIX
    # The final canvas shows exactly the text inserted, and no pass number is shown twice
    # (a second candidate's passes are numbered on).
    assert "".join(page.locator("#canvas .tok").all_text_contents()) == expected
    numbers = [int(line.split(":")[0].split()[1]) for line in step_lines]
    assert numbers == sorted(set(numbers)), step_lines

    # Here the syntax check cuts the tiny model's last canvas (`ggggggg '__gggggggg`) to the
    # part that parses: the canvas must end showing the cut text, as inserted.
    editor.fill("x = \n")
    page.evaluate("() => document.getElementById('editor').setSelectionRange(4, 4)")
    editor.press("Control+Enter")
    page.wait_for_selector("body[data-state=done]", timeout=60_000)
    cut = eng.infill("x = ", "\n", language="python", max_tokens=MAX_TOKENS).middle
    assert editor.input_value() == "x = " + cut + "\n"
    assert "".join(page.locator("#canvas .tok").all_text_contents()) == cut
