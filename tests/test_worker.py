"""The engine worker (engine/worker.py): the one thread every server runs model work on.
Fair queueing, supersede, cancel, exactly one outcome per job, and the asyncio bridge."""
from __future__ import annotations

import asyncio
import threading
import time

from engine.worker import EngineWorker, FairQueue, InfillCall, Job, NextEditCall, Outcome

PREFIX, SUFFIX = "def add(a, b):\n    return ", "\n\nprint(add(1, 2))\n"


def job(group: str, key: str, **kw) -> Job:
    return Job(group, key, InfillCall(PREFIX, SUFFIX, settings={"max_tokens": 4, "constrained": False}), **kw)


# -- the queue --------------------------------------------------------------------------------
def test_queue_round_robins_groups_then_keys() -> None:
    queue = FairQueue()
    for key in ("a1", "a2", "a3"):
        queue.put(job("A", key))
    queue.put(job("B", "b1"))
    order = [queue.take(timeout=0).key for _ in range(4)]  # type: ignore[union-attr]
    # One turn for B after A's first job, although A has three keys waiting.
    assert order == ["a1", "b1", "a2", "a3"]
    assert queue.take(timeout=0) is None


def test_a_newer_job_replaces_the_queued_one_in_place() -> None:
    queue = FairQueue()
    first = job("A", "s")
    queue.put(first)
    queue.put(job("A", "t"))
    newer = job("A", "s")
    assert queue.put(newer) is first
    assert len(queue) == 2
    assert queue.take(timeout=0) is newer
    assert queue.withdraw("A", "t") is not None and len(queue) == 0
    assert queue.close() == []
    assert queue.take() is None  # closed: the worker thread ends


# -- the worker --------------------------------------------------------------------------------
class SlowEngine:
    """Engine-shaped: streams one step per 20 ms pass until cancelled or `passes` done.
    While `release` is not set a run does not end by itself, however many passes it has
    made: a test that needs a request still running when it supersedes or cancels it does
    not race the engine (a loaded machine can take longer than a run's passes to get there)."""

    def __init__(self, passes: int = 50, held: bool = False) -> None:
        self.passes = passes
        self.calls: list[str] = []
        self.running = threading.Event()
        self.release = threading.Event()
        if not held:
            self.release.set()

    def stream(self, prefix, suffix, language=None, cancel=None, *, cross_file="", **settings):
        from engine.types import DenoiseStep, InfillResult

        self.calls.append(prefix)
        self.running.set()
        step = 0
        while True:
            step += 1
            if cancel is not None and cancel.is_set():
                yield DenoiseStep(step, [], [], step, 0.0, InfillResult("", 0, step, 0.0, "cancelled"))
                return
            time.sleep(0.02)
            yield DenoiseStep(step, ["x"], [], step, 0.0)
            if step >= self.passes and self.release.is_set():
                break
        yield DenoiseStep(step, ["x"], [], step, 0.0, InfillResult("x", 1, step, 1.0, "end_of_middle"))

    def next_edit(self, document, cursor, history=None, language=None, cancel=None, **limits):
        return {"document": document, "cursor": cursor, "limits": limits}


def collect(worker: EngineWorker, j: Job) -> list[Outcome]:
    outcomes: list[Outcome] = []
    j.on_done = outcomes.append
    worker.submit(j)
    return outcomes


def wait_for(predicate, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def test_supersede_stops_the_running_request_and_the_newer_one_runs() -> None:
    engine = SlowEngine(held=True)  # the old request runs until something stops it
    worker = EngineWorker(engine)
    try:
        old = job("lsp", "doc", cancel=worker.supersede("lsp", "doc"))
        old_outcomes = collect(worker, old)
        assert engine.running.wait(60)
        new = job("lsp", "doc", cancel=worker.supersede("lsp", "doc"))
        assert old.cancel.is_set() and not new.cancel.is_set()
        engine.release.set()  # after the cancel: the old run ends cancelled, the new one ends by itself
        new_outcomes = collect(worker, new)
        wait_for(lambda: new_outcomes)
        assert len(old_outcomes) == 1 and old_outcomes[0].cancelled and old_outcomes[0].started
        # A held run ends only when cancelled: a result at all shows the supersede stopped it.
        assert old_outcomes[0].result.stop_reason == "cancelled"
        assert len(new_outcomes) == 1 and new_outcomes[0].result.middle == "x" and not new_outcomes[0].cancelled
    finally:
        worker.close()
        worker.join(5)


def test_a_queued_request_superseded_or_cancelled_never_reaches_the_engine() -> None:
    engine = SlowEngine(passes=5, held=True)  # the blocker runs until everything below is queued
    worker = EngineWorker(engine)
    try:
        blocker = collect(worker, job("A", "busy"))
        assert engine.running.wait(60)
        queued = collect(worker, job("B", "s", cancel=worker.supersede("B", "s")))
        replaced_by = collect(worker, job("B", "s", cancel=worker.supersede("B", "s")))
        cancelled = collect(worker, job("C", "t"))
        worker.cancel("C", "t")
        engine.release.set()
        wait_for(lambda: blocker and replaced_by)
        assert queued == [Outcome(cancelled=True)]  # told once, never started
        assert cancelled == [Outcome(cancelled=True)]
        assert replaced_by[0].started and replaced_by[0].result.middle == "x"
        assert len(engine.calls) == 2  # the blocker and the newest of B's requests
    finally:
        worker.close()
        worker.join(5)


def test_engine_errors_come_back_as_outcomes_and_the_thread_goes_on(tiny_engine) -> None:
    worker = EngineWorker(tiny_engine)
    try:
        bad = collect(worker, Job("g", "k", InfillCall("", "")))  # nothing to complete around
        worse = collect(worker, Job("g", "k2", InfillCall("x = ", "\n", settings={"block_size": 0})))
        good = collect(worker, job("g", "k3"))
        wait_for(lambda: bad and worse and good)
        from engine.types import InfillError, SettingsError

        assert isinstance(bad[0].error, InfillError) and bad[0].result is None
        assert isinstance(worse[0].error, SettingsError) and worse[0].error.name == "block_size"
        assert good[0].result is not None and good[0].error is None and good[0].result.forwards >= 1
    finally:
        worker.close()
        worker.join(5)


def test_run_from_asyncio_and_a_cancelled_task_stops_the_model() -> None:
    engine = SlowEngine(held=True)  # the job runs until the cancelled task stops it
    worker = EngineWorker(engine)

    async def scenario() -> tuple[Outcome, list[Outcome]]:
        finished = await worker.run(Job("g", "ne", NextEditCall("abc", 1, limits={"mode": "replay"})))
        seen: list[Outcome] = []
        cancel = threading.Event()
        task = asyncio.ensure_future(worker.run(job("g", "k", cancel=cancel), on_outcome=seen.append))
        assert await asyncio.to_thread(engine.running.wait, 60)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        deadline = time.monotonic() + 60
        while not seen and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        return finished, seen

    try:
        finished, seen = asyncio.run(scenario())
    finally:
        worker.close()
        worker.join(5)
    assert finished.result == {"document": "abc", "cursor": 1, "limits": {"mode": "replay"}}
    assert len(seen) == 1 and seen[0].cancelled and seen[0].result.stop_reason == "cancelled"
