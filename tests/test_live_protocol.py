"""Unit tests of the live protocol's pure parts: parsing, documents, outbox, limits.
(Scheduling is the engine worker's: tests/test_worker.py.)"""
from __future__ import annotations

import asyncio
import json

import pytest

from infill_lsp.live import protocol as p
from infill_lsp.live.document import Document
from infill_lsp.live.limits import TokenBucket
from infill_lsp.live.outbox import BacklogOverflow, Outbox
from infill_lsp.live.pages import OriginPolicy


def rng(l1: int, c1: int, l2: int, c2: int) -> dict:
    return {"start": {"line": l1, "character": c1}, "end": {"line": l2, "character": c2}}


def code_of(raw: str | bytes) -> str:
    with pytest.raises(p.ProtocolError) as info:
        p.parse_message(raw)
    return info.value.code


# -- parsing ---------------------------------------------------------------------------------

def test_parses_each_message_type() -> None:
    opened = p.parse_message(json.dumps({"type": "open", "session": "a", "token": "t", "protocol": 1,
                                         "text": "x", "language": "python", "settings": {"max_tokens": 8}}))
    assert opened == p.OpenMessage("a", "t", 1, "x", "python", {"max_tokens": 8})
    edit = p.parse_message(json.dumps({"type": "edit", "session": "a", "edits": [{"range": rng(0, 0, 0, 1),
                                                                                   "text": "y"}, {"text": "z"}]}))
    assert isinstance(edit, p.EditMessage) and edit.edits[0].range is not None and edit.edits[1].range is None
    infill = p.parse_message(json.dumps({"type": "infill", "session": "a", "id": "r1", "range": rng(0, 1, 0, 1)}))
    assert isinstance(infill, p.InfillMessage) and infill.request_id == "r1" and infill.settings == {}
    assert p.parse_message('{"type":"cancel","session":"a"}') == p.CancelMessage("a")
    assert p.parse_message('{"type":"close","session":"a"}') == p.CloseMessage("a")


@pytest.mark.parametrize("raw, code", [
    ("{not json", p.E_BAD_JSON),
    ("[" * 100_000, p.E_BAD_JSON),  # deep nesting must not crash the parser
    (b'{"type":"open"}', p.E_BAD_MESSAGE),  # binary frame
    ("[1, 2]", p.E_BAD_MESSAGE),
    ('{"session":"a"}', p.E_BAD_MESSAGE),
    ('{"type":"dance","session":"a"}', p.E_UNKNOWN_TYPE),
    ('{"type":"close","session":"has space"}', p.E_BAD_MESSAGE),
    ('{"type":"open","session":"a","protocol":2,"token":"t"}', p.E_UNSUPPORTED_PROTOCOL),
    ('{"type":"open","session":"a","protocol":true,"token":"t"}', p.E_UNSUPPORTED_PROTOCOL),
    ('{"type":"open","session":"a","protocol":1,"text":5}', p.E_BAD_MESSAGE),
    ('{"type":"open","session":"a","protocol":1,"language":"py thon"}', p.E_BAD_MESSAGE),
    ('{"type":"open","session":"a","protocol":1,"language":"cobol"}', p.E_UNKNOWN_LANGUAGE),
    ('{"type":"edit","session":"a","edits":[]}', p.E_BAD_MESSAGE),
    ('{"type":"infill","session":"a","id":true,"range":null}', p.E_BAD_MESSAGE),
    ('{"type":"infill","session":"a","id":1}', p.E_BAD_MESSAGE),
    (json.dumps({"type": "infill", "session": "a", "id": 1, "range": rng(1, 0, 0, 0)}), p.E_OUT_OF_RANGE),
    (json.dumps({"type": "infill", "session": "a", "id": 1, "range": rng(-1, 0, 0, 0)}), p.E_BAD_MESSAGE),
    (json.dumps({"type": "infill", "session": "a", "id": 1, "range": rng(0, 0, 0, 0),
                 "settings": {"context_tokens": 99999}}), p.E_BAD_SETTINGS),
    (json.dumps({"type": "infill", "session": "a", "id": 1, "range": rng(0, 0, 0, 0),
                 "settings": {"max_tokens": 100000}}), p.E_BAD_SETTINGS),
    ('{"type":"infill","session":"a","id":1,"range":' + json.dumps(rng(0, 0, 0, 0)) +
     ',"settings":{"temperature":NaN}}', p.E_BAD_SETTINGS),
])
def test_refuses_bad_messages_with_their_code(raw: str | bytes, code: str) -> None:
    assert code_of(raw) == code


def test_open_checks_the_language_with_the_engines_one_rule() -> None:
    """Issue 26 (4): an unknown language was accepted and run unconstrained."""
    with pytest.raises(p.ProtocolError) as info:
        p.parse_message('{"type":"open","session":"a","protocol":1,"language":"cobol"}')
    assert info.value.code == p.E_UNKNOWN_LANGUAGE and info.value.session == "a"
    assert "'cobol'" in info.value.message and "python" in info.value.message and "rust" in info.value.message
    opened = p.parse_message('{"type":"open","session":"a","protocol":1,"language":"typescriptreact"}')
    assert isinstance(opened, p.OpenMessage) and opened.language == "tsx"
    assert p.parse_message('{"type":"open","session":"a","protocol":1,"language":null}').language is None


def test_max_tokens_is_capped_by_the_server_limit() -> None:
    raw = json.dumps({"type": "infill", "session": "a", "id": 1, "range": rng(0, 0, 0, 0),
                      "settings": {"max_tokens": 64}})
    assert p.parse_message(raw, max_request_tokens=64).settings == {"max_tokens": 64}
    with pytest.raises(p.ProtocolError):
        p.parse_message(raw, max_request_tokens=32)


