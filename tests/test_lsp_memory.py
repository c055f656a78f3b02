"""What the language server holds stays bounded (docs/reliability.md, "Memory under the
fuzz"): the serving model (a switch to a directory that fails and back does not load a
second copy), a dropped model's memory handed back, and nothing kept per document once it
closes. Structural checks: counts of loads, of live engines and of per-document entries,
never the process's RSS."""
from __future__ import annotations

import asyncio
import threading
import weakref
from pathlib import Path
from types import SimpleNamespace
from typing import Iterator

from engine.types import DenoiseStep
from engine.worker import InfillCall
from infill_lsp import engine_host
from infill_lsp.engine_host import EngineHost, EngineUnavailable


class _FakeEngine:
    """What EngineHost and its worker need of a loaded engine: a name, the directory it came
    from, and a `stream` that answers "1" at once."""

    def __init__(self, model_dir: str) -> None:
        self.model_name = f"model from {model_dir}"
        self.model_dir = Path(model_dir)

    def stream(self, prefix: str, suffix: str, *args, **kwargs) -> Iterator[DenoiseStep]:
        yield DenoiseStep(0, [], [], 0, 0.0, result=SimpleNamespace(middle="1", stop_reason="end"))

    def next_edit(self, *args, **kwargs) -> None:
        return None


def _counting_loader(monkeypatch) -> list[str]:
    """Replace the real load with a fake one; returns the list of directories loaded."""
    loads: list[str] = []

    def load(model_dir: str) -> _FakeEngine:
        if not Path(model_dir).is_dir():
            raise EngineUnavailable(f"model directory {model_dir} does not exist")
        loads.append(model_dir)
        return _FakeEngine(model_dir)

    monkeypatch.setattr(engine_host, "_load_engine", load)
    return loads


def _model_dir(tmp_path: Path, name: str) -> str:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"weights")
    return str(folder)


def test_switching_to_a_missing_model_dir_and_back_keeps_the_loaded_model(tmp_path: Path, monkeypatch) -> None:
    """The fuzz's `modelDir` traffic (a directory that does not exist, then the one before)
    loaded the same model again each time: +43 MB of RSS on the first switch back."""
    loads = _counting_loader(monkeypatch)
    good = _model_dir(tmp_path, "good")

    async def scenario() -> tuple[bool, list[str]]:
        host = EngineHost()
        await host.load(good)
        first = await host.wait_ready()
        for _ in range(5):
            try:
                await host.load(str(tmp_path / "missing"))
            except EngineUnavailable:
                pass
            assert await host.load(good) == f"model from {good}"
        same = await host.wait_ready() is first
        (Path(good) / "model.safetensors").write_bytes(b"retrained weights")  # replaced on disk:
        await host.load(good)  # switching back now is how the user gets the new files
        host.close()
        return same, list(loads)

    same, loaded = asyncio.run(scenario())
    assert same
    assert loaded == [good, good]


def test_a_load_for_the_serving_directory_outdates_a_load_still_running(tmp_path: Path, monkeypatch) -> None:
    """Back to the serving model while another loads: the other one, when it arrives, is not
    installed (as when a newer load outdates an older one): the request the user made last wins."""
    gate = threading.Event()
    first, second = _model_dir(tmp_path, "first"), _model_dir(tmp_path, "second")

    def load(model_dir: str) -> _FakeEngine:
        if model_dir == second:
            assert gate.wait(60), "the test never let the second load finish"
        return _FakeEngine(model_dir)

    monkeypatch.setattr(engine_host, "_load_engine", load)

    async def scenario() -> str:
        host = EngineHost()
        await host.load(first)
        pending = asyncio.ensure_future(host.load(second))
        await asyncio.sleep(0)  # the second load is under way
        back = asyncio.ensure_future(host.load(first))
        await asyncio.sleep(0)
        gate.set()
        await back
        await pending
        name = (await host.wait_ready()).model_name
        host.close()
        return name

    assert asyncio.run(scenario()) == f"model from {first}"


