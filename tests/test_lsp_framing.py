"""LSP base-protocol framing: the header is capped, the decoder resynchronises on the next
valid header, and no input ends the server (infill_lsp/framing.py, transport.py).

The cases are the framing errors an outside fuzzer found: two ended pygls' reader
(a 10^11 length: MemoryError; a 5,000-digit length: ValueError), ten more left it
swallowing input, the next valid message included.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from infill_lsp.framing import Frame, FrameDecoder, FramingError
from lab.fixtures.lsp_client import LspClient

REPO = Path(__file__).resolve().parents[1]


def _message(message_id: int) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": message_id, "method": "infill/stats"}).encode()


def _framed(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


BODY = _message(7)
# name -> (bytes sent before a valid message, is it accepted as a message itself?)
CASES: dict[str, tuple[bytes, bool]] = {
    "huge length": (b"Content-Length: 100000000000\r\n\r\n" + BODY, False),
    "5000-digit length": (b"Content-Length: " + b"9" * 5000 + b"\r\n\r\n" + BODY, False),
    "lower-case name": (b"content-length: %d\r\n\r\n" % len(BODY) + BODY, True),
    "LF-only lines": (b"Content-Length: %d\n\n" % len(BODY) + BODY, True),
    "no space after colon": (b"Content-Length:%d\r\n\r\n" % len(BODY) + BODY, True),
    "two spaces after colon": (b"Content-Length:  %d\r\n\r\n" % len(BODY) + BODY, True),
    "missing blank line": (b"Content-Length: %d\r\n" % len(BODY) + BODY, False),
    "non-numeric length": (b"Content-Length: twelve\r\n\r\n" + BODY, False),
    "negative length": (b"Content-Length: -12\r\n\r\n" + BODY, False),
    "body with no header": (BODY, False),
    "binary junk": (bytes(range(256)) * 3, False),
    "header line over the cap": (b"X-Junk: " + b"a" * 20_000 + b"\r\n", False),
    "length larger than the body": (b"Content-Length: %d\r\n\r\n" % (len(BODY) + 50) + BODY, False),
    "header without Content-Length": (b"Content-Type: application/json\r\n\r\n" + BODY, False),
    # Junk without a line break glued to the next header reads as a header "PContent-Length".
    "junk glued to the next header": (b"P", False),
    # The lie ends inside the next message's header: "...Conte" + "nt-Length: 52".
    "length ending inside the next header": (b"Content-Length: %d\r\n\r\n" % (len(BODY) + 8) + BODY + b"junk", False),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("chunk", [1, 7, 1 << 20])
def test_decoder_resynchronises_on_the_next_valid_message(name: str, chunk: int) -> None:
    bad, accepted = CASES[name]
    after = _framed(_message(99))
    data = bad + after
    decoder = FrameDecoder(max_header_bytes=8192, max_body_bytes=1 << 20)
    events = []
    for start in range(0, len(data), chunk):
        events += decoder.feed(data[start:start + chunk])
    frames = [e.body for e in events if isinstance(e, Frame)]
    errors = [e for e in events if isinstance(e, FramingError)]
    assert frames[-1] == _message(99), events  # the valid message after the bad bytes is never lost
    if accepted:
        assert frames == [BODY, _message(99)] and not errors
    else:
        assert errors, f"{name}: no framing error reported"
        assert _message(99) in frames and len(frames) <= 2
    assert len(decoder._buffer) < 8192 + (1 << 20)


def test_decoder_memory_stays_bounded_on_endless_junk() -> None:
    decoder = FrameDecoder(max_header_bytes=1024, max_body_bytes=1 << 16)
    errors = 0
    for _ in range(2000):
        errors += len(decoder.feed(os.urandom(4096).replace(b"\n", b" ")))
        assert len(decoder._buffer) <= 1024 + 4096
    assert errors >= 1
    assert decoder.feed(_framed(_message(1))) == [Frame(_message(1))]


def test_decoder_refuses_an_oversized_body_without_buffering_it() -> None:
    decoder = FrameDecoder(max_header_bytes=1024, max_body_bytes=1000)
    body = json.dumps({"jsonrpc": "2.0", "method": "x", "params": {"text": "y" * 50_000}}).encode()
    events = decoder.feed(_framed(body)[:30_000])
    assert len(events) == 1 and isinstance(events[0], FramingError) and "limit" in events[0].problem
    assert len(decoder._buffer) <= 200
    assert decoder.feed(_framed(body)[30_000:] + _framed(_message(3))) == [Frame(_message(3))]


def _server_env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), str(REPO)) if p)
    return env


def test_server_survives_every_framing_error_and_answers_the_next_message(tmp_path: Path) -> None:
    # No model is needed: infill/stats answers without one (nothing here sends 'initialized').
    client = LspClient([sys.executable, "-m", "infill_lsp"], stderr_path=tmp_path / "err", cwd=str(tmp_path),
                       env=_server_env())
    try:
        client.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}}, timeout=60)
        for index, name in enumerate(sorted(CASES)):
            bad, _ = CASES[name]
            client.send_bytes(bad)
            answer = client.request("infill/stats", timeout=30)  # framed correctly, right behind the junk
            assert "counts" in answer, name
            assert client.process.poll() is None, f"the server died on {name}"
        logs = [m["params"]["message"] for m in client.messages("window/logMessage")]
        mistakes = [line for line in logs if "client error" in line]
        assert len(mistakes) >= sum(1 for _, accepted in CASES.values() if not accepted)
        assert any("100,000,000,000" in line for line in mistakes)
    finally:
        code = client.close()
    stderr = (tmp_path / "err").read_text()
    assert "Traceback" not in stderr, stderr[-3000:]
    assert code == 0


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_decoder_keeps_every_well_framed_message_of_fuzz_traffic(seed: int) -> None:
    """The fuzzer's traffic (lab/fuzz/traffic.py), framing errors included, fed in random
    chunks: every message that is framed correctly comes out, in order."""
    import random

    from lab.fuzz.traffic import Traffic

    traffic = Traffic(seed, {})
    outgoing = [traffic.initialize(), *traffic.open_all()]
    for _ in range(6000):
        out = traffic.step()
        outgoing += [out] + [traffic.state_check(uri) for uri in out.changed]
    expected = []
    for out in outgoing:
        if out.kind.startswith("framing:"):
            if out.expects:  # a lenient spelling: its body must come out
                expected.append(out.data.split(b"\n\n" if b"\r\n\r\n" not in out.data else b"\r\n\r\n", 1)[1])
            continue
        data = out.data
        while data:  # one or more well-framed messages
            head, _, rest = data.partition(b"\r\n\r\n")
            length = int(head.split(b":")[1])
            expected.append(rest[:length])
            data = rest[length:]
    stream = b"".join(out.data for out in outgoing)
    rng = random.Random(seed)
    decoder = FrameDecoder()
    frames, position = [], 0
    while position < len(stream):
        size = rng.choice((1, 2, 13, 97, 4096, 65536))
        frames += [e.body for e in decoder.feed(stream[position:position + size]) if isinstance(e, Frame)]
        position += size
    found = iter(frames)
    missing = [body[:80] for body in expected if not any(frame == body for frame in found)]
    assert not missing, missing[:3]
