"""The one request path of every front end (infill_lsp/request_path.py): the error mapping
and each surface's rendering of it, the lifecycle rules (supersede, debounce, run, stale,
hang-up) and the bridge from the engine worker's thread to asyncio.

Fake jobs throughout: a fake runner for the lifecycle, and for the bridge a real
EngineWorker over an engine-shaped object that waits on events, so no verdict depends on
timing."""
from __future__ import annotations

import asyncio
import threading
from typing import Any, Callable, Hashable, Optional

import pytest

from engine.types import DenoiseStep, InfillError, InfillResult, ModelFailure, SettingsError
from engine.worker import EngineWorker, InfillCall, Outcome
from infill_lsp.engine_host import EngineUnavailable as HostsUnavailable
from infill_lsp.live import protocol as p
from infill_lsp.live.http_rules import api_error
from infill_lsp.live.connection import _ERROR_CODES
from infill_lsp.request_path import (
    INTERNAL_MESSAGE, STEP_BACKLOG, EngineUnavailable, ErrorCode, InFlight, Lane, Request, UserError, user_error)

CALL = InfillCall("def f():\n    return ", "\n", settings={"max_tokens": 4})
RESULT = InfillResult("1", 1, 2, 3.0, "end_of_middle")


# -- the error mapping ---------------------------------------------------------------------------
@pytest.mark.parametrize("ended, code, status, retryable", [
    (InfillError("the prefix and suffix are both empty"), ErrorCode.REFUSED, 400, False),
    (SettingsError("max_tokens must be in [1, 2048]", "max_tokens"), ErrorCode.REFUSED, 400, False),
    (ModelFailure("out_of_memory", "the model ran out of memory on this request"), ErrorCode.MODEL_FAILED, 503, True),
    (ModelFailure("timeout", "a forward pass timed out"), ErrorCode.MODEL_FAILED, 503, True),
    (ModelFailure("error", "the engine failed on this request (KeyError)"), ErrorCode.MODEL_ERROR, 500, False),
    (EngineUnavailable("cannot load the model from /nowhere"), ErrorCode.UNAVAILABLE, 503, True),
    (Outcome(cancelled=True), ErrorCode.CANCELLED, 503, True),
    (Outcome(started=True), ErrorCode.INTERNAL, 500, False),  # a run that never produced a result
])
def test_each_way_a_job_ends_maps_to_one_typed_error(ended: Any, code: ErrorCode, status: int, retryable: bool) -> None:
    failure = user_error(ended)
    assert failure is not None and failure.code is code and failure.http_status == status
    assert failure.retryable is retryable and failure.message
    if isinstance(ended, Exception):  # the user reads the error's own sentence
        assert failure.message == str(ended) and failure.cause is ended
        assert user_error(Outcome(error=ended, started=True)) == failure  # the same from an outcome


def test_a_bug_reaches_the_user_without_its_internals_and_a_result_is_no_error() -> None:
    bug = KeyError("secret_table_name")
    failure = user_error(bug)
    assert failure.code is ErrorCode.INTERNAL and failure.message == INTERNAL_MESSAGE and failure.cause is bug
    assert "secret" not in failure.message
    assert user_error(Outcome(result=RESULT, started=True)) is None
    assert HostsUnavailable is EngineUnavailable  # the LSP's hosts raise the request path's error


def test_each_surface_renders_every_error_code() -> None:
    # The HTTP API: an OpenAI error object with the request path's status.
    rendered = {code: api_error(UserError(code, "m")) for code in ErrorCode}
    assert {code: (e.status, e.code, e.kind) for code, e in rendered.items()} == {
        ErrorCode.REFUSED: (400, "engine_refused", "invalid_request_error"),
        ErrorCode.MODEL_FAILED: (503, "model_failed", "server_error"),
        ErrorCode.MODEL_ERROR: (500, "internal_error", "server_error"),
        ErrorCode.UNAVAILABLE: (503, "model_unavailable", "server_error"),
        ErrorCode.CANCELLED: (503, "cancelled", "server_error"),
        ErrorCode.INTERNAL: (500, "internal_error", "server_error"),
    }
    assert all(e.body()["error"]["message"] == "m" for e in rendered.values())
    # The live protocol: an error frame code (what has none of its own is internal).
    assert {code: _ERROR_CODES.get(code, p.E_INTERNAL) for code in ErrorCode} == {
        ErrorCode.REFUSED: p.E_ENGINE, ErrorCode.MODEL_FAILED: p.E_MODEL_FAILED, ErrorCode.MODEL_ERROR: p.E_INTERNAL,
        ErrorCode.UNAVAILABLE: p.E_INTERNAL, ErrorCode.CANCELLED: p.E_INTERNAL, ErrorCode.INTERNAL: p.E_INTERNAL}


