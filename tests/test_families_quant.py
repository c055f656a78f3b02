"""Quantized loading of family checkpoints: engine int8/int4 and bitsandbytes 8-bit/NF4 (CPU)."""
from __future__ import annotations

import pytest
import torch

pytest.importorskip("transformers")

from engine.families import load_family_model  # noqa: E402
from lab.fixtures.family_checkpoints import make_tiny_checkpoint  # noqa: E402

# Relative logit error bounds on a random tiny model (weights ~N(0, 0.02)): 8-bit keeps
# ~1% error, 4-bit ~10%; measured 0.006 / 0.07 (int8 / int4), 0.006 / 0.11 (bnb8 / nf4).
BOUNDS = {"int8": 0.03, "bnb8": 0.03, "int4": 0.3, "nf4": 0.3}
MODULE = {"int8": "Int8Linear", "int4": "Int4Linear", "bnb8": "Linear8bitLt", "nf4": "Linear4bit"}


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    ck = make_tiny_checkpoint("llada", tmp_path_factory.mktemp("q") / "llada")
    base, tok, _ = load_family_model(ck.path, cache_policy="exact")
    ctx = base.encode_context(tok.encode("for i in range(10):\n    "), tok.encode("\n"))
    canvas = torch.full((1, 8), tok.mask_id)
    return ck, ctx, canvas, base.canvas_logits(ctx, canvas), tok.hf.get_vocab_size(with_added_tokens=True)


@pytest.mark.parametrize("mode", ["int8", "int4", "bnb8", "nf4"])
def test_quantized_family_model_tracks_full_precision(setup, mode):
    if mode in ("bnb8", "nf4"):
        pytest.importorskip("bitsandbytes")
    ck, ctx, canvas, ref, V = setup
    model, _, info = load_family_model(ck.path, quantization=mode, cache_policy="exact")
    assert info["quantization"] == mode
    kinds = [type(m).__name__ for name, m in model.net.named_modules() if name.startswith("layers.") and name.count(".") == 2 and "norm" not in name]
    assert kinds and all(k == MODULE[mode] for k in kinds)  # every block linear replaced
    out = model.canvas_logits(model.encode_context(ctx.prefix_tokens, ctx.suffix_tokens), canvas)
    err = float((out[..., :V] - ref[..., :V]).abs().max() / ref[..., :V].abs().max())
    assert 0 < err < BOUNDS[mode], err
