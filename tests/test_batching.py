"""Continuous batching: requests denoised together give the middles they get alone.

A mix of requests with their own settings (lengths, syntax constraint on and off,
languages), joining at different passes, one cancelled before it starts and one cancelled
mid-way, one that fails; every other middle equals its solo run at temperature 0."""
import threading

import pytest

from engine.batching import BatchRunner
from engine.worker import EngineWorker, InfillCall, Job
from engine.types import InfillError

REQUESTS = [
    ("def add(a, b):\n    return ", "\n\nprint(add(1, 2))\n", "python", {}),
    ("for i in range(10):\n    if i % 2 == 0:\n        ", "\n", "python", {"max_tokens": 12}),
    ("class Point:\n    def __init__(self, x, y):\n        self.x = x\n", "\n", "python", {"constrained": False}),
    ("function add(a, b) {\n  return ", ";\n}\n", "javascript", {"max_tokens": 6, "block_size": 3}),
    ("import os\nimport sys\n\nif __name__ == '__main__':\n    ", "", None, {"max_tokens": 20}),
    ("xs = [1, 2, 3]\nys = [x * 2 for x in ", "]\n", "python", {"candidates": 1}),
]


def _solo(eng, prefix, suffix, language, settings, cancel_after=None):
    cancel = threading.Event()
    steps = []
    for step in eng.stream(prefix, suffix, language, cancel, **settings):
        steps.append(step)
        if cancel_after is not None and len(steps) == cancel_after:
            cancel.set()
    return steps[-1].result


def _fields(result):
    # Not `forwards`: whether the context encoding counts as a pass depends on what the
    # engine's context cache held, i.e. on the order requests were encoded in.
    return (result.middle, result.tokens, result.stop_reason, result.edits, result.vetoed, result.candidates_tried)


def test_batched_middles_equal_solo_ones_for_a_mixed_batch(tiny_engine):
    eng = tiny_engine
    solo = [_solo(eng, *r) for r in REQUESTS]
    solo_cancelled = _solo(eng, *REQUESTS[0], cancel_after=2)
    assert solo_cancelled.stop_reason == "cancelled"

    runner = BatchRunner(eng, max_batch=4)  # fewer slots than requests: some wait to join
    tickets = [runner.submit(eng.job(p, s, lang, **cfg)) for p, s, lang, cfg in REQUESTS]
    early = threading.Event()
    early.set()
    never_started = runner.submit(eng.job(*REQUESTS[1][:3], cancel=early))
    mid = threading.Event()
    seen = []

    def cancel_on_second_step(step):
        seen.append(step)
        if len(seen) == 2:
            mid.set()

    cancelled_mid_way = runner.submit(eng.job(*REQUESTS[0][:3], cancel=mid), on_step=cancel_on_second_step)
    widths = []
    while runner.has_work():
        widths.append(runner.run_pass())
    assert max(widths) == 4  # the batch was full, and never wider than max_batch
    for ticket, expected in zip(tickets, solo):
        assert _fields(ticket.wait()) == _fields(expected)
    assert never_started.wait().stop_reason == "cancelled" and never_started.wait().forwards == 0
    assert _fields(cancelled_mid_way.wait()) == _fields(solo_cancelled)


def test_a_failing_request_fails_alone(tiny_engine):
    eng = tiny_engine
    runner = BatchRunner(eng, max_batch=8)
    good = runner.submit(eng.job(*REQUESTS[0][:3]))
    # A prefix window past the model's position table (2048): its encoding raises, as it
    # does when the request runs alone, and the ticket carries that error.
    bad_request = ("x = 1\n" * 3000, "", "python")
    bad = runner.submit(eng.job(*bad_request, context_tokens=4000))
    while runner.has_work():
        runner.run_pass()
    with pytest.raises(ValueError, match="max_position"):
        eng.infill(*bad_request, context_tokens=4000)
    with pytest.raises(ValueError, match="max_position"):
        bad.wait()
    assert good.wait().middle == _solo(eng, *REQUESTS[0]).middle


def test_bad_settings_are_refused_before_joining(tiny_engine):
    with pytest.raises(InfillError):
        tiny_engine.job("a = ", "", "python", max_tokens=-1)
    with pytest.raises(InfillError):
        tiny_engine.job("a = ", "", "python", no_such_knob=1)


