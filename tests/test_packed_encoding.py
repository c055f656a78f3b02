"""Batched context encoding: the first passes of several requests (each encoding its new
context with its first canvases) packed into one forward, beside other requests' canvases
over their cached contexts (`InfillTransformer.encode_with_canvas_many`, engine/batching.py).

The rule is the batch's (docs/batching.md, "Same middles as alone"): a request's encoded
context and logits in a packed forward are bit for bit what it gets alone (`torch.equal`,
in both compute dtypes), and so are its middles; the context cache is kept and reused as
alone."""
from __future__ import annotations

import hashlib

import pytest
import torch

import engine.api
import engine.batching
import engine.sampler
from engine.batching import PACKED_MIN_ROWS, BatchRunner, _groups, _Rows, packed_max_rows
from tests.test_compute_dtype import BOTH_DTYPES

# Lines of one file: their contexts share a long prefix, as real lines of a file do.
FILE = "".join(f"def f{i}(a, b):\n    x{i} = a * {i} + b\n    return x{i}\n\n" for i in range(12))


def _line(n: int) -> tuple[str, str]:
    at = FILE.index(f"    x{n} =") + 4
    return FILE[:at], FILE[at:]


def _kv(context) -> list[torch.Tensor]:
    return [t for layer in context.layers for t in (layer.prefix_k, layer.prefix_v, layer.suffix_k, layer.suffix_v)]


def _same_context(a, b) -> bool:
    return a.prefix_ids == b.prefix_ids and a.suffix_ids == b.suffix_ids and all(torch.equal(x, y) for x, y in zip(_kv(a), _kv(b), strict=True))


@pytest.fixture(scope="module", params=BOTH_DTYPES)
def eng(request, tiny_model_dir):
    """The tiny model in each compute dtype, whatever this CPU would pick by itself."""
    return engine.api.load(tiny_model_dir, dtype=request.param)


def _ids(eng, n: int) -> tuple[list[int], list[int]]:
    return eng.context_ids(*_line(n))


def _canvases(b: int, n: int, seed: int) -> torch.Tensor:
    return torch.randint(3, 60, (b, n), generator=torch.Generator().manual_seed(seed))


def test_a_packed_encoding_is_bit_for_bit_each_requests_solo_one(eng):
    """New contexts (one with drafted canvases beside its first, one building on a cached
    prefix, one on a cached suffix and prefix, one with no suffix) and canvases over
    cached contexts, in one forward: each context and each logit is the solo pass's."""
    model = eng.model
    p1, s1 = _ids(eng, 1)
    p2, s2 = _ids(eng, 2)
    p3, s3 = _ids(eng, 3)
    p4, _ = _ids(eng, 4)
    older = model.encode_context(p2[: len(p2) - 7], s2[:5])  # a cached context: its prefix start still holds
    same_suffix = model.encode_context(p3[: len(p3) - 3], s3)  # the suffix unchanged: reused whole
    encodes = [
        (p1, s1, _canvases(1, 8, 1), None),
        (p2, s2, _canvases(3, 8, 2), older),
        (p3, s3, _canvases(2, 16, 3), same_suffix),
        (p4, [], _canvases(1, 8, 4), None),
    ]
    cached = [model.encode_context(*_ids(eng, n)) for n in (5, 6)]
    canvases = [_canvases(1, 8, 5)[0], _canvases(1, 24, 6)[0]]
    firsts, others = model.encode_with_canvas_many(encodes, cached, canvases)
    assert len(firsts) == len(encodes) and len(others) == len(cached)
    tolerance = 1e-4 if model.embed.weight.dtype == torch.float32 else 5e-2
    for (prefix, suffix, rows, reuse), (context, logits) in zip(encodes, firsts):
        # What it computes: the two calls' (encode the context, then a canvas pass), up to rounding...
        apart = model.encode_context(prefix, suffix, reuse=reuse)
        torch.testing.assert_close(logits, model.canvas_logits(apart, rows), atol=tolerance, rtol=tolerance)
        for a, b in zip(_kv(context), _kv(apart), strict=True):
            torch.testing.assert_close(a, b, atol=tolerance, rtol=tolerance)
        # ...and bit for bit what the request's first pass computes alone.
        solo_context, solo_logits = model.encode_with_canvas(prefix, suffix, rows, reuse=reuse)
        assert logits.shape == solo_logits.shape == (*rows.shape, model.cfg.vocab_size)
        assert torch.equal(logits, solo_logits)
        assert _same_context(context, solo_context)
        # ...and the passes after it read the same keys: the same logits again.
        later = _canvases(1, rows.shape[1], 9)
        assert torch.equal(model.canvas_logits(context, later), model.canvas_logits(solo_context, later))
    for context, ids, logits in zip(cached, canvases, others):
        assert torch.equal(logits, model.canvas_logits(context, ids[None])[0])