def test_the_language_server_renders_them_as_log_lines_and_counts() -> None:
    from infill_lsp.server import InfillServer

    server = InfillServer()
    logged: list[str] = []
    server.tell_log = lambda message, *args, **kwargs: logged.append(message)  # type: ignore[method-assign]
    try:
        assert server.report_failure("completion", InfillError("empty")).code is ErrorCode.REFUSED
        server.report_failure("next edit", ModelFailure("out_of_memory", "out of memory"))
        server.report_failure("completion", ModelFailure("error", "a pass failed"))
        server.report_failure("next edit", KeyError("k"))
    finally:
        server.engine.close()
    assert logged == ["no completion: empty", "no next edit: out of memory", "no completion: a pass failed",
                      "next edit failed: KeyError: 'k'"]
    counts = server.stats.snapshot()["counts"]
    assert counts["model_failures"] == 1 and counts["errors"] == 2


# -- the lifecycle --------------------------------------------------------------------------------
class FakeRunner:
    """Runner-shaped: supersede per key; `run` answers with `outcome`, or waits on `gate`."""

    def __init__(self, outcome: Optional[Outcome] = None) -> None:
        self.outcome = outcome
        self.tokens: dict[Hashable, threading.Event] = {}
        self.gate: Optional[asyncio.Future[Outcome]] = None
        self.started = asyncio.Event()

    def supersede(self, key: Hashable) -> threading.Event:
        older, self.tokens[key] = self.tokens.get(key), threading.Event()
        if older is not None:
            older.set()
        return self.tokens[key]

    async def run(self, key: Hashable, call: Any, cancel: threading.Event,
                  on_outcome: Optional[Callable[[Outcome], None]] = None) -> Outcome:
        self.started.set()
        outcome = await self.gate if self.gate is not None else self.outcome
        assert outcome is not None
        if on_outcome is not None:
            on_outcome(outcome)
        return outcome


def answer_of(outcome: Outcome, still_current: bool = True) -> Any:
    async def scenario() -> Any:
        async with Request(FakeRunner(outcome), "doc") as request:
            return await request.run(CALL, still_current=lambda: still_current)

    return asyncio.run(scenario())


def test_run_says_how_the_request_ended() -> None:
    assert answer_of(Outcome(result=RESULT, started=True)).status == "ok"
    assert answer_of(Outcome(result=RESULT, started=True)).result is RESULT
    assert answer_of(Outcome(cancelled=True)).status == "superseded"  # replaced before the model ran
    stopped = InfillResult("", 0, 1, 1.0, "cancelled")
    assert answer_of(Outcome(result=stopped, started=True, cancelled=True)).status == "cancelled"
    stale = answer_of(Outcome(result=RESULT, started=True), still_current=False)
    assert stale.status == "stale" and stale.result is RESULT
    with pytest.raises(ModelFailure):  # the job's error is raised, for the surface to map
        answer_of(Outcome(error=ModelFailure("timeout", "timed out"), started=True))


def test_a_newer_request_supersedes_an_older_one_waiting_in_its_debounce() -> None:
    async def scenario() -> tuple[bool, bool, bool]:
        runner = FakeRunner()
        older = Request(runner, "doc")
        waiting = asyncio.ensure_future(older.debounce(20))
        newer = Request(runner, "doc")  # before the older one's debounce can end
        other = Request(runner, "other document")
        return await waiting, await newer.debounce(0), await other.debounce(0)

    assert asyncio.run(scenario()) == (False, True, True)


@pytest.mark.parametrize("superseded_first", [False, True])
def test_a_client_cancel_stops_the_model_and_is_counted_once_unless_superseded(superseded_first: bool) -> None:
    async def scenario() -> tuple[bool, list[str]]:
        runner = FakeRunner()
        runner.gate = asyncio.get_running_loop().create_future()  # the model never answers
        hung_up: list[str] = []

        async def one_request() -> None:
            async with Request(runner, "doc", on_hang_up=lambda: hung_up.append("doc")) as request:
                await request.run(CALL, still_current=lambda: True)

        task = asyncio.ensure_future(one_request())
        await runner.started.wait()
        token = runner.tokens["doc"]
        if superseded_first:
            runner.supersede("doc")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return token.is_set(), hung_up

    stopped, hung_up = asyncio.run(scenario())
    assert stopped and hung_up == ([] if superseded_first else ["doc"])


# -- the bridge ------------------------------------------------------------------------------------
class GatedEngine:
    """Engine-shaped: streams `steps` steps, then waits for `gate` (or a cancel) to finish."""

    def __init__(self, steps: int = 3) -> None:
        self.steps = steps
        self.gate = threading.Event()
        self.running = threading.Event()

    def stream(self, prefix, suffix, language=None, cancel=None, *, cross_file="", **settings):
        self.running.set()
        for step in range(1, self.steps + 1):
            yield DenoiseStep(step, [str(step)], [], step, 0.0)
        while not self.gate.wait(0.005):
            if cancel is not None and cancel.is_set():
                yield DenoiseStep(self.steps, [], [], self.steps, 0.0, InfillResult("", 0, self.steps, 1.0, "cancelled"))
                return
        yield DenoiseStep(self.steps, [], [], self.steps, 0.0, InfillResult("done", 1, self.steps, 1.0, "end_of_middle"))


