"""The context cache is exact: cached canvas passes equal one full uncached forward."""
import torch

from lab.evaluation.bench import uncached_canvas_logits
from engine.model import InfillTransformer, ModelConfig


def _model(seed=0):
    torch.manual_seed(seed)
    return InfillTransformer(ModelConfig(vocab_size=97, d_model=48, n_layers=3, n_heads=4, ffn_hidden=96, max_position=512)).eval()


def _ids(n, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(5, 97, (n,), generator=g).tolist()


def test_cached_canvas_logits_equal_uncached_forward():
    model = _model()
    prefix, suffix, canvas = _ids(23, 1), _ids(11, 2), _ids(9, 3)
    cache = model.encode_context(prefix, suffix)
    cached = model.canvas_logits(cache, torch.tensor([canvas]))[0]
    full = uncached_canvas_logits(model, prefix, suffix, canvas)
    torch.testing.assert_close(cached, full, atol=1e-4, rtol=1e-4)


def test_cache_reuse_after_typing_and_suffix_edit_stays_exact():
    model = _model(1)
    prefix, suffix, canvas = _ids(30, 4), _ids(12, 5), _ids(8, 6)
    first = model.encode_context(prefix, suffix)
    typed = prefix[:-2] + _ids(5, 7)  # the last token changed and text was appended
    reused = model.encode_context(typed, suffix, reuse=first)
    torch.testing.assert_close(model.canvas_logits(reused, torch.tensor([canvas]))[0], uncached_canvas_logits(model, typed, suffix, canvas), atol=1e-4, rtol=1e-4)
    new_suffix = _ids(7, 8)
    again = model.encode_context(typed, new_suffix, reuse=reused)
    torch.testing.assert_close(model.canvas_logits(again, torch.tensor([canvas]))[0], uncached_canvas_logits(model, typed, new_suffix, canvas), atol=1e-4, rtol=1e-4)


def test_canvas_size_change_rotates_suffix_keys_correctly():
    model = _model(2)
    prefix, suffix = _ids(15, 9), _ids(10, 10)
    cache = model.encode_context(prefix, suffix)
    for n in (4, 16, 20):  # the suffix moves right as the canvas grows
        canvas = _ids(n, n)
        torch.testing.assert_close(model.canvas_logits(cache, torch.tensor([canvas]))[0], uncached_canvas_logits(model, prefix, suffix, canvas), atol=1e-4, rtol=1e-4)


def test_empty_context_and_attention_layout():
    model = _model(3)
    canvas = _ids(6, 11)
    cache = model.encode_context([], [])
    torch.testing.assert_close(model.canvas_logits(cache, torch.tensor([canvas]))[0], uncached_canvas_logits(model, [], [], canvas), atol=1e-4, rtol=1e-4)
    segments = torch.tensor([[1, 1, 2, 2, 3, 3, 0]])
    mask = InfillTransformer.attention_mask(segments)[0, 0]
    assert mask[0, 1] and not mask[0, 2]  # suffix sees suffix only
    assert mask[3, 2] and not mask[2, 3] and not mask[2, 0]  # prefix causal, blind to suffix
    assert mask[4, :6].all() and not mask[4, 6]  # canvas sees everything but padding
