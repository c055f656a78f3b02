"""The seams' Protocols (engine/protocols.py) are what their implementations provide:
every member each Protocol names exists on the class, of the same kind (method,
coroutine, property), accepting the Protocol's parameters by name."""
from __future__ import annotations

import inspect
import typing

import pytest

from engine.api import Engine
from engine.job import InfillJob
from engine.protocols import BatchingEngine, BatchJob, ModelHost, StreamingEngine
from infill_lsp.engine_host import EngineHost
from infill_lsp.remote import RemoteEngineHost


def missing(protocol: type, cls: type) -> list[str]:
    """The Protocol's members that `cls` lacks or defines incompatibly."""
    problems = []
    for name in sorted(typing._get_protocol_attrs(protocol)):  # type: ignore[attr-defined]
        wanted = inspect.getattr_static(protocol, name, None)
        have = inspect.getattr_static(cls, name, None)
        if not callable(wanted) and not isinstance(wanted, property):
            continue  # a data member: set in __init__, checked on instances below
        if have is None:
            problems.append(f"{name}: missing")
        elif isinstance(wanted, property) != isinstance(have, property):
            problems.append(f"{name}: property on one side only")
        elif callable(wanted):
            if inspect.iscoroutinefunction(wanted) != inspect.iscoroutinefunction(have):
                problems.append(f"{name}: async on one side only")
            got = inspect.signature(have).parameters
            takes_any = any(p.kind is p.VAR_KEYWORD for p in got.values())
            for param in inspect.signature(wanted).parameters.values():
                if param.kind in (param.VAR_KEYWORD, param.VAR_POSITIONAL):
                    continue
                if param.name not in got and not takes_any:
                    problems.append(f"{name}: no parameter {param.name!r}")
    return problems


@pytest.mark.parametrize("protocol, cls", [
    (StreamingEngine, Engine), (BatchingEngine, Engine), (BatchJob, InfillJob),
    (ModelHost, EngineHost), (ModelHost, RemoteEngineHost),
])
def test_each_seam_is_implemented_as_its_protocol_says(protocol: type, cls: type) -> None:
    assert missing(protocol, cls) == []


def test_the_check_sees_a_missing_method_and_a_renamed_parameter() -> None:
    class Partial:
        def stream(self, prefix, suffix, lang=None, cancel=None, *, cross_file="", filename=None, detect_language=False):  # 'language' renamed
            return iter(())

    assert missing(StreamingEngine, Partial) == ["next_edit: missing", "stream: no parameter 'language'"]


def test_a_loaded_engine_batches_and_a_streaming_only_one_does_not(tiny_engine) -> None:
    assert isinstance(tiny_engine, BatchingEngine)

    class OnlyStreams:
        def stream(self, *args, **kw):
            return iter(())

        def next_edit(self, *args, **kw):
            return None

    assert not isinstance(OnlyStreams(), BatchingEngine)
