"""EngineHost keeps a model when a newer load fails (a modelDir that does not exist, a
model directory that disappeared), also when the failure arrives while the first load
is still running."""
from __future__ import annotations

import asyncio
import threading
import time
from types import SimpleNamespace

from infill_lsp import engine_host
from infill_lsp.engine_host import EngineHost, EngineUnavailable


def _fake_loader(monkeypatch, delays: dict, gates: dict | None = None) -> None:
    def load(model_dir):
        time.sleep(delays.get(model_dir, 0))
        if gates and model_dir in gates:
            assert gates[model_dir].wait(60), f"the test never let the load of {model_dir} finish"
        if model_dir and model_dir.startswith("/missing"):
            raise EngineUnavailable(f"model directory {model_dir} does not exist")
        return SimpleNamespace(model_name=f"model from {model_dir}")

    monkeypatch.setattr(engine_host, "_load_engine", load)


def test_a_bad_model_dir_during_the_first_load_keeps_the_first_model(monkeypatch) -> None:
    # The first load finishes only once the bad one has been asked for (not after 0.3 s, which
    # a loaded machine could let pass before the test got to the bad one).
    good_may_finish = threading.Event()
    _fake_loader(monkeypatch, {}, {"good": good_may_finish})

    async def scenario() -> str:
        host = EngineHost()
        first = asyncio.ensure_future(host.load("good"))
        await asyncio.sleep(0)  # the first load is under way
        second = asyncio.ensure_future(host.load("/missing/model"))
        await asyncio.sleep(0)  # the bad one is asked for while the first still loads
        assert not first.done()
        good_may_finish.set()
        try:
            await second
        except EngineUnavailable:
            pass
        await first
        engine = await asyncio.wait_for(host.wait_ready(), 60)
        host.close()
        return engine.model_name

    assert asyncio.run(scenario()) == "model from good"


def test_a_bad_model_dir_later_keeps_serving_the_loaded_model_and_a_good_one_replaces_it(monkeypatch) -> None:
    _fake_loader(monkeypatch, {})

    async def scenario() -> list[str]:
        host = EngineHost()
        await host.load("first")
        names = [(await host.wait_ready()).model_name]
        try:
            await host.load("/missing/model")
        except EngineUnavailable:
            pass
        names.append((await host.wait_ready()).model_name)
        await host.load("second")
        names.append((await host.wait_ready()).model_name)
        host.close()
        return names

    assert asyncio.run(scenario()) == ["model from first", "model from first", "model from second"]


def test_only_failures_leave_no_model_and_say_why(monkeypatch) -> None:
    _fake_loader(monkeypatch, {})

    async def scenario() -> str:
        host = EngineHost()
        try:
            await host.load("/missing/a")
        except EngineUnavailable:
            pass
        try:
            await host.wait_ready()
        except EngineUnavailable as error:
            return str(error)
        finally:
            host.close()
        return "no error"

    assert "does not exist" in asyncio.run(scenario())
