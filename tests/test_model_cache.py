"""The context cache is exact: cached canvas passes equal one full uncached forward."""
import torch

from lab.evaluation.bench import uncached_canvas_logits
import torch.nn.functional as F

from engine.model import SEG_CANVAS, SEG_PREFIX, SEG_SUFFIX, BlockLayout, InfillTransformer, ModelConfig, apply_rope


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


def test_the_encoding_merged_into_the_first_pass_equals_the_two_calls():
    """encode_with_canvas (one forward: the context's new rows and the first canvas) gives
    the logits of the uncached forward and a cache equal to encode_context's, cold, after
    typing, with a new suffix, with everything reused, and with an empty side."""
    model = _model(4)
    prefix, suffix, canvas = _ids(30, 12), _ids(12, 13), torch.tensor([_ids(8, 14)])
    later = torch.tensor([_ids(10, 15)])  # a later pass of another size reads the merged cache

    def check(prefix_ids, suffix_ids, reuse=None):
        cache, logits = model.encode_with_canvas(prefix_ids, suffix_ids, canvas, reuse=reuse)
        torch.testing.assert_close(logits[0], uncached_canvas_logits(model, prefix_ids, suffix_ids, canvas[0].tolist()), atol=1e-4, rtol=1e-4)
        apart = model.encode_context(prefix_ids, suffix_ids, reuse=reuse)
        for merged_layer, layer in zip(cache.layers, apart.layers, strict=True):
            for a, b in zip((merged_layer.prefix_k, merged_layer.prefix_v, merged_layer.suffix_k, merged_layer.suffix_v), (layer.prefix_k, layer.prefix_v, layer.suffix_k, layer.suffix_v)):
                torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
        for ids in (canvas, later):
            torch.testing.assert_close(model.canvas_logits(cache, ids)[0], uncached_canvas_logits(model, prefix_ids, suffix_ids, ids[0].tolist()), atol=1e-4, rtol=1e-4)
        return cache

    first = check(prefix, suffix)
    typed = check(prefix[:-2] + _ids(5, 16), suffix, reuse=first)  # the prefix's tail re-encoded, the suffix kept
    check(prefix[:-2] + _ids(5, 16), _ids(7, 17), reuse=typed)  # a new suffix
    check(prefix, suffix, reuse=first)  # everything from the cache: only the canvas rows are computed
    check(prefix, [], reuse=None)
    check([], suffix, reuse=None)


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


def _spelled_out_layer(block, x, cos, sin, keys, values_of, mask=None):
    """One layer as the model wrote it before Block.forward existed: the reference the
    block's strategies are held to, bit for bit."""
    q, k, v = block.attn.project(block.attn_norm(x))
    q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
    y = F.scaled_dot_product_attention(q, keys(k), values_of(v), attn_mask=mask)
    x = x + block.attn.out(y.transpose(1, 2).flatten(2))
    return x + block.ffn(block.ffn_norm(x))


@torch.no_grad()
def test_every_pass_runs_the_block_as_spelled_out():
    """The context encoding, the cached canvas pass, the packed pass and the training
    forward all run Block.forward with their own attention strategy; each equals the
    layer written out by hand with the same keys (bit-identical: the same operations)."""
    model = _model(4)
    prefix, suffix, canvas = _ids(13, 12), _ids(6, 13), _ids(5, 14)
    P, S, N = len(prefix), len(suffix), len(canvas)
    cache = model.encode_context(prefix, suffix)

    # Context: the prefix causally, the suffix within itself at positions 0..S-1 (keys cached unrotated).
    x, xs = model.embed(torch.tensor([prefix])), model.embed(torch.tensor([suffix]))
    cos, sin = model._rope(torch.arange(P).unsqueeze(0))
    scos, ssin = model._rope(torch.arange(S).unsqueeze(0))
    causal = torch.ones(P, P, dtype=torch.bool).tril().view(1, 1, P, P)
    for block, layer in zip(model.blocks, cache.layers):
        _, k, v = block.attn.project(block.attn_norm(x))
        assert torch.equal(layer.prefix_k, apply_rope(k, cos, sin)) and torch.equal(layer.prefix_v, v)
        _, k, v = block.attn.project(block.attn_norm(xs))
        assert torch.equal(layer.suffix_k, k) and torch.equal(layer.suffix_v, v)
        x = _spelled_out_layer(block, x, cos, sin, lambda k: k, lambda v: v, causal)
        xs = _spelled_out_layer(block, xs, scos, ssin, lambda k: k, lambda v: v)

    # The canvas against the cache: [suffix rotated to P+N | prefix | canvas] keys.
    x = model.embed(torch.tensor([canvas]))
    cos, sin = model._rope(torch.arange(P, P + N).unsqueeze(0))
    suffix_keys = model._rotated_suffix_keys(cache, P + N)
    for block, layer, sk in zip(model.blocks, cache.layers, suffix_keys):
        x = _spelled_out_layer(block, x, cos, sin, lambda k: torch.cat([sk, layer.prefix_k, k], dim=2), lambda v: torch.cat([layer.suffix_v, layer.prefix_v, v], dim=2))
    expected = model.logits(model.final_norm(x))[0]
    assert torch.equal(model.canvas_logits(cache, torch.tensor([canvas]))[0], expected)
    # One request packed alone runs the very same calls.
    assert torch.equal(model.canvas_logits_many([cache], [torch.tensor(canvas)])[0], expected)

    # The training forward, whole-sequence mask and per-block layout alike.
    ids = torch.tensor([suffix + prefix + canvas])
    positions = torch.tensor([list(range(P + N, P + N + S)) + list(range(P)) + list(range(P, P + N))])
    segments = torch.tensor([[SEG_SUFFIX] * S + [SEG_PREFIX] * P + [SEG_CANVAS] * N])
    x, mask = model.embed(ids), InfillTransformer.attention_mask(segments)
    cos, sin = model._rope(positions)
    for block in model.blocks:
        x = _spelled_out_layer(block, x, cos, sin, lambda k: k, lambda v: v, mask)
    assert torch.equal(model(ids, positions, segments), model.final_norm(x))
    blocked = model(ids, positions, segments, BlockLayout(S, P, N))
    torch.testing.assert_close(blocked, model.final_norm(x), atol=1e-6, rtol=1e-6)
