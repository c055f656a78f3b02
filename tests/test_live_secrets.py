"""Secrets of `infill serve`: the token is compared in constant time and never reaches a
log line, a stats answer or an error message, even with the log at DEBUG (where the
websockets library would log request lines and frames)."""
from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from infill_lsp import redaction
from infill_lsp.live import hub as live_hub
from infill_lsp.live.server import LiveConfig, LiveServer

REPO = Path(__file__).resolve().parents[1]
SECRET = "s3cret-Token-4c1d-never-logged"
WRONG = "guess-Token-77aa-also-never-logged"


def test_token_comparison_is_constant_time_and_refuses_anything_else(tiny_engine, monkeypatch) -> None:
    server = LiveServer(tiny_engine, LiveConfig(port=0, token=SECRET))
    calls = []
    real = live_hub.hmac.compare_digest

    def recording(a, b):
        calls.append((type(a), type(b)))
        return real(a, b)

    monkeypatch.setattr(live_hub.hmac, "compare_digest", recording)
    assert server.token_ok(SECRET)
    assert not server.token_ok(SECRET[:-1] + "X")
    assert not server.token_ok("\udc80" + SECRET)  # a lone surrogate from JSON: refused, no exception
    assert not server.token_ok(None) and not server.token_ok(12345)  # type: ignore[arg-type]
    assert calls == [(bytes, bytes)] * 3  # every string comparison went through compare_digest


def test_redaction_filter_scrubs_messages_arguments_and_tracebacks(caplog) -> None:
    redaction.protect(SECRET)
    handler_filter = redaction._FILTER
    record = logging.LogRecord("x", logging.ERROR, __file__, 1, "got %s and %r", (SECRET, {"t": SECRET}), None)
    try:
        raise ValueError(f"bad token {SECRET}")
    except ValueError:
        record.exc_info = sys.exc_info()
    assert handler_filter.filter(record)
    assert SECRET not in record.getMessage() and redaction.REDACTED in record.getMessage()
    assert SECRET not in (record.exc_text or "") and "ValueError" in (record.exc_text or "")


def _start_serve(tmp_path: Path, model: Path, extra: list[str]) -> tuple[subprocess.Popen, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), str(REPO)) if p)
    env["OMP_NUM_THREADS"] = "1"
    out, err = open(tmp_path / "serve.out", "wb"), open(tmp_path / "serve.err", "wb")
    process = subprocess.Popen([sys.executable, "-m", "infill_lsp.cli", "serve", "--model", str(model), "--port", "0",
                                "--log-level", "DEBUG", *extra], stdout=out, stderr=err, env=env, cwd=str(tmp_path))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        match = re.search(r"websocket:\s+(ws://\S+)", (tmp_path / "serve.out").read_text())
        if match:
            return process, match.group(1)
        assert process.poll() is None, (tmp_path / "serve.err").read_text()
        time.sleep(0.1)
    raise TimeoutError("infill serve did not start")


async def _a_session_that_uses_tokens(ws_url: str, token: str) -> None:
    async with connect(ws_url) as ws:
        assert json.loads(await ws.recv())["type"] == "hello"
        await ws.send(json.dumps({"type": "open", "session": "a", "token": token, "protocol": 1,
                                  "text": "def f(x):\n    return \n", "language": "python"}))
        assert json.loads(await ws.recv())["type"] == "opened"
        await ws.send(json.dumps({"type": "infill", "session": "a", "id": 1, "settings": {"max_tokens": 3},
                                  "range": {"start": {"line": 1, "character": 11}, "end": {"line": 1, "character": 11}}}))
        while json.loads(await asyncio.wait_for(ws.recv(), 120))["type"] not in ("result", "error"):
            pass
        await ws.send(json.dumps({"type": "stats"}))  # whatever the server answers, it has no token in it
        await ws.send("{not json " + token)  # an error message quoting the bad frame must not quote the token
        await ws.send(json.dumps({"type": "open", "session": "b", "token": token, "protocol": 99, "text": "x"}))
        for _ in range(3):
            frame = await asyncio.wait_for(ws.recv(), 60)
            assert token not in frame, frame
    for guess in (WRONG, token + "x", token[:-1]):  # wrong tokens are secrets too (a typo of the real one)
        async with connect(ws_url) as ws:
            await ws.recv()
            await ws.send(json.dumps({"type": "open", "session": "c", "token": guess, "protocol": 1, "text": "x"}))
            try:
                while True:
                    frame = await asyncio.wait_for(ws.recv(), 60)
                    assert guess not in frame
            except ConnectionClosed as closed:
                assert closed.rcvd is not None and closed.rcvd.code == 4001
                assert guess not in closed.rcvd.reason


@pytest.mark.slow
@pytest.mark.parametrize("given", [True, False], ids=["--token", "generated"])
def test_a_session_that_used_the_token_leaves_it_in_no_log(tmp_path: Path, tiny_model_dir: Path, given: bool) -> None:
    process, ws_url = _start_serve(tmp_path, tiny_model_dir, ["--token", SECRET] if given else [])
    try:
        token = SECRET if given else re.search(r"token:\s+(\S+)", (tmp_path / "serve.out").read_text()).group(1)
        asyncio.run(_a_session_that_uses_tokens(ws_url, token))
        http_base = ws_url.replace("ws://", "http://").rsplit("/", 1)[0]
        for path in (f"/?token={token}", f"/{token}", f"/ws?token={token}"):  # a token pasted into a URL
            try:
                urllib.request.urlopen(http_base + path, timeout=30).read()
            except OSError:
                pass
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=60)
    out, err = (tmp_path / "serve.out").read_text(), (tmp_path / "serve.err").read_text()
    assert "DEBUG" in err, err[-2000:]  # the log was on, at its most verbose
    for secret in (token, WRONG, token[:-1]):
        assert secret not in err, f"a token in the log: {secret}"
    if given:
        assert token not in out
    else:  # a generated token is in the start banner (the user needs it), and nowhere else
        lines = [line.split(":")[0].strip() for line in out.splitlines() if token in line]
        assert lines == ["playground", "token"], out


def test_playground_keeps_its_strict_content_security_policy(tiny_engine) -> None:
    from lab.fixtures.live_server import ServerThread

    with ServerThread(tiny_engine, LiveConfig(port=0, token=SECRET)) as server:
        base = f"http://127.0.0.1:{server.port}"
        for path in ("/", "/playground.js", "/playground.css", "/missing"):
            try:
                response = urllib.request.urlopen(base + path, timeout=60)
            except urllib.error.HTTPError as error:
                response = error
            with response:
                policy = response.headers["Content-Security-Policy"]
                body = response.read().decode()
            directives = dict((part.split() + [""])[:2] for part in policy.split("; "))
            assert directives["default-src"] == "'none'" and directives["frame-ancestors"] == "'none'", path
            assert "unsafe" not in policy and "*" not in policy and "data:" not in policy, policy
            assert SECRET not in body  # the page never embeds the token (it travels in the URL fragment)
            if path == "/":
                # Nothing inline that the policy would have to allow: no inline script, style or handlers.
                assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", body)
                assert not re.search(r"\son[a-z]+\s*=", body) and "style=" not in body and "<style" not in body