def test_the_engine_worker_batches_jobs_and_reports_each_as_if_alone(tiny_engine):
    """Jobs submitted to the one engine worker together are denoised in shared passes;
    each gets its own steps and outcome, equal to its solo run."""
    eng = tiny_engine
    solo = [_solo(eng, *r) for r in REQUESTS]
    solo_steps = [s.canvas for s in eng.stream(*REQUESTS[1][:3], **REQUESTS[1][3]) if s.result is None]
    worker = EngineWorker(eng, max_batch=8)
    try:
        outcomes, steps, done = {}, [], threading.Semaphore(0)
        for i, (p, s, lang, cfg) in enumerate(REQUESTS):
            job = Job("test", i, InfillCall(p, s, lang, cfg), on_done=lambda outcome, i=i: (outcomes.__setitem__(i, outcome), done.release()))
            if i == 1:
                job.on_step = lambda step: steps.append(step.canvas)
            worker.submit(job)
        for _ in REQUESTS:
            assert done.acquire(timeout=120)
        assert [_fields(outcomes[i].result) for i in range(len(REQUESTS))] == [_fields(r) for r in solo]
        assert all(o.started and not o.cancelled for o in outcomes.values())
        assert steps == solo_steps
        # Shared passes: fewer forward passes than the requests' own passes added up.
        assert worker._runner.passes < sum(r.forwards for r in solo)
    finally:
        worker.close()
        worker.join(30)


def test_keyed_requests_reuse_their_own_context_and_the_cache_is_bounded(tiny_engine, monkeypatch):
    import engine.api

    eng = tiny_engine
    doc_a = "".join(f"a{i} = {i}\n" for i in range(40))
    doc_b = "".join(f"b{i} = {i}\n" for i in range(40))
    runner = BatchRunner(eng, max_batch=4)

    def cached_tokens(prefix, key):
        ticket = runner.submit(eng.job(prefix, "\n", "python", cache_key=key, max_tokens=2))
        while runner.has_work():
            runner.run_pass()
        return ticket.wait().cached_context_tokens

    cached_tokens(doc_a, "A")
    cached_tokens(doc_b, "B")
    typed = cached_tokens(doc_a + "x", "A")  # A types one character after B's request
    assert typed >= len(eng.tokenizer.encode(doc_a)) - 2
    unkeyed = cached_tokens(doc_a + "xy", None)  # reuses only the last request's (A's) cache
    assert unkeyed >= typed - 2
    assert cached_tokens(doc_b + "y", None) < 5  # the last one was A's: nothing in common

    monkeypatch.setattr(eng.contexts, "max_bytes", 1)  # room for one context only
    cached_tokens(doc_b, "B")
    assert eng.contexts.keys() == ["B"]
    assert eng.contexts.keyed_bytes == eng.contexts.bytes_of("B") > 0


def test_loop_inbox_hands_a_pass_worth_of_events_to_the_loop_in_one_wakeup():
    import asyncio

    from engine.worker import LoopInbox

    async def scenario():
        inbox, seen = LoopInbox(), []
        loop = asyncio.get_running_loop()
        inbox.attach(loop)
        wakeups = 0
        original = loop.call_soon_threadsafe

        def counting(callback, *args):
            nonlocal wakeups
            wakeups += callback == inbox._run  # to_thread posts its own result this way too
            return original(callback, *args)

        loop.call_soon_threadsafe = counting  # type: ignore[method-assign]

        def engine_thread():
            for i in range(5):
                inbox.post(seen.append, i)
            inbox.post(lambda: 1 / 0)  # a failing event must not lose the ones after it
            inbox.post(seen.append, 5)
            inbox.wake()  # the worker's after_pass
            inbox.wake()  # a wakeup is already on its way: it takes everything

        await asyncio.to_thread(engine_thread)
        for _ in range(20):
            await asyncio.sleep(0.01)
        return seen, wakeups

    seen, wakeups = asyncio.run(scenario())
    assert seen == [0, 1, 2, 3, 4, 5]
    assert wakeups == 1  # not one per event
