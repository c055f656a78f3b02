"""Several requests in one pass: the batched canvas forward equals each request's solo
pass, and the autoregressive baseline's cached, batched decode equals a naive greedy
decode that recomputes the whole prefix for every token."""
import pytest
import torch

from engine.model import SEG_PREFIX, InfillTransformer, ModelConfig
from lab.baseline.autoregressive import DecodeBatch, GreedyDecode, decode_many, decode_stream, first_suffix_line

VOCAB = 97


def _model(seed=0):
    torch.manual_seed(seed)
    return InfillTransformer(ModelConfig(vocab_size=VOCAB, d_model=48, n_layers=3, n_heads=4, ffn_hidden=96, max_position=512)).eval()


def _ids(n, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(5, VOCAB, (n,), generator=g).tolist()


# (prefix, suffix, canvas) lengths: every request has its own context and canvas size,
# including an empty suffix and a one-token prefix.
SHAPES = [(23, 11, 9), (1, 0, 4), (40, 17, 16), (7, 30, 1), (15, 5, 24)]


def test_canvas_logits_many_equal_each_requests_solo_pass():
    model = _model()
    caches = [model.encode_context(_ids(p, 10 * i), _ids(s, 10 * i + 1)) for i, (p, s, _) in enumerate(SHAPES)]
    canvases = [torch.tensor(_ids(n, 10 * i + 2)) for i, (_, _, n) in enumerate(SHAPES)]
    many = model.canvas_logits_many(caches, canvases)
    assert [tuple(m.shape) for m in many] == [(n, VOCAB) for _, _, n in SHAPES]
    for cache, canvas, got in zip(caches, canvases, many):
        solo = model.canvas_logits(cache, canvas.unsqueeze(0))[0]
        torch.testing.assert_close(got, solo, atol=1e-5, rtol=1e-5)
        assert torch.equal(got.argmax(-1), solo.argmax(-1))


def test_canvas_logits_many_with_one_request_is_the_solo_pass_and_empty_is_empty():
    model = _model(1)
    cache = model.encode_context(_ids(12, 3), _ids(6, 4))
    canvas = torch.tensor(_ids(8, 5))
    torch.testing.assert_close(model.canvas_logits_many([cache], [canvas])[0], model.canvas_logits(cache, canvas.unsqueeze(0))[0], atol=1e-6, rtol=1e-6)
    assert model.canvas_logits_many([], []) == []


def test_canvas_logits_many_refuses_mismatched_lists():
    model = _model()
    cache = model.encode_context(_ids(5, 1), [])
    with pytest.raises(ValueError):
        model.canvas_logits_many([cache, cache], [torch.tensor(_ids(3, 2))])


@torch.no_grad()
def naive_greedy(model, prefix, steps, banned=()):
    """Greedy decode by a full causal forward over prefix + generated, every token."""
    ids = list(prefix)
    out = []
    for _ in range(steps):
        T = len(ids)
        hidden = model(torch.tensor([ids]), torch.arange(T).unsqueeze(0), torch.full((1, T), SEG_PREFIX))
        logits = model.logits(hidden[0, -1])
        logits[list(banned)] = float("-inf")
        token = int(logits.argmax())
        out.append(token)
        ids.append(token)
    return out


class _Tok:
    """Just enough tokenizer for GreedyDecode: ids are letters, 3 is a newline."""

    special_ids = frozenset({0, 1, 2})

    def piece(self, t):
        return "\n" if t == 3 else chr(ord("a") + t % 26)

    def decode(self, ids):
        return "".join(self.piece(t) for t in ids if t not in self.special_ids)

    def encode(self, text):
        return [3 if ch == "\n" else ord(ch) - ord("a") + 26 for ch in text]


def test_batched_cached_decode_equals_naive_full_recompute():
    model = _model(2)
    tok = _Tok()
    prefixes = [_ids(n, 40 + n) for n in (1, 9, 30, 17)]
    # room=64 by default but 70 steps: the streams' buffers must grow on the way.
    results = decode_many(model, tok, [model.encode_context(p, []) for p in prefixes], ["", "", "", ""], max_tokens=70, lines=0)
    for prefix, result in zip(prefixes, results):
        expected = naive_greedy(model, prefix, 70, banned=tok.special_ids)
        assert result.stop_reason == "max_tokens" and result.tokens == 70
        assert result.middle == tok.decode(expected)
        assert result.forwards == 71  # the context encoding + one pass per token


def test_the_prefill_writes_the_first_token_and_decodes_as_the_naive_recompute():
    """GreedyDecode.prefill: one causal forward over the prefix yields the first token
    (n tokens in n forwards), and the cached, batched decode after it still equals the
    naive full recompute."""
    model = _model(5)
    tok = _Tok()
    prefixes = [_ids(n, 80 + n) for n in (1, 9, 30)]
    states = [GreedyDecode.prefill(model, tok, p, "", 12, lines=0) for p in prefixes]
    batch = DecodeBatch(model)
    for state in states:
        batch.join(state)
    while batch.active:
        batch.step()
    for prefix, state in zip(prefixes, states):
        assert state.result.middle == tok.decode(naive_greedy(model, prefix, 12, banned=tok.special_ids))
        assert state.result.tokens == 12 and state.result.forwards == 12  # the prefill wrote the first


def test_streams_leave_the_batch_independently():
    """Requests join at any pass and leave when they stop; the others' tokens are unchanged."""
    model = _model(3)
    tok = _Tok()
    prefixes = [_ids(n, 60 + n) for n in (5, 12)]
    contexts = [model.encode_context(p, []) for p in prefixes]
    short, long_ = GreedyDecode.start(model, tok, contexts[0], "", 3, lines=0), GreedyDecode.start(model, tok, contexts[1], "", 12, lines=0)
    batch = DecodeBatch(model)
    batch.join(short)
    batch.step()
    batch.join(long_)  # joins a pass later
    finished = []
    while batch.active:
        finished += batch.step()
    assert finished == [short, long_]
    assert short.result.tokens == 3 and long_.result.tokens == 12
    assert long_.result.middle == tok.decode(naive_greedy(model, prefixes[1], 12, banned=tok.special_ids))


def _scripted(state, tokens):
    """Advance `state` with logits that pick `tokens` in turn, while it runs."""
    for t in tokens:
        if state.done:
            return
        row = torch.full((VOCAB,), -5.0)
        row[t] = 5.0
        state.advance(row)


def test_decode_stops_when_it_reaches_the_suffixs_first_line():
    tok = _Tok()
    model = _model(4)
    context = model.encode_context([5, 6], [])
    assert first_suffix_line("\n  bc  \nrest\n") == "bc"
    state = GreedyDecode.start(model, tok, context, "\n  bc  \nrest\n", 50, lines=0)
    _scripted(state, [26, 27, 3, 27, 28, 3, 29])  # "ab\n" then "bc\n": the suffix's first line
    assert state.done and state.result.stop_reason == "suffix"
    assert state.result.middle == "ab\n" and state.result.tokens == 3
    assert state.result.forwards == 7  # the context + six passes: the seventh token was never asked for


def test_decode_stops_after_its_first_line_by_default():
    tok = _Tok()
    model = _model(4)
    state = GreedyDecode.start(model, tok, model.encode_context([5, 6], []), "zz\n", 50)
    _scripted(state, [26, 27, 3, 28, 3])
    assert state.result.stop_reason == "lines" and state.result.middle == "ab\n" and state.result.tokens == 3
    capped = GreedyDecode.start(model, tok, model.encode_context([5, 6], []), "", 2)
    _scripted(capped, [26, 27, 28])
    assert capped.result.stop_reason == "max_tokens" and capped.result.middle == "ab"
    nothing = GreedyDecode.start(model, tok, model.encode_context([5, 6], []), "", 0)
    assert nothing.done and nothing.result.stop_reason == "empty"


def test_decode_needs_a_prefix_token():
    model = _model()
    with pytest.raises(ValueError):
        decode_stream(model.encode_context([], [5, 6]))
