"""One settings schema (engine.types: SamplerSettings' fields, checked by check_knob):
the LSP configuration, the live protocol, the batch contract and Engine.infill give the
same verdict on the same knob."""
from __future__ import annotations

import json

import pytest

from engine.types import SamplerSettings, SettingsError, check_knobs, client_knobs
from infill_lsp.batch import BadLine, parse_line
from infill_lsp.config import check_sampler_overrides
from infill_lsp.live import protocol as p

CASES = [  # (knob, value, accepted)
    ("max_tokens", 8, True),
    ("max_tokens", 0, True),
    ("max_tokens", -1, False),
    ("max_tokens", 1.5, False),
    ("max_tokens", True, False),
    ("max_tokens", 100_000, False),
    ("constrained", False, True),
    ("constrained", 1, False),
    ("constrained", "yes", False),
    ("temperature", 0.5, True),
    ("temperature", 1, True),
    ("temperature", float("nan"), False),
    ("temperature", -0.1, False),
    ("confidence_threshold", 1.01, False),
    ("block_size", 0, False),
    ("copy_weight", 0.3, True),
    ("nonsense", 1, False),
]


def lsp_accepts(name: str, value: object) -> bool:
    known, problems = check_sampler_overrides({name: value})
    assert bool(known) != bool(problems)
    return bool(known)


def live_accepts(name: str, value: object) -> bool:
    try:
        p.parse_settings({name: value}, session="s", request_id=1, max_request_tokens=4096)
    except p.ProtocolError as error:
        assert error.code == p.E_BAD_SETTINGS
        return False
    return True


def batch_accepts(name: str, value: object) -> bool:
    try:
        parse_line(json.dumps({"id": 1, "prefix": "a", "suffix": "b", name: value}))
    except BadLine:
        return False
    return True


def engine_accepts(name: str, value: object) -> bool:
    try:
        SamplerSettings().replace(**{name: value})
    except SettingsError:
        return False
    return True


@pytest.mark.parametrize("name, value, accepted", CASES)
def test_every_front_end_gives_the_schemas_verdict(name: str, value: object, accepted: bool) -> None:
    assert engine_accepts(name, value) is accepted
    assert lsp_accepts(name, value) is accepted
    if name in client_knobs(SamplerSettings) or name == "nonsense":
        assert live_accepts(name, value) is accepted
    if name in ("max_tokens", "constrained") and value == value:  # JSON has no NaN to send
        assert batch_accepts(name, value) is accepted


def test_front_ends_narrow_who_may_set_what_but_never_the_rules() -> None:
    # Context sizes bound the work a request costs: a live client may not set them.
    assert not live_accepts("context_tokens", 512) and engine_accepts("context_tokens", 512)
    # A live server caps max_tokens lower than the schema does.
    with pytest.raises(p.ProtocolError, match="max_tokens"):
        p.parse_settings({"max_tokens": 65}, session="s", request_id=1, max_request_tokens=64)
    # The batch contract carries max_tokens and constrained; other fields of a line are data.
    assert parse_line(json.dumps({"id": 1, "prefix": "a", "suffix": "b", "temperature": 9}))[1] == {"prefix": "a", "suffix": "b", "language": None, "workspace": None, "filename": None}


def test_errors_name_the_knob_and_stay_short() -> None:
    with pytest.raises(SettingsError) as info:
        check_knobs(SamplerSettings, {"seed": ["v"] * 100_000})
    assert info.value.name == "seed" and len(str(info.value)) < 200
    assert check_knobs(SamplerSettings, {"copy_weight": 1}) == {"copy_weight": 1.0}  # ints become floats for float knobs
