"""What the playground says when it cannot help (issue 35, items 5 and 6).

5. A refused token: the message says where the right token is (the banner printed a
   generated one; with `--token` it printed none), and the page opens its Connection
   section at the token field instead of leaving it collapsed.
6. An empty answer: the result frame carries why (`explanation`, the words `infill
   complete` prints, from infill_lsp/empty_answer.py), the page shows it and, after a
   refusal by the syntax check, the text the model wrote without the check. The preset
   example, with its cursor where the page puts it, gets a real answer from the embedded model.

Server-side checks use the websockets client; the page is driven in headless Chromium
(skipped where Chromium is absent, as tests/test_live_browser.py).
"""
from __future__ import annotations

import asyncio
import json
import os
import shutil
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Iterator

import pytest
from websockets.asyncio.client import connect

import engine
from infill_lsp.empty_answer import LIVE_KNOBS, REFUSED, explain_empty
from infill_lsp.live.server import LiveConfig, LiveServer
from lab.fixtures.live_server import ServerThread

ROOT = Path(__file__).resolve().parents[1]
GIVEN_TOKEN = "given-with-dash-dash-token"
TIMEOUT = 60.0
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
needs_chromium = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Chromium is not installed "
                                    "(run scripts/setup_browser_tests.sh)")


@pytest.fixture(scope="module")
def embedded() -> Any:
    return engine.load()  # the model the page's user gets: its answers are the ones to explain


@pytest.fixture(scope="module")
def given(embedded: Any) -> Iterator[LiveServer]:
    """`infill serve --token GIVEN_TOKEN`: the banner prints no token."""
    with ServerThread(embedded, LiveConfig(port=0, token=GIVEN_TOKEN)) as server:
        yield server


@pytest.fixture(scope="module")
def generated(embedded: Any) -> Iterator[LiveServer]:
    """`infill serve`: a random token, printed in the banner."""
    with ServerThread(embedded, LiveConfig(port=0)) as server:
        yield server


async def _refusal(server: LiveServer, token: Any) -> dict[str, Any]:
    async with connect(server.websocket_url) as ws:
        assert json.loads(await ws.recv())["type"] == "hello"
        await ws.send(json.dumps({"type": "open", "session": "s", "token": token, "protocol": 1, "text": ""}))
        return json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))


def _http_401(server: LiveServer, token: str) -> str:
    request = urllib.request.Request(server.base_url + "/v1/models", headers={"Authorization": f"Bearer {token}"})
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(request, timeout=TIMEOUT)
    assert info.value.code == 401
    return json.loads(info.value.read())["error"]["message"]


def test_a_refused_token_is_told_where_the_right_one_is(given: LiveServer, generated: LiveServer) -> None:
    for token in (None, "not-the-token"):
        frame = asyncio.run(_refusal(given, token))
        assert frame["code"] == "unauthorized", frame
        # With --token the banner printed none: the message must not send the user looking for it.
        assert "printed" not in frame["message"] and "--token" in frame["message"], frame
        assert frame["message"].startswith("missing token" if token is None else "wrong token")
        frame = asyncio.run(_refusal(generated, token))
        assert "printed at start" in frame["message"] and "--token" not in frame["message"], frame
    assert "--token" in _http_401(given, "") and "printed" not in _http_401(given, "nope-nope")
    assert "printed at start" in _http_401(generated, "nope-nope")
    for server in (given, generated):
        assert server.token not in _http_401(server, "")


def test_an_empty_result_frame_says_why(given: LiveServer, embedded: Any) -> None:
    """The preset's end: the embedded model's text there is refused by the syntax check."""
    text = _preset()
    refused = embedded.infill(text, "", language="python", max_tokens=32)
    assert refused.middle == "" and refused.stop_reason in REFUSED, refused

    async def scenario() -> dict[str, Any]:
        async with connect(given.websocket_url) as ws:
            assert json.loads(await ws.recv())["type"] == "hello"
            await ws.send(json.dumps({"type": "open", "session": "s", "token": GIVEN_TOKEN, "protocol": 1,
                                      "text": text, "language": "python"}))
            lines = text.split("\n")
            end = {"line": len(lines) - 1, "character": len(lines[-1])}
            await ws.send(json.dumps({"type": "infill", "session": "s", "id": 1, "range": {"start": end, "end": end},
                                      "settings": {"max_tokens": 32}}))
            while (frame := json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT)))["type"] not in ("result", "error"):
                pass
            return frame

    frame = asyncio.run(scenario())
    assert frame["type"] == "result" and frame["text"] == "", frame
    assert frame["explanation"] == explain_empty(frame["stats"]["stop_reason"], knobs=LIVE_KNOBS)
    assert "syntax check refused" in frame["explanation"]


