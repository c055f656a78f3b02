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
    # A random checkpoint's text may be a loop, answered empty (engine/degenerate.py).
    assert result.stop_reason in ("end_of_middle", "max_tokens", "degenerate") and 0 < result.forwards
    assert result.middle == ref.infill(PREFIX, SUFFIX, **settings).middle


@pytest.mark.parametrize("family", ["dream", "llada"])
def test_engine_infill_with_dual_cache(ckpts, family, monkeypatch):
    monkeypatch.delenv("INFILL_FAMILY_CACHE", raising=False)
    eng = engine.load(ckpts[family].path)
    assert eng.info["cache_policy"] == "block"
    result = eng.infill(PREFIX, SUFFIX, max_tokens=24, block_size=8, confidence_threshold=0.05)
    ctx = eng.contexts.last
    assert result.forwards > 0 and result.stop_reason in ("end_of_middle", "max_tokens")
    # One refresh per canvas length (block); every other pass reused the context's K/V.
    assert 1 <= ctx.refreshes <= 3 and ctx.cached_passes >= 1
    assert ctx.cached_context_tokens == ctx.cached_passes * (len(ctx.head) + len(ctx.tail) - (1 if family == "dream" else 0))


@pytest.mark.parametrize(
    "prefix, suffix",
    [("", SUFFIX), (PREFIX, ""), (PREFIX, SUFFIX)],
    ids=["empty-prefix", "empty-suffix", "both"],
)
def test_open_dcoder_request_path_matches_open_dllm_layout(ckpts, prefix, suffix, monkeypatch):
    """Open-dLLM's infilling code lays out `prefix <masks> suffix` with no special token
    around them (engine/families/open_dcoder.toml [layout]; docs/families.md). The engine's
    whole request path (its prefix/suffix tokens, then the adapter's context) must give the
    canvas the same logits as the reference model over exactly that sequence, which the
    test builds from the raw texts itself. A bos in front of the prefix changed canvas
    position 0's row for an empty prefix (relative error ~1)."""
    import torch

    from lab.fixtures.family_checkpoints import reference_logits

    monkeypatch.setenv("INFILL_FAMILY_CACHE", "exact")
    ckpt = ckpts["open_dcoder"]
    eng = engine.load(ckpt.path)
    tok = eng.tokenizer
    n = 6
    prefix_ids, suffix_ids = eng.context_ids(prefix, suffix)
    context = eng.model.encode_context(prefix_ids, suffix_ids)
    canvas = torch.full((1, n), tok.mask_id, dtype=torch.long)
    ours = eng.model.canvas_logits(context, canvas)[0].float()
    raw_prefix = tok.hf.encode(prefix, add_special_tokens=False).ids
    raw_suffix = tok.hf.encode(suffix, add_special_tokens=False).ids
    sequence = torch.tensor([raw_prefix + [tok.mask_id] * n + raw_suffix])
    logits = reference_logits(ckpt, sequence, tok.pad_id)[0]
    p = len(raw_prefix)
    rows = [max(p + j - 1, 0) for j in range(n)]  # shifted logits; position 0 scores itself
    theirs = logits[rows]
    vocab = tok.hf.get_vocab_size(with_added_tokens=True)
    ours, theirs = ours[:, :vocab], theirs[:, :vocab]
    error = ((ours - theirs).norm() / theirs.norm()).item()
    assert error < 1e-3, f"relative logit error {error:.3g}"