def test_commit_order_and_copy_settings_are_accepted_and_type_checked() -> None:
    def infill(settings: dict) -> str:
        return json.dumps({"type": "infill", "session": "a", "id": 1, "range": rng(0, 0, 0, 0), "settings": settings})

    ok = {"order": "left_to_right", "copy_weight": 0.3}
    assert p.parse_message(infill(ok)).settings == ok
    for bad in ({"order": "sideways"}, {"order": 1}, {"copy_weight": 1.5}):
        assert code_of(infill(bad)) == p.E_BAD_SETTINGS


# -- documents -------------------------------------------------------------------------------

def test_document_positions_count_utf16_units() -> None:
    doc = Document("a😀b\nx", max_chars=100)
    assert doc.offset_at(p.Position(0, 3)) == 2  # the emoji is two UTF-16 units, one Python char
    assert doc.offset_at(p.Position(0, 4)) == 3  # end of line 0
    assert doc.offset_at(p.Position(1, 1)) == 5
    with pytest.raises(p.ProtocolError) as info:
        doc.offset_at(p.Position(0, 2))  # inside the surrogate pair
    assert info.value.code == p.E_OUT_OF_RANGE
    for bad in (p.Position(0, 5), p.Position(2, 0), p.Position(1, 2)):
        with pytest.raises(p.ProtocolError):
            doc.offset_at(bad)


def test_document_edits_apply_in_order_and_atomically() -> None:
    doc = Document("hello\nworld", max_chars=20)
    edits = (p.TextEdit(p.Range(p.Position(0, 0), p.Position(0, 5)), "bye"),
             p.TextEdit(p.Range(p.Position(1, 5), p.Position(1, 5)), "!"))
    assert doc.apply(edits) == 1 and doc.text == "bye\nworld!"
    bad = (p.TextEdit(None, "short"), p.TextEdit(p.Range(p.Position(3, 0), p.Position(3, 0)), "x"))
    with pytest.raises(p.ProtocolError):
        doc.apply(bad)
    assert doc.text == "bye\nworld!" and doc.version == 1  # nothing of the failed message applied
    with pytest.raises(p.ProtocolError) as info:
        doc.apply((p.TextEdit(None, "x" * 21),))
    assert info.value.code == p.E_TOO_LARGE


# -- outbox ----------------------------------------------------------------------------------------

def step(session: str, request_id: int, changes: list[tuple[int, str]], canvas: list) -> dict:
    return {"type": "step", "session": session, "id": request_id, "canvas": canvas,
            "changes": [{"position": pos, "text": text, "confidence": 0.5, "kind": "commit"} for pos, text in changes]}


def test_outbox_coalesces_unsent_steps_per_request_and_keeps_others() -> None:
    async def scenario() -> list[dict]:
        box = Outbox(max_backlog=10)
        box.put(step("s", 1, [(0, "a")], ["a", None, None]))
        box.put(step("t", 1, [(0, "x")], ["x"]))
        box.put(step("s", 1, [(1, "b")], ["a", "b", None]))
        box.put(step("s", 1, [(1, "B"), (2, "c")], ["a", "B", "c"]))
        box.put({"type": "result", "session": "s", "id": 1})
        return [await box.get() for _ in range(len(box))]

    frames = asyncio.run(scenario())
    assert [(f["type"], f["session"]) for f in frames] == [("step", "s"), ("step", "t"), ("result", "s")]
    merged = frames[0]
    assert merged["canvas"] == ["a", "B", "c"] and merged["coalesced"] == 2
    assert [(c["position"], c["text"]) for c in merged["changes"]] == [(0, "a"), (1, "B"), (2, "c")]


def test_outbox_overflow_and_dropping_a_cancelled_request() -> None:
    async def scenario() -> None:
        box = Outbox(max_backlog=2)
        box.put(step("s", 1, [(0, "a")], ["a"]))
        box.drop_request("s", 1)
        assert len(box) == 0
        box.put({"type": "queued"})
        box.put({"type": "queued"})
        with pytest.raises(BacklogOverflow):
            box.put({"type": "queued"})

    asyncio.run(scenario())


# -- limits and origins ------------------------------------------------------------------------------

def test_token_bucket_refuses_past_burst_then_refills() -> None:
    now = [0.0]
    bucket = TokenBucket(rate=10.0, burst=3, clock=lambda: now[0])
    assert [bucket.take() for _ in range(4)] == [True, True, True, False]
    assert bucket.retry_after() == pytest.approx(0.1)
    now[0] += 0.1
    assert bucket.take() and not bucket.take()


def test_origin_policy_admits_own_and_configured_origins_only() -> None:
    policy = OriginPolicy.build("127.0.0.1", 8765, ["https://editor.example/"])
    assert policy.allows(None)  # not a browser: the token check decides
    assert policy.allows("http://127.0.0.1:8765") and policy.allows("http://localhost:8765")
    assert policy.allows("https://editor.example")
    assert not policy.allows("http://127.0.0.1:9999")
    assert not policy.allows("http://evil.example:8765")
    assert not policy.allows("null")


def test_errors_do_not_echo_large_client_input() -> None:
    for raw in (json.dumps({"type": "x" * 100_000, "session": "a"}),
                json.dumps({"type": "open", "session": "a", "protocol": "9" * 100_000}),
                json.dumps({"type": "infill", "session": "a", "id": 1, "range": rng(0, 0, 0, 0),
                            "settings": {"k" * 100_000: 1}}),
                json.dumps({"type": "infill", "session": "a", "id": 1, "range": rng(0, 0, 0, 0),
                            "settings": {"seed": ["v"] * 100_000}})):
        with pytest.raises(p.ProtocolError) as info:
            p.parse_message(raw)
        assert len(info.value.message) < 400