def test_a_packed_encodings_cache_holds_its_own_memory_not_the_packed_pass(eng):
    """A kept context must not be a view into the forward's buffers, which hold every
    packed request's rows: it would keep them all alive as long as it is cached."""
    model = eng.model
    encodes = [(*_ids(eng, n), _canvases(1, 8, n), None) for n in (1, 2, 3)]
    for context, _ in model.encode_with_canvas_many(encodes)[0]:
        for t in _kv(context):
            assert t.is_contiguous() and t.untyped_storage().nbytes() == t.numel() * t.element_size()


def test_one_request_is_encode_with_canvas_and_none_is_nothing(eng):
    model = eng.model
    prefix, suffix = _ids(eng, 7)
    rows = _canvases(2, 8, 7)
    (context, logits), = model.encode_with_canvas_many([(prefix, suffix, rows, None)])[0]
    solo_context, solo_logits = model.encode_with_canvas(prefix, suffix, rows)
    assert torch.equal(logits, solo_logits) and _same_context(context, solo_context)
    assert model.encode_with_canvas_many([]) == ([], [])
    with pytest.raises(ValueError):
        model.encode_with_canvas_many([], [solo_context], [])


def _digests(monkeypatch) -> dict[str, list[str]]:
    """Each request's logits, pass by pass, keyed by its prefix (replayed drafted passes too)."""
    seen: dict[str, list[str]] = {}
    advance = engine.sampler.Denoising.advance

    def recording(self, logits, **kwargs):
        seen.setdefault(self.prefix, []).append(hashlib.sha1(logits.contiguous().float().numpy().tobytes()).hexdigest())
        return advance(self, logits, **kwargs)

    monkeypatch.setattr(engine.sampler.Denoising, "advance", recording)
    return seen


def _spy(monkeypatch, model) -> list[tuple[int, int]]:
    """(new contexts, canvases over cached ones) of every packed forward that encodes."""
    calls: list[tuple[int, int]] = []
    real = model.encode_with_canvas_many

    def spy(encodes, contexts=(), canvases=()):
        calls.append((len(encodes), len(canvases)))
        return real(encodes, contexts, canvases)

    monkeypatch.setattr(model, "encode_with_canvas_many", spy)
    return calls


SETTINGS = {"max_tokens": 24, "allow_end": False}  # several passes each, canvases of 8 rows


def test_a_batch_mixing_first_passes_and_later_ones_gives_each_request_its_solo_logits(eng, monkeypatch):
    seen = _digests(monkeypatch)
    calls = _spy(monkeypatch, eng.model)
    runner = BatchRunner(eng, max_batch=8)
    lines = [_line(n) for n in (1, 3, 5, 8, 10)]
    tickets = [runner.submit(eng.job(p, s, "python", cache_key=("packed", n), **SETTINGS)) for n, (p, s) in enumerate(lines[:2])]
    runner.run_pass()  # two first passes, in one forward
    assert calls == [(2, 0)]
    tickets += [runner.submit(eng.job(p, s, "python", cache_key=("packed", n + 2), **SETTINGS)) for n, (p, s) in enumerate(lines[2:])]
    runner.run_pass()  # three first passes beside the first two requests' second passes
    assert calls[1][0] == 3 and calls[1][1] >= 2
    while runner.has_work():
        runner.run_pass()
    batched = dict(seen)
    results = [t.wait() for t in tickets]
    assert all(r.forwards > 2 for r in results)

    seen.clear()
    for n, (prefix, suffix) in enumerate(lines):
        alone = BatchRunner(eng, max_batch=1)
        ticket = alone.submit(eng.job(prefix, suffix, "python", cache_key=("alone", n), **SETTINGS))
        while alone.has_work():
            alone.run_pass()
        assert ticket.wait().middle == results[n].middle and ticket.wait().forwards == results[n].forwards
    assert batched.keys() == seen.keys()
    for prefix, digests in batched.items():
        assert digests == seen[prefix], prefix[-30:]


