"""Prompt-lookup decoding in the autoregressive baseline (lab/baseline/autoregressive.py):
drafts from the diffusion sampler's copy source, verified in one causal pass, give the
plain greedy decode's text token for token, in fewer passes when the drafts are right."""
import torch

from engine.copying import CopyIndex
from lab.baseline.autoregressive import CopyDrafts, DecodeBatch, GreedyDecode, decode_many, prefill_stream, verify_logits

from tests.test_model_batched import VOCAB, _ids, _model, _Tok
from tests.test_model_batched import naive_greedy as _naive_greedy


def _run(model, tok, prefixes, max_tokens, drafts=None, lines=0):
    states = [GreedyDecode.prefill(model, tok, p, "", max_tokens, lines=lines, drafts=d) for p, d in zip(prefixes, drafts or [None] * len(prefixes))]
    batch = DecodeBatch(model)
    for state in states:
        batch.join(state)
    while batch.active:
        batch.step()
    return states


def test_copy_drafts_chain_the_samplers_copy_guesses_and_stop_after_a_newline():
    tok = _Tok()
    source = [10, 11, 12, 13, 14, 3, 15, 16, 10, 11]  # "10 11" was followed by 12 13 14 \n 15 ...
    drafts = CopyDrafts(CopyIndex(source, tok.special_ids), max_tokens=6)
    assert drafts.draft(tok, [], 10) == [12, 13, 14, 3]  # the chain stops after the newline
    assert drafts.draft(tok, [], 2) == [12, 13]  # no longer than the room left
    assert drafts.draft(tok, [12, 13, 14, 3], 10) == []  # never right after a newline of the middle
    assert drafts.draft(tok, [50, 51], 10) == []  # nothing in the context continues this
    # the suffix is looked in for runs the prefix lacks
    assert CopyDrafts.of(tok, [7, 8], [40, 7, 8, 41, 42], 3).draft(tok, [], 5) == [41, 42]


def test_verify_logits_rows_equal_one_token_per_pass():
    model = _model(1)
    prefix, rows = _ids(20, 1), _ids(5, 2)
    stream, _ = prefill_stream(model, prefix[:-1])
    many = verify_logits(model, [stream], [[prefix[-1]] + rows])
    assert stream.length == len(prefix) + len(rows)
    for j in range(len(rows) + 1):
        solo, last = prefill_stream(model, prefix + rows[:j])
        torch.testing.assert_close(many[j], last, atol=1e-4, rtol=1e-4)
    # the prefill with a draft gives the same rows
    _, drafted = prefill_stream(model, prefix, draft=rows)
    torch.testing.assert_close(drafted, many, atol=1e-4, rtol=1e-4)


def test_drafted_decode_equals_plain_greedy_decode():
    """Drafts from a context that partly repeats: some are right, some wrong; every
    request's text is still the naive greedy decode's, batched with the others."""
    model, tok = _model(2), _Tok()
    prefixes = [_ids(n, 40 + n) for n in (3, 12, 30, 17)]
    plain = _run(model, tok, prefixes, 24)
    sources = [p + _naive_greedy(model, p, 10, tok.special_ids)[:5] + _ids(8, 7) for p in prefixes]  # right for a while, then noise
    drafted = _run(model, tok, prefixes, 24, [CopyDrafts.of(tok, s + p, max_tokens=4) for s, p in zip(sources, prefixes)])
    for prefix, a, b in zip(prefixes, plain, drafted):
        assert b.result.middle == a.result.middle == tok.decode(_naive_greedy(model, prefix, 24, tok.special_ids))
        assert b.result.tokens == a.result.tokens == 24
        assert b.result.forwards <= a.result.forwards
    assert sum(s.drafted for s in drafted) > sum(s.accepted for s in drafted) > 0  # some drafts rejected, some kept


def test_a_fully_accepted_draft_writes_more_than_one_token_per_pass():
    model, tok = _model(3), _Tok()
    prefix = _ids(15, 3)
    greedy = _naive_greedy(model, prefix, 12, tok.special_ids)
    # The context already holds the decode's text after the prefix's last tokens (code repeats itself).
    drafts = CopyDrafts.of(tok, prefix + greedy, max_tokens=6)
    (state,) = _run(model, tok, [prefix], 12, [drafts])
    assert state.result.middle == tok.decode(greedy) and state.result.tokens == 12
    assert state.accepted == state.drafted > 0  # every draft token kept
    assert state.result.forwards <= 2  # 12 tokens: the prefill (1 + 6) and one step (1 + 4)
    assert state.result.tokens / state.result.forwards > 1


def test_drafted_decode_stops_where_the_plain_one_does():
    """A kept draft that runs past the first line's end is cut there, as one token per pass is."""
    model, tok = _model(4), _Tok()
    prefixes = [_ids(n, 90 + n) for n in (6, 25)]
    plain = decode_many(model, tok, [model.encode_context(p, []) for p in prefixes], ["", ""], max_tokens=40, lines=1)
    drafts = [CopyDrafts.of(tok, p + _naive_greedy(model, p, 40, tok.special_ids), max_tokens=6) for p in prefixes]
    drafted = decode_many(model, tok, [model.encode_context(p, []) for p in prefixes], ["", ""], max_tokens=40, lines=1, drafts=drafts)
    for a, b in zip(plain, drafted):
        assert (b.middle, b.tokens, b.stop_reason) == (a.middle, a.tokens, a.stop_reason)
        assert b.forwards <= a.forwards
