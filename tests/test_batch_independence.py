"""A batch line's answer does not depend on what else is in the batch, nor on how busy
the machine is (issue 35, item 9): the same batch gives the same lines twice, a line
alone gives what it gives inside a batch of other lines, and a request's deadline counts
its own work, not the passes of the requests batched with it.

No verdict depends on the machine's speed: the deadline test runs on a fake clock that
moves only while one request works."""
from __future__ import annotations

import hashlib
import io
import json
import time
import types

import pytest

import engine.api
import engine.job
import engine.request
import engine.batching
import engine.sampler
from engine.batching import BatchRunner
from infill_lsp.batch import run_batch
from tests.test_compute_dtype import BOTH_DTYPES

# Lines of one file, so that each line's context shares a long token prefix with the
# others' (a batch line once built on the previous line's cached context), and settings
# that make tiny canvases (fewer rows than a packed pass gives the same sums for).
FILE = "".join(f"def f{i}(a, b):\n    x{i} = a * {i} + b\n    return x{i}\n\n" for i in range(12))
LINES = [
    {"id": f"l{n}", "prefix": FILE[: FILE.index(f"    x{n} =") + 4], "suffix": FILE[FILE.index(f"    x{n} =") + 4 :], "language": "python", **extra}
    for n, extra in [(1, {}), (3, {"max_tokens": 3}), (4, {}), (6, {"constrained": False}), (7, {"max_tokens": 2}), (9, {}), (10, {"max_tokens": 5})]
]
TIMINGS = ("ms", "work_ms")


def _batch(lines, model_dir, max_batch=None) -> list[dict]:
    out = io.StringIO()
    assert run_batch(io.StringIO("".join(json.dumps(line) + "\n" for line in lines)), out, model_dir=model_dir, max_batch=max_batch) == 0
    return [{k: v for k, v in json.loads(row).items() if k not in TIMINGS} for row in out.getvalue().splitlines()]


def test_the_same_batch_answers_the_same_and_a_line_alone_answers_as_in_the_batch(tiny_model_dir):
    first = _batch(LINES, tiny_model_dir)
    assert all("error" not in row for row in first)
    assert _batch(LINES, tiny_model_dir) == first
    assert _batch(LINES, tiny_model_dir, max_batch=2) == first  # lines join as others leave
    assert _batch(list(reversed(LINES)), tiny_model_dir) == list(reversed(first))
    for line, in_batch in zip(LINES, first):
        assert _batch([line], tiny_model_dir) == [in_batch], line["id"]


def _logits_per_pass(monkeypatch) -> dict[str, list[str]]:
    """Each request's logits, pass by pass (a digest of their bytes), keyed by its prefix:
    every pass the sampler runs, those replayed from drafted canvases computed beside
    another (engine/lookahead.py) too."""
    seen: dict[str, list[str]] = {}
    advance = engine.sampler.Denoising.advance

    def recording(self, logits, **kwargs):
        seen.setdefault(self.prefix, []).append(hashlib.sha1(logits.contiguous().numpy().tobytes()).hexdigest())
        return advance(self, logits, **kwargs)

    monkeypatch.setattr(engine.sampler.Denoising, "advance", recording)
    return seen


@pytest.fixture(scope="module", params=BOTH_DTYPES)
def tiny_engine_in(request, tiny_model_dir):
    """The tiny model in each compute dtype (engine/precision.py `compute_dtype`), whatever this
    CPU would pick by itself."""
    return engine.api.load(tiny_model_dir, dtype=request.param)


def test_a_requests_logits_in_a_batch_are_bit_for_bit_its_solo_ones(tiny_engine_in, monkeypatch):
    tiny_engine = tiny_engine_in
    seen = _logits_per_pass(monkeypatch)
    runner = BatchRunner(tiny_engine, max_batch=8)
    settings = {line["id"]: {k: v for k, v in line.items() if k in ("max_tokens", "constrained")} for line in LINES}
    for n, line in enumerate(LINES):
        runner.submit(tiny_engine.job(line["prefix"], line["suffix"], "python", cache_key=("batch", n), **settings[line["id"]]))
    while runner.has_work():
        runner.run_pass()
    batched = dict(seen)
    seen.clear()
    for n, line in enumerate(LINES):
        solo = BatchRunner(tiny_engine, max_batch=1)
        solo.submit(tiny_engine.job(line["prefix"], line["suffix"], "python", cache_key=("alone", n), **settings[line["id"]]))
        while solo.has_work():
            solo.run_pass()
    assert batched.keys() == seen.keys()
    assert all(len(v) > 1 for v in batched.values())
    for prefix, digests in batched.items():
        assert digests == seen[prefix], prefix[-30:]


