"""End to end: engine.load() on each family's tiny checkpoint, the lead's sampler on top.

With the exact policy, infill's adapter must drive the sampler through exactly the same
denoising trajectory as transformers' own forward pass does (ReferenceDenoiser); with
the default dual cache the infill must work and actually use the cache.
"""
from __future__ import annotations

import pytest

pytest.importorskip("transformers")

import engine  # noqa: E402
from engine.api import Engine  # noqa: E402
from lab.fixtures.family_checkpoints import ReferenceDenoiser, make_tiny_checkpoint  # noqa: E402

FAMILIES = ["dream", "dreamon", "llada", "open_dcoder"]
PREFIX = "class Stack:\n    def push(self, x):\n        "
SUFFIX = "\n\n    def pop(self):\n        return self.items.pop()\n"


@pytest.fixture(scope="module")
def ckpts(tmp_path_factory):
    root = tmp_path_factory.mktemp("e2e")
    return {f: make_tiny_checkpoint(f, root / f, seed=10 + i) for i, f in enumerate(FAMILIES)}


@pytest.mark.parametrize("family", FAMILIES)
def test_engine_infill_matches_transformers_trajectory(ckpts, family, monkeypatch):
    monkeypatch.setenv("INFILL_FAMILY_CACHE", "exact")
    eng = engine.load(ckpts[family].path)
    assert eng.model_name == family.replace("dreamon", "dream")
    ref = Engine(ReferenceDenoiser(ckpts[family], eng.tokenizer, eng.tokenizer.pad_id), eng.tokenizer)
    settings = dict(max_tokens=20, block_size=8, confidence_threshold=0.05)
    ours = [s.canvas for s in eng.stream(PREFIX, SUFFIX, **settings)]
    theirs = [s.canvas for s in ref.stream(PREFIX, SUFFIX, **settings)]
    assert ours == theirs  # same canvas after every pass, and the same final middle
    result = eng.infill(PREFIX, SUFFIX, **settings)
    assert result.stop_reason in ("end_of_middle", "max_tokens") and 0 < result.forwards
    assert result.middle == ref.infill(PREFIX, SUFFIX, **settings).middle


@pytest.mark.parametrize("family", ["dream", "llada"])
def test_engine_infill_with_dual_cache(ckpts, family, monkeypatch):
    monkeypatch.delenv("INFILL_FAMILY_CACHE", raising=False)
    eng = engine.load(ckpts[family].path)
    assert eng.info["cache_policy"] == "block"
    result = eng.infill(PREFIX, SUFFIX, max_tokens=24, block_size=8, confidence_threshold=0.05)
    ctx = eng._context_cache
    assert result.forwards > 0 and result.stop_reason in ("end_of_middle", "max_tokens")
    # One refresh per canvas length (block); every other pass reused the context's K/V.
    assert 1 <= ctx.refreshes <= 3 and ctx.cached_passes >= 1
    assert ctx.cached_context_tokens == ctx.cached_passes * (len(ctx.head) + len(ctx.tail) - (1 if family == "dream" else 0))