def test_a_dropped_model_hands_its_memory_back(tmp_path: Path, monkeypatch) -> None:
    """Every model swap used to leave the old weights' pages with the allocator (RSS grew by
    up to 55 MB over 12 swaps): once the worker has let go of a swapped-out engine, the
    next request's end hands the freed memory back (`return_freed_memory`, once per swap),
    and only the serving engine stays alive."""
    _counting_loader(monkeypatch)
    released: list[int] = []
    monkeypatch.setattr(engine_host, "return_freed_memory", lambda: released.append(1))
    dirs = [_model_dir(tmp_path, "a"), _model_dir(tmp_path, "b")]
    alive: list[weakref.ref] = []

    async def scenario() -> tuple[int, int]:
        host = EngineHost()
        for swap in range(6):
            await host.load(dirs[swap % 2])
            alive.append(weakref.ref(await host.wait_ready()))
            key = ("completion", "file:///a.py")
            outcome = await host.run(key, InfillCall("x = ", "\n", "python", {}), host.supersede(key))
            assert outcome.result.middle == "1"
        # The loader's one thread runs the trims in order: a load after them waits for them.
        await host.load(_model_dir(tmp_path, "c"))
        host.close()
        return len(released), sum(ref() is not None for ref in alive)

    released_count, alive_count = asyncio.run(scenario())
    assert released_count == 5  # one per model swapped out and freed
    assert alive_count <= 1  # the last one of the six may still be with the worker's runner


def test_return_freed_memory_never_raises() -> None:
    engine_host.return_freed_memory()  # glibc: malloc_trim(0); elsewhere: nothing


def test_closed_documents_leave_nothing_behind(tiny_model_dir: Path) -> None:
    """Everything the server keeps per document (its text, edit history, suggestion cache,
    the worker's cancel tokens, the engine's cached context) is dropped on didClose: an
    editor that opens and closes hundreds of files in a day holds only what is open."""
    from infill_lsp.server import InfillServer

    class Sink:
        def write(self, data: bytes) -> None:
            pass

        def close(self) -> None:
            pass

    async def settle() -> None:  # every handler and model call done (the tiny model: well under a second each)
        for _ in range(3000):
            if len(asyncio.all_tasks()) <= 1 and server.engine.worker.pending() == 0:
                break
            await asyncio.sleep(0.01)

    server = InfillServer()

    async def run() -> tuple[dict[str, int], dict[str, int]]:
        protocol = server.protocol
        protocol.set_writer(Sink())

        def send(message: dict) -> None:
            protocol.handle_message(protocol.structure_message({"jsonrpc": "2.0", **message}))

        send({"id": 0, "method": "initialize", "params": {"processId": None, "rootUri": None, "capabilities": {}}})
        await server.engine.load(str(tiny_model_dir))
        uris = [f"file:///project/module{number}.py" for number in range(60)]
        for number, uri in enumerate(uris):
            send({"method": "textDocument/didOpen", "params": {"textDocument": {
                "uri": uri, "languageId": "python", "version": 1, "text": f"def f{number}(x):\n    return x\n"}}})
            send({"method": "textDocument/didChange", "params": {"textDocument": {"uri": uri, "version": 2},
                  "contentChanges": [{"range": {"start": {"line": 1, "character": 11}, "end": {"line": 1, "character": 12}},
                                      "text": "x + 1"}]}})
            send({"id": number + 1, "method": "textDocument/inlineCompletion", "params": {
                "textDocument": {"uri": uri}, "position": {"line": 1, "character": 15}, "context": {"triggerKind": 1}}})
        await settle()
        engine = await server.engine.wait_ready()
        opened = _sizes(server, engine)
        for uri in uris:
            send({"method": "textDocument/didClose", "params": {"textDocument": {"uri": uri}}})
        await settle()
        for _ in range(500):  # the worker drops forgotten contexts on its thread, when nudged
            if not engine.contexts.keys():
                break
            await asyncio.sleep(0.01)
        return opened, _sizes(server, engine)

    try:
        opened, closed = asyncio.run(run())
    finally:
        server.engine.close()
    # While open, the documents hold state (the test sees what it checks)...
    assert opened["documents"] == opened["edit histories"] == 60
    assert opened["cached contexts"] == 60  # (cancel tokens live only while a request does)
    # ...and none of it outlives didClose.
    assert closed == dict.fromkeys(closed, 0)


def _sizes(server, engine) -> dict[str, int]:
    return {
        "documents": len(server.documents),
        "edit histories": len(server.edit_history._documents),
        "suggestion caches": len(server.completions._cache._by_uri),
        "cancel tokens": len(server.engine.worker._tokens),
        "cached contexts": len(engine.contexts.keys()),
    }