def test_packed_first_passes_build_on_each_keys_cached_context_and_keep_theirs(eng, monkeypatch):
    """A session's next request (its user typed a few characters) reuses its key's cached
    context in a packed first pass as alone: the same cached tokens, the same middle, and
    the new context is what the key keeps for its next request."""
    calls = _spy(monkeypatch, eng.model)
    sessions = [_line(n) for n in (2, 4, 9)]

    def typed(prefix: str) -> str:
        return prefix + "a * "

    def run(max_batch: int, tag: str):
        runner = BatchRunner(eng, max_batch=max_batch)
        first = [runner.submit(eng.job(p, s, "python", cache_key=(tag, n), **SETTINGS)) for n, (p, s) in enumerate(sessions)]
        while runner.has_work():
            runner.run_pass()
        then = [runner.submit(eng.job(typed(p), s, "python", cache_key=(tag, n), **SETTINGS)) for n, (p, s) in enumerate(sessions)]
        while runner.has_work():
            runner.run_pass()
        return [t.wait() for t in first], [t.wait() for t in then]

    batched_first, batched_then = run(8, "reuse together")
    assert [new for new, _ in calls] == [3, 3]  # each round's three first passes in one forward
    alone_first, alone_then = run(1, "reuse alone")
    for together, alone in zip(batched_first + batched_then, alone_first + alone_then):
        assert (together.middle, together.forwards, together.cached_context_tokens) == (alone.middle, alone.forwards, alone.cached_context_tokens)
    assert all(r.cached_context_tokens > 0 for r in batched_then)  # the second round built on the first's contexts
    for n, (prefix, suffix) in enumerate(sessions):
        kept, reused = eng.contexts.reusable(*eng.context_ids(typed(prefix), suffix), ("reuse together", n))
        assert reused == len(kept.prefix_ids) + len(kept.suffix_ids)  # the key keeps the context its last request encoded
        assert _same_context(kept, eng.contexts.reusable(*eng.context_ids(typed(prefix), suffix), ("reuse alone", n))[0])


def test_a_pass_is_cut_into_forwards_of_bounded_rows_on_a_cpu_and_each_still_equals_alone(eng, monkeypatch):
    assert packed_max_rows("cpu") == engine.batching.PACKED_MAX_ROWS_CPU and packed_max_rows("cuda:0") is None
    rows = [_Rows(i, None, torch.zeros(8), [], None, n) for i, n in enumerate((300, 900, 1000, 5000, 10, 20))]  # type: ignore[arg-type]
    assert [[r.index for r in group] for group in _groups(rows, 2048)] == [[0, 1], [2], [3], [4, 5]]
    assert [[r.index for r in group] for group in _groups(rows, None)] == [[0, 1, 2, 3, 4, 5]]
    # With room for one request a forward, every request runs alone: the same middles.
    lines = [_line(n) for n in (1, 6, 11)]

    def middles() -> list[str]:
        runner = BatchRunner(eng, max_batch=8)
        tickets = [runner.submit(eng.job(p, s, "python", cache_key=("cut", n), **SETTINGS)) for n, (p, s) in enumerate(lines)]
        while runner.has_work():
            runner.run_pass()
        return [t.wait().middle for t in tickets]

    packed = middles()
    calls = _spy(monkeypatch, eng.model)
    monkeypatch.setattr(engine.batching, "PACKED_MAX_ROWS_CPU", PACKED_MIN_ROWS)
    assert middles() == packed and calls == []


def test_a_failed_packed_first_pass_reruns_its_requests_alone_with_the_same_middles(tiny_engine, tiny_faults):
    """The packed forward that encodes the new contexts runs out of memory: each request's
    first pass is rerun alone (its own encode_with_canvas), and the middles are the ones
    of a fault-free batch."""
    lines = [_line(n) for n in (2, 7, 11)]

    def middles(tag: str) -> list[str]:
        runner = BatchRunner(tiny_engine, max_batch=8)
        tickets = [runner.submit(tiny_engine.job(p, s, "python", cache_key=(tag, n), **SETTINGS)) for n, (p, s) in enumerate(lines)]
        while runner.has_work():
            runner.run_pass()
        return [t.wait().middle for t in tickets]

    clean = middles("no fault")
    assert tiny_faults.calls["encode_with_canvas_many"] >= 1
    solo_before = tiny_faults.calls["encode_with_canvas"]
    tiny_faults.arm("encode_with_canvas_many", torch.OutOfMemoryError("CUDA out of memory (injected)"))
    assert middles("fault") == clean
    assert tiny_faults.calls["encode_with_canvas"] == solo_before + len(lines)  # each first pass again, alone