def with_worker(engine: GatedEngine, scenario: Callable[[EngineWorker], Any]) -> Any:
    worker = EngineWorker(engine, name="test-request-path")
    try:
        return asyncio.run(scenario(worker))
    finally:
        engine.gate.set()
        worker.close()
        worker.join(10)


def test_steps_then_one_outcome_reach_the_loop_in_order() -> None:
    engine = GatedEngine(steps=3)

    async def scenario(worker: EngineWorker) -> list[Any]:
        flight = Lane(worker, "g").submit("k", CALL, steps=True)
        events = [await flight.next() for _ in range(3)]
        engine.gate.set()
        events.append(await flight.next())
        assert flight.finished and (await flight.outcome()) is events[-1][1]
        return events

    events = with_worker(engine, scenario)
    assert [kind for kind, _ in events] == ["step", "step", "step", "done"]
    assert [step.canvas for _, step in events[:3]] == [["1"], ["2"], ["3"]]
    assert events[-1][1].result.middle == "done"


def test_a_slow_reader_gets_the_newest_steps_not_a_backlog() -> None:
    engine = GatedEngine(steps=STEP_BACKLOG + 20)
    engine.gate.set()

    async def scenario(worker: EngineWorker) -> list[Any]:
        flight = Lane(worker, "g").submit("k", CALL, steps=True)
        await flight.outcome()  # every step is queued by now: they are delivered before the outcome
        events = [await flight.next()]
        while events[-1][0] == "step":
            events.append(await flight.next())
        return events

    events = with_worker(engine, scenario)
    steps = [step.step for kind, step in events if kind == "step"]
    assert len(steps) <= STEP_BACKLOG + 1 and steps[-1] == STEP_BACKLOG + 20 and steps == sorted(steps)


def test_a_newer_job_for_the_same_key_cancels_the_running_one() -> None:
    engine = GatedEngine(steps=1)

    async def scenario(worker: EngineWorker) -> tuple[Outcome, Outcome]:
        lane = Lane(worker, "g")
        older = lane.submit("k", CALL)
        await asyncio.to_thread(engine.running.wait, 10)
        newer = lane.submit("k", CALL)  # supersedes: the older one stops at its next pass
        first = await older.outcome()
        engine.gate.set()
        return first, await newer.outcome()

    first, second = with_worker(engine, scenario)
    assert first.cancelled and first.result.stop_reason == "cancelled"
    assert not second.cancelled and second.result.middle == "done"


def test_callbacks_run_on_the_loop_and_the_bookkeeping_hook_on_the_worker_thread() -> None:
    engine = GatedEngine(steps=2)
    engine.gate.set()

    async def scenario(worker: EngineWorker) -> list[tuple[str, str]]:
        seen: list[tuple[str, str]] = []
        done = asyncio.Event()

        def on_event(flight: InFlight, kind: str, payload: Any) -> None:
            seen.append((kind, threading.current_thread().name))
            if kind == "done":
                done.set()

        Lane(worker, "g").submit("k", CALL, steps=True, on_event=on_event,
                                 on_finished=lambda outcome: seen.append(("finished", threading.current_thread().name)))
        await done.wait()
        return seen

    seen = with_worker(engine, scenario)
    on_loop = [kind for kind, thread in seen if thread == threading.current_thread().name]
    assert on_loop == ["step", "step", "done"]
    assert ("finished", "test-request-path") in seen  # the hook ran on the worker thread, before "done" was handed over
    assert seen.index(("finished", "test-request-path")) < [kind for kind, _ in seen].index("done")


def test_an_awaiter_that_gives_up_stops_the_model_and_the_outcome_is_still_counted() -> None:
    engine = GatedEngine(steps=1)

    async def scenario(worker: EngineWorker) -> tuple[Optional[Outcome], Outcome, Outcome]:
        lane = Lane(worker, "g")
        hung_up = asyncio.get_running_loop().create_future()
        flight = lane.submit("k", CALL)
        await asyncio.to_thread(engine.running.wait, 10)
        hung_up.set_result(None)  # the client left
        gave_up = await flight.outcome_or(hung_up)
        flight.cancel()
        counted = asyncio.get_running_loop().create_future()
        engine.running.clear()
        task = asyncio.ensure_future(lane.run("k2", CALL, lane.supersede("k2"), on_outcome=counted.set_result))
        outcome = await flight.outcome()
        await asyncio.to_thread(engine.running.wait, 10)  # k2 runs now
        task.cancel()  # a cancelled awaiter sets the job's cancel; on_outcome still sees the run
        with pytest.raises(asyncio.CancelledError):
            await task
        return gave_up, outcome, await asyncio.wait_for(counted, 60)

    gave_up, outcome, counted = with_worker(engine, scenario)
    assert gave_up is None and outcome.cancelled and outcome.result.stop_reason == "cancelled"
    assert counted.cancelled and counted.result.stop_reason == "cancelled"