class FakeClock:
    """time.perf_counter on a clock that moves only when told to."""

    def __init__(self) -> None:
        self.now = 1000.0

    def perf_counter(self) -> float:
        return self.now

    def __getattr__(self, name):
        return getattr(time, name)


def test_a_deadline_counts_the_requests_own_work_not_its_batch_mates(tiny_engine, monkeypatch):
    clock = FakeClock()
    for module in (engine.job, engine.batching, engine.sampler):
        monkeypatch.setattr(module, "time", clock)
    slow_prefix = "for i in range(10):\n    if i % 2 == 0:\n        "
    advance = engine.request.InfillRun.advance

    def advance_slowly(self, logits):  # this request's own passes take 100 s each
        if self.request.healing.user_prefix(self.request.around.prefix) == slow_prefix:
            clock.now += 100.0
        return advance(self, logits)

    monkeypatch.setattr(engine.request.InfillRun, "advance", advance_slowly)
    settings = {"max_tokens": 24, "allow_end": False, "constrained": False}
    quick = ("def add(a, b):\n    return ", "\n\nprint(add(1, 2))\n")
    alone = tiny_engine.infill(*quick, **settings)
    # It runs to max_tokens (the tiny model's text there is a loop, answered empty: engine/degenerate.py).
    assert alone.stop_reason in ("max_tokens", "degenerate") and alone.forwards > 2

    runner = BatchRunner(tiny_engine, max_batch=4)
    slow = runner.submit(tiny_engine.job(slow_prefix, "\n", cache_key="slow", **settings))
    fast = runner.submit(tiny_engine.job(*quick, cache_key="fast", **settings))
    while runner.has_work():
        runner.run_pass()
    # The slow request's own work passed its deadline (60 s) in its first pass: it stops there...
    assert slow.wait().stop_reason == "deadline" and slow.wait().forwards == 1
    assert slow.wait().work_ms >= 60_000
    # ...while the request beside it, whose own work took no time on this clock, runs to
    # its end and answers as it does alone (with a wall-clock deadline it was cut at its
    # second pass: 100 s had passed since it started).
    result = fast.wait()
    assert (result.middle, result.stop_reason, result.forwards) == (alone.middle, alone.stop_reason, alone.forwards)
    assert result.work_ms == 0.0


def test_a_batch_builds_each_requests_syntax_window_once_however_big_the_windows(tiny_engine, monkeypatch):
    """Real files' windows (10-200 kB each) outgrew the window cache's byte budget: a
    batched pass asks about every request in turn, so each check found its window pushed
    out and parsed it again (on 80 real lines, 493 builds instead of 80). A request in
    flight holds its window (TreeSitterConstraint.hold), so the cache finds it."""
    import grammars
    import grammars.window

    monkeypatch.setattr(grammars.constraint_for("python")._windows, "_max_bytes", 1)  # room for one window only
    builds = []
    build = grammars.window.Window.build.__func__

    def counting(cls, spec, prefix, suffix):
        builds.append((prefix[-20:], suffix[:20]))
        return build(cls, spec, prefix, suffix)

    monkeypatch.setattr(grammars.window.Window, "build", classmethod(counting))
    runner = BatchRunner(tiny_engine, max_batch=8)
    tickets = [runner.submit(tiny_engine.job(line["prefix"] + "\n", line["suffix"], "python", cache_key=("held", n), max_tokens=24, allow_end=False))
               for n, line in enumerate(LINES[:4])]
    while runner.has_work():
        runner.run_pass()
    assert all(ticket.wait().forwards > 2 for ticket in tickets)  # several passes, each with its checks
    assert len(builds) == len(set(builds)) == 4


def test_batches_on_one_engine_share_no_context_and_leave_none_behind(tiny_engine, monkeypatch):
    """In one process (an evaluation calling run_batch again and again), a batch's lines
    must not build on an earlier batch's contexts: the last line's context was left in
    the engine (the worker ended before dropping it) under a key the next batch reused."""
    import engine

    monkeypatch.setattr(engine, "load", lambda *args, **kwargs: tiny_engine)
    first = _batch(LINES, None)
    assert not [key for key in tiny_engine.contexts.keys() if isinstance(key[0], tuple) and key[0][0] == "batch"]
    for line, in_batch in zip(LINES, first):
        assert _batch([line], None) == [in_batch], line["id"]