def _preset() -> str:
    """The playground's preset text, as the browser reads it out of the textarea."""
    html = (ROOT / "infill_lsp" / "static" / "playground.html").read_text(encoding="utf-8")
    body = html.split('<textarea id="editor"', 1)[1].split(">", 1)[1].split("</textarea>", 1)[0]
    return body.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


@pytest.fixture()
def page(tmp_path: Path) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(str(tmp_path / "profile"), executable_path=CHROMIUM,
                                                        headless=True, args=FLAGS)
        try:
            yield context.pages[0] if context.pages else context.new_page()
        finally:
            context.close()


@needs_chromium
def test_the_page_opens_the_token_field_when_the_token_is_missing(given: LiveServer, page: Any) -> None:
    page.goto(given.base_url + "/")  # no #token=: the server was started with --token
    page.wait_for_selector("body[data-state=closed]", timeout=30_000)
    error = page.locator("#error")
    assert error.is_visible()
    message = error.inner_text()
    assert "--token" in message and "printed" not in message, message
    assert "Connection" in message and "token field" in message, message
    assert page.evaluate("document.getElementById('connection').open"), "the Connection section stays collapsed"
    assert page.evaluate("document.activeElement.id") == "token"
    assert page.locator("#token").is_visible()
    # Typing the token there and pressing Connect is all it takes.
    page.locator("#token").fill(GIVEN_TOKEN)
    page.locator("#reconnect").click()
    page.wait_for_selector("body[data-state=ready]", timeout=30_000)
    assert not error.is_visible()


@needs_chromium
def test_the_preset_answers_and_an_empty_answer_is_explained(given: LiveServer, embedded: Any, page: Any) -> None:
    page.goto(f"{given.base_url}/#token={GIVEN_TOKEN}")
    page.wait_for_selector("body[data-state=ready]", timeout=30_000)
    editor = page.locator("#editor")
    text = _preset()
    assert editor.input_value() == text
    # The page puts the cursor in the preset's hole, where the embedded model has a real answer.
    cursor = page.evaluate("document.getElementById('editor').selectionStart")
    expected = embedded.infill(text[:cursor], text[cursor:], language="python", max_tokens=32).middle
    assert expected.strip(), "the preset's hole gets no answer from the embedded model"
    editor.press("Control+Enter")
    page.wait_for_selector("body[data-state=done]", timeout=60_000)
    assert editor.input_value() == text[:cursor] + expected + text[cursor:]
    assert not page.locator("#empty").is_visible()

    # At the end of the preset the syntax check refuses what the model writes: the page says
    # so in the CLI's words and shows the unchecked text, inserting nothing.
    editor.fill(text)
    page.evaluate("() => { const e = document.getElementById('editor'); e.setSelectionRange(e.value.length, e.value.length); }")
    refused = embedded.infill(text, "", language="python", max_tokens=32)
    unchecked = embedded.infill(text, "", language="python", max_tokens=32, constrained=False).middle
    assert refused.middle == "" and refused.stop_reason in REFUSED and unchecked.strip()
    editor.press("Control+Enter")
    page.wait_for_selector("#unchecked-box:not([hidden])", timeout=60_000)
    assert page.locator("#explanation").inner_text() == explain_empty(refused.stop_reason, knobs=LIVE_KNOBS)
    assert page.locator("#unchecked").inner_text().strip() == unchecked.strip()
    assert editor.input_value() == text  # shown, never inserted
    assert page.locator("#stats").inner_text().endswith(refused.stop_reason)
