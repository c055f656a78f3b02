"""Sampler behaviour, on a scripted model (exact control of what the model 'believes')
and on a tiny random transformer (the real code path end to end)."""
import threading
import time

import pytest
import torch

from engine.modeldir import load_tokenizer
from engine.sampler import Modes, denoise, run_to_end
from engine.types import SamplerSettings


class ScriptedModel:
    """Predicts `target[i]` at canvas position i (EOM past the end) with `confidence[i]`;
    optionally, once nothing is masked, wants `late_edit = (pos, token)`."""

    def __init__(self, tok, target, confidence, late_edit=None, vocab=None):
        self.tok, self.target, self.confidence, self.late_edit = tok, target, confidence, late_edit
        self.vocab = vocab or tok.vocab_size
        self.passes = 0

    def encode_context(self, prefix_ids, suffix_ids, reuse=None):
        return (tuple(prefix_ids), tuple(suffix_ids))

    def canvas_logits(self, cache, canvas_ids):
        self.passes += 1
        B, N = canvas_ids.shape
        logits = torch.full((B, N, self.vocab), -20.0)
        no_masks = not (canvas_ids == self.tok.mask_id).any()
        for i in range(N):
            token = self.target[i] if i < len(self.target) else self.tok.eom_id
            conf = self.confidence[i] if i < len(self.confidence) else 0.99
            if no_masks and self.late_edit and self.late_edit[0] == i:
                token, conf = self.late_edit[1], 0.99
            # `conf` probability on `token`, the rest spread over ten decoys (each less likely).
            logits[:, i, token] = 0.0
            decoys = [60 + 10 * i + k for k in range(10)]
            logits[:, i, decoys] = float(torch.log(torch.tensor((1 - conf) / 10 / conf)))
        return logits


@pytest.fixture(scope="module")
def tok(tiny_model_dir):
    return load_tokenizer(tiny_model_dir)


def _run(model, tok, **settings):
    steps = list(denoise(model, tok, model.encode_context([], []), SamplerSettings(**settings)))
    return steps, steps[-1].result


def test_commits_at_least_one_token_per_pass_and_stops_at_end_of_middle(tok):
    target = [20, 21, 22, 23, 24]
    model = ScriptedModel(tok, target, confidence=[0.3] * 5 + [0.3])  # nothing passes the threshold
    steps, result = _run(model, tok, confidence_threshold=0.9, block_size=16, max_tokens=64, max_edit_passes=2)
    assert result.stop_reason == "end_of_middle"
    assert result.middle == tok.decode(target)
    assert result.tokens == len(target)
    masked_passes = [s for s in steps[:-1] if not all(p is not None for p in s.canvas) or any(c.kind != "edit" for c in s.changes)]
    for step in masked_passes:
        assert sum(1 for c in step.changes if c.kind in ("commit", "end")) >= 1
    # One commit per pass, then the EOM, then one edit-only pass that changes nothing.
    assert result.forwards == len(target) + 1 + 1


def test_confident_positions_commit_in_parallel(tok):
    target = list(range(20, 36))
    model = ScriptedModel(tok, target, confidence=[0.99] * 16)
    _, result = _run(model, tok, confidence_threshold=0.9, block_size=16, max_tokens=32, max_edit_passes=0)
    # 16 text tokens in one pass, then the grown block closes with EOM in one more.
    assert result.tokens == 16 and result.forwards == 2 and result.tokens_per_forward == 8


def test_end_of_middle_never_runs_ahead_of_unresolved_text(tok):
    target = [20, 21, 22]
    # Text positions are unsure; the EOM right after them is certain.
    model = ScriptedModel(tok, target, confidence=[0.2, 0.2, 0.2, 0.999])
    steps, result = _run(model, tok, confidence_threshold=0.9)
    for step in steps[:-1]:
        for change in step.changes:
            if change.kind == "end":
                assert all(piece is not None for piece in step.canvas[: change.position])
    assert result.middle == tok.decode(target)


def test_honours_max_tokens_and_grows_the_canvas(tok):
    target = list(range(20, 120))  # longer than any canvas, never closes
    model = ScriptedModel(tok, target, confidence=[0.99] * 100)
    _, result = _run(model, tok, block_size=8, max_tokens=20)
    assert result.stop_reason == "max_tokens"
    assert result.tokens == 20 and result.middle == tok.decode(target[:20])
    _, nothing = _run(model, tok, max_tokens=0)
    assert nothing.middle == "" and nothing.tokens == 0


def test_token_edits_rewrite_only_canvas_tokens(tok):
    target = [20, 21, 22, 23]
    model = ScriptedModel(tok, target, confidence=[0.99] * 5, late_edit=(1, 30))
    steps, result = _run(model, tok, edit_threshold=0.9, max_edit_passes=2)
    edits = [c for s in steps for c in s.changes if c.kind == "edit"]
    assert edits and all(0 <= e.position < 4 for e in edits)
    assert result.edits >= 1
    assert result.middle == tok.decode([20, 30, 22, 23])
    _, unedited = _run(ScriptedModel(tok, target, confidence=[0.99] * 5, late_edit=(1, 30)), tok, edit_threshold=1.01)
    assert unedited.middle == tok.decode(target) and unedited.edits == 0


def test_constraint_veto_falls_back_to_next_candidate(tok):
    target = [20, 21, 22]

    class RefuseToken21:
        def allows(self, prefix, pieces, suffix):
            return tok.piece(21) not in [p for p in pieces if p is not None]

        def accept_final(self, prefix, middle, suffix):
            return True

        def polish(self, prefix, middle, suffix):
            return middle

    model = ScriptedModel(tok, target, confidence=[0.99] * 4)
    steps = list(denoise(model, tok, None, SamplerSettings(), constraint=RefuseToken21()))
    result = steps[-1].result
    ids = tok.encode(result.middle)
    assert 21 not in ids and result.vetoed >= 1
    assert result.middle.startswith(tok.piece(20))


def test_cancel_stops_between_passes(tok):
    model = ScriptedModel(tok, list(range(20, 120)), confidence=[0.1] * 100)
    cancel = threading.Event()
    steps = denoise(model, tok, None, SamplerSettings(max_tokens=64), cancel=cancel)
    next(steps)
    cancel.set()
    result = run_to_end(steps)
    assert result.stop_reason == "cancelled" and model.passes == 1


# ------------------------------------------------------- the real tiny transformer
def test_tiny_engine_result_has_no_masks_and_is_deterministic(tiny_engine):
    prefix, suffix = "def add(a, b):\n    return ", "\n\nprint(add(1, 2))\n"
    tiny_engine.forget_context()  # a cold first request, whatever ran before
    first = tiny_engine.infill(prefix, suffix, max_tokens=12, constrained=False)
    second = tiny_engine.infill(prefix, suffix, max_tokens=12, constrained=False)
    assert first.middle == second.middle
    assert "<mask>" not in first.middle and "<eom>" not in first.middle
    assert first.tokens <= 12
    assert first.cached_context_tokens == 0 and first.forwards >= 1  # the context encoded in the first canvas pass
    assert second.cached_context_tokens > 0  # the second request reused the context cache
    assert second.forwards == first.forwards  # ... so its first pass computed only the canvas: no pass of its own either way


def test_tiny_engine_stream_ends_with_result_and_matches_infill(tiny_engine):
    prefix, suffix = "x = [1, 2, ", "]\n"
    tiny_engine.forget_context()  # cold: the first forward pass encodes the context
    steps = list(tiny_engine.stream(prefix, suffix, max_tokens=6, constrained=False))
    assert steps[-1].result is not None
    assert all(s.result is None for s in steps[:-1])
    assert steps[-1].result.cached_context_tokens == 0
    # One step per canvas pass, then the result; the context was encoded in the first
    # canvas pass (encode_with_canvas), not in a pass of its own.
    assert len(steps) - 1 == steps[-1].result.forwards >= 1
    again = tiny_engine.infill(prefix, suffix, max_tokens=6, constrained=False)
    assert again.middle == steps[-1].result.middle


def test_sampling_with_temperature_is_seeded(tiny_engine):
    a = tiny_engine.infill("import ", "\n", max_tokens=8, temperature=1.0, seed=3, constrained=False)
    b = tiny_engine.infill("import ", "\n", max_tokens=8, temperature=1.0, seed=3, constrained=False)
    assert a.middle == b.middle


class _TextConstraint:
    """Judges the text so far: refuses `bad` anywhere, and (as `allows`) an empty middle."""

    def __init__(self, tok, bad=(), complete=None):
        self.tok, self.bad, self.complete = tok, set(bad), complete

    def allows(self, prefix, pieces, suffix):
        if not pieces:
            return False  # like `while :`: the hole needs text
        return not any(p in self.bad for p in pieces if p is not None)

    def accept_final(self, prefix, middle, suffix):
        return self.complete is None or middle == self.complete

    def polish(self, prefix, middle, suffix):
        return middle


def test_a_vetoed_end_of_middle_falls_back_to_text(tok):
    # The model is sure the middle is empty; the constraint says the hole needs text.
    model = ScriptedModel(tok, [], confidence=[0.99] * 20)
    steps = list(denoise(model, tok, None, SamplerSettings(max_tokens=4), constraint=_TextConstraint(tok)))
    result = steps[-1].result
    assert result.middle != "" and result.vetoed >= 1


def test_left_to_right_commits_in_text_order(tok):
    target = [20, 21, 22, 23]
    model = ScriptedModel(tok, target, confidence=[0.2, 0.99, 0.99, 0.99, 0.99])
    steps, result = _run(model, tok, order="left_to_right")
    committed = [c.position for s in steps for c in s.changes if c.kind == "commit"]
    assert committed == sorted(committed) and result.middle == tok.decode(target)


def test_contiguous_commits_a_sure_run_from_the_first_masked_position(tok):
    # Positions 2-4 are sure, but position 1 is not: the first pass commits only
    # position 0 (always) — never the sure tokens beyond the unsure gap.
    target = [20, 21, 22, 23, 24]
    model = ScriptedModel(tok, target, confidence=[0.3, 0.3, 0.99, 0.99, 0.99, 0.99])
    steps, result = _run(model, tok, order="contiguous", confidence_threshold=0.9, max_edit_passes=0)
    first = [c.position for c in steps[0].changes if c.kind == "commit"]
    assert first == [0]
    # Pass two: position 1 (first masked, always) and the sure run after it, in one pass.
    second = sorted(c.position for c in steps[1].changes if c.kind == "commit")
    assert second == [1, 2, 3, 4]
    assert result.middle == tok.decode(target)
    # The confidence rule instead commits the sure positions ahead of the gap in pass one.
    steps, _ = _run(model, tok, order="confidence", confidence_threshold=0.9, max_edit_passes=0)
    assert {2, 3, 4} <= {c.position for c in steps[0].changes if c.kind == "commit"}


def test_end_when_valid_stops_at_the_first_complete_middle(tok):
    target = [20, 21, 22, 23]
    short = tok.decode([20, 21])
    model = ScriptedModel(tok, target, confidence=[0.99] * 5)
    constraint = _TextConstraint(tok, complete=short)
    steps = list(denoise(model, tok, None, SamplerSettings(order="left_to_right"), constraint=constraint, modes=Modes(end_when_valid=True)))
    assert steps[-1].result.middle == short and steps[-1].result.stop_reason == "end_of_middle"
    # Without it, the same model writes its whole middle.
    steps = list(denoise(model, tok, None, SamplerSettings(order="left_to_right"), constraint=constraint))
    assert steps[-1].result.middle == tok.decode(target)


def test_the_valid_end_tries_fewer_tokens_in_a_wide_window(tok):
    """Each try of the `valid` end is a final check, which parses the syntax window: in a
    window wider than ENDING_WINDOW_BYTES it tries proportionally fewer of the likeliest
    tokens (engine/ending.py `ending_tokens`), never fewer than ENDING_TOKENS_MIN."""
    from engine import ending

    assert ending.ending_tokens(0) == ending.ending_tokens(ending.ENDING_WINDOW_BYTES) == ending.ENDING_TOKENS
    assert ending.ending_tokens(4 * ending.ENDING_WINDOW_BYTES) == ending.ENDING_TOKENS // 4
    assert ending.ending_tokens(10**7) == ending.ENDING_TOKENS_MIN

    class Counting(_TextConstraint):
        calls = 0

        def accept_final(self, prefix, middle, suffix):
            Counting.calls += 1
            return False

    model = ScriptedModel(tok, [20, 21, 22, 23], confidence=[0.99] * 5)
    calls, passes = {}, {}
    for tries in (ending.ENDING_TOKENS, 4):
        Counting.calls = 0
        settings = SamplerSettings(order="left_to_right", max_tokens=4)
        steps = list(denoise(model, tok, None, settings, constraint=Counting(tok), modes=Modes(end_when_valid=True, ending_tokens=tries)))
        calls[tries], passes[tries] = Counting.calls, len(steps)
        assert calls[tries] <= tries * passes[tries]  # up to `tries` final checks a pass
    assert passes[4] == passes[ending.ENDING_TOKENS]
    assert calls[ending.ENDING_TOKENS] > 4 * passes[4]


def test_a_pass_always_makes_progress_even_when_the_model_prefers_the_mask(tok):
    # A model whose best guess everywhere is the mask token itself, under a constraint
    # that refuses all text: every pass must still fill a position, so the run ends.
    model = ScriptedModel(tok, [tok.mask_id] * 8, confidence=[0.99] * 8)
    refuse_all = _TextConstraint(tok, bad={tok.piece(t) for t in range(tok.vocab_size)})
    for settings in (SamplerSettings(max_tokens=8), SamplerSettings(max_tokens=8, order="left_to_right"), SamplerSettings(max_tokens=8, order="contiguous")):
        steps = []
        for step in denoise(model, tok, None, settings, constraint=refuse_all):
            steps.append(step)
            assert len(steps) < 100, "the sampler stopped making progress"
        assert None not in steps[-1].canvas


def test_copy_index_guesses_what_followed_the_longest_matching_run():
    from engine.sampler import CopyIndex

    index = CopyIndex([5, 6, 7, 8, 9, 6, 7, 10, 11], special=frozenset({0, 1, 2, 3}))
    assert index.guess([6, 7]) == 10  # the latest occurrence wins
    assert index.guess([5, 6, 7]) == 8  # a longer match beats a later, shorter one
    assert index.guess([42, 43]) is None
    assert CopyIndex([5, 6, 1], special=frozenset({1})).guess([5, 6]) is None  # never a special token


def test_copy_index_also_looks_in_the_suffix_where_the_prefix_has_nothing():
    from engine.sampler import CopyIndex

    index = CopyIndex([5, 6, 7, 8], special=frozenset({0, 1, 2, 3}), also=[6, 7, 9, 30, 31, 32])
    assert index.guess([6, 7]) == 8  # the prefix wins where both have the run
    assert index.guess([30, 31]) == 32  # the suffix answers where the prefix has none
    assert CopyIndex([5, 6, 7, 8], special=frozenset({0})).guess([30, 31]) is None


def test_a_requests_copy_index_holds_its_suffix(tiny_engine):
    suffix = "\nzebra_quagga_wombat(1)\n"
    job = tiny_engine.job("x = ", suffix, copy_weight=0.3)
    with tiny_engine.lock:
        job.prepare()
    ids = tiny_engine.tokenizer.encode(suffix)
    index = job.run.run.copy_index
    assert index is not None and index.guess(ids[1:3]) == ids[3]
    job = tiny_engine.job("x = ", suffix, copy_weight=0.0)
    with tiny_engine.lock:
        job.prepare()
    assert job.run.run.copy_index is None


def test_copy_weight_turns_an_unsure_position_into_the_copied_token(tok):
    # The model is unsure everywhere (its best guess is token 20 at 0.3); the prefix says
    # that after [40, 41] came 50.
    model = ScriptedModel(tok, [20, 21], confidence=[0.3, 0.3, 0.99])
    context = model.encode_context([], [])
    source = [40, 41, 50, 7, 40, 41]
    plain = run_to_end(denoise(model, tok, context, SamplerSettings(copy_weight=0.0, max_tokens=2), copy_source=source))
    copied = run_to_end(denoise(model, tok, context, SamplerSettings(copy_weight=0.6, max_tokens=2), copy_source=source))
    assert tok.encode(plain.middle)[0] == 20
    assert tok.encode(copied.middle)[0] == 50


class _RefuseToken:
    """Allows every canvas that does not hold `piece`."""

    def __init__(self, piece):
        self.piece = piece

    def allows(self, prefix, pieces, suffix):
        return self.piece not in pieces


def test_copy_guesses_the_model_ranks_high_extend_a_pass(tok):
    # Rule 7. The model is unsure everywhere (0.3 on its best guess); the prefix holds the
    # text [20, 21, 22, 23, 24] after the token it ends with (6). Without copies: one token
    # per pass. With them: the first pass writes the whole run.
    target = [20, 21, 22, 23, 24]
    assert not any("\n" in tok.piece(t) for t in target)
    source = [6, 20, 21, 22, 23, 24, 9, 6]
    context = ScriptedModel(tok, target, []).encode_context([], [])

    def run(confidence, **settings):
        model = ScriptedModel(tok, target, confidence)
        steps = list(denoise(model, tok, context, SamplerSettings(copy_weight=0.3, confidence_threshold=0.9, max_edit_passes=0, **settings), copy_source=source))
        return steps, steps[-1].result

    steps, result = run([0.3] * 5, copy_run_top=0)
    assert result.middle == tok.decode(target) and result.forwards == 5  # the last pass also writes the sure end
    steps, result = run([0.3] * 5, copy_run_top=2)
    assert result.middle == tok.decode(target) and result.forwards == 2
    assert [c.position for c in steps[0].changes] == [0, 1, 2, 3, 4]
    # A guess the model ranks below its top 2 (0.05 < each decoy's 0.095) stops the run.
    steps, result = run([0.3, 0.3, 0.05, 0.3, 0.3], copy_run_top=2)
    assert [c.position for c in steps[0].changes] == [0, 1]
    # A guess the constraint refuses is dropped with the ones after it, not replaced.
    model = ScriptedModel(tok, target, [0.3] * 5)
    constraint = _RefuseToken(tok.piece(23))
    steps = list(denoise(model, tok, context, SamplerSettings(copy_weight=0.3, copy_run_top=2, max_edit_passes=0), constraint=constraint, copy_source=source))
    assert [(c.position, c.text) for c in steps[0].changes] == [(0, tok.piece(20)), (1, tok.piece(21)), (2, tok.piece(22))]


def test_an_end_the_model_ranks_first_after_a_newline_closes_the_same_pass(tok):
    # Rule 7's end: the pass that writes a line's newline also writes the end when the end
    # is the model's best guess after it, however unsure (0.5 here, under the 0.9 a run's
    # end otherwise needs); not after other text, and not with end_after_newline off.
    newline = next(i for i in range(tok.vocab_size) if i not in tok.special_ids and tok.piece(i).endswith("\n"))
    context = ScriptedModel(tok, [], []).encode_context([], [])

    def run(target, **settings):
        model = ScriptedModel(tok, target, [0.95] * len(target) + [0.5])  # sure text, an unsure end after it
        steps = list(denoise(model, tok, context, SamplerSettings(confidence_threshold=0.9, max_edit_passes=0, copy_weight=0.0, **settings)))
        return steps, steps[-1].result

    steps, result = run([20, 21, newline])
    assert result.middle == tok.decode([20, 21, newline]) and result.forwards == 1
    assert [c.kind for c in steps[0].changes] == ["commit", "commit", "commit", "end"]
    _, result = run([20, 21, newline], end_after_newline=False)
    assert result.middle == tok.decode([20, 21, newline]) and result.forwards == 2
    _, result = run([20, 21, 22])  # no newline: the unsure end waits for its own pass
    assert result.forwards == 2


class _AcceptsOnly:
    """Allows every commit; the final check accepts exactly one middle."""

    def __init__(self, middle):
        self.middle = middle

    def allows(self, prefix, pieces, suffix):
        return True

    def accept_final(self, prefix, middle, suffix):
        return middle == self.middle

    def polish(self, prefix, middle, suffix):
        return middle


def test_the_middle_ends_where_the_model_would_write_the_suffixs_closer(tok):
    # Rule 8: `read_lines(` + cursor + `)`: after `path` the model wants `)`, which the
    # suffix already starts with; the text so far passes the final check, so it ends.
    closer = next(i for i in range(tok.vocab_size) if i not in tok.special_ids and tok.piece(i).startswith(")"))
    target = [20, closer, 21]
    context = ScriptedModel(tok, [], []).encode_context([], [])

    def run(suffix, accepted, **settings):
        model = ScriptedModel(tok, target, [0.95, 0.5, 0.5, 0.99])
        steps = list(denoise(model, tok, context, SamplerSettings(max_edit_passes=0, copy_weight=0.0, **settings),
                             constraint=_AcceptsOnly(accepted), prefix_text="x = read_lines(", suffix_text=suffix))
        return steps[-1].result

    result = run(")\n", tok.decode([20]))
    assert result.middle == tok.decode([20]) and result.forwards == 2  # `path`, then the end instead of `)`
    assert run(")\n", tok.decode([20]), end_at_closer=False).middle == tok.decode(target)
    assert run("\n", tok.decode([20])).middle == tok.decode(target)  # no closer in the suffix: no end
    assert run(")\n", "something else").middle == tok.decode(target)  # the text so far is not valid: no end


def test_a_grammar_that_fails_to_build_is_an_error_not_an_unconstrained_infill(tiny_engine, monkeypatch):
    """Issue 17: `_constraint_for` used to swallow every exception, so a grammar bug
    silently turned the constraint off. Only no language means none; a language without a
    grammar is the request's mistake, refused (issue 26), never run unconstrained."""
    import grammars
    from engine.language import UnknownLanguage

    with pytest.raises(UnknownLanguage, match="known languages: go, javascript, python"):
        tiny_engine.infill("x = ", "\n", language="cobol", max_tokens=2)
    assert tiny_engine.infill("x = ", "\n", language=None, max_tokens=2).language is None

    def broken(language):
        raise RuntimeError("grammar bug")

    monkeypatch.setattr(grammars, "constraint_for", broken)
    with pytest.raises(RuntimeError, match="grammar bug"):
        tiny_engine.infill("x = ", "\n", language="python", max_tokens=2)
    assert tiny_engine.infill("x = ", "\n", language="python", max_tokens=2, constrained=False).forwards >= 1


def test_the_sampler_steps_compose_into_the_driver(tok):
    """forward -> predict -> propose -> constrain -> commit -> edit -> grow, called one by
    one with the forward pass outside, give what `denoise` gives: the driver adds nothing
    but the loop (and a caller may run the forward for several requests at once)."""
    from engine.sampler import Denoising, Surroundings, commit, constrain, edit, grow, predict, propose
    from engine.stopping import after_pass

    model = ScriptedModel(tok, [5, 6, 7], [0.95, 0.95, 0.3])
    settings = SamplerSettings(max_tokens=8, block_size=4, confidence_threshold=0.9, order="confidence")
    whole = run_to_end(denoise(model, tok, None, settings))
    run = Denoising.begin(tok, settings, Surroundings("", ""), time.perf_counter(), 0)
    steps = 0
    while run.stop is None:
        logits = model.canvas_logits(None, torch.tensor([run.canvas.ids]))[0]
        probs = predict(logits, run)
        proposals = propose(probs, run.canvas, settings.confidence_threshold, settings.order) if run.canvas.masked_positions() else []
        changes = commit(run.canvas, constrain(proposals, probs, run))
        edit(probs, run, frozen={c.position for c in changes})
        steps += 1
        run.stop = after_pass(run, stalled=False, done=grow(run))
    assert tok.decode(run.canvas.middle_ids()) == whole.middle and steps == whole.forwards
    # The same through the state's own interface: canvas out, logits in.
    again = Denoising.begin(tok, settings, Surroundings("", ""), time.perf_counter(), 0)
    while (ids := again.canvas_ids()) is not None:
        again.advance(model.canvas_logits(None, torch.tensor([ids]))[0])
    assert again.finish().result.middle == whole.middle


def test_a_sure_end_closes_a_contiguous_run_in_the_same_pass(tok):
    # Text and the end right after it are sure: one pass writes the middle and ends it.
    target = [20, 21, 22]
    model = ScriptedModel(tok, target, confidence=[0.99, 0.99, 0.99, 0.99])
    steps, result = _run(model, tok, order="contiguous", end_in_run=True, confidence_threshold=0.9, max_edit_passes=0)
    assert result.middle == tok.decode(target) and result.stop_reason == "end_of_middle"
    assert [c.kind for c in steps[0].changes].count("end") == 1 and len(steps) == 2  # one pass, then the result
    # Without the rule the end waits for a pass of its own.
    steps_before, result_before = _run(model, tok, order="contiguous", end_in_run=False, confidence_threshold=0.9, max_edit_passes=0)
    assert result_before.middle == result.middle and len(steps_before) == len(steps) + 1
    # An unsure end does not join the run.
    model = ScriptedModel(tok, target, confidence=[0.99, 0.99, 0.99, 0.5])
    steps, _ = _run(model, tok, order="contiguous", end_in_run=True, confidence_threshold=0.9, max_edit_passes=0)
    assert "end" not in [c.kind for c in steps[0].changes]


def test_an_end_is_never_committed_behind_a_vetoed_position(tok):
    # The constraint refuses the text at position 1 (and its fallbacks): the sure end at
    # position 3 must not close the middle over the hole.
    from engine.sampler import CanvasState, Proposal, commit

    canvas = CanvasState(4, tok)
    changes = commit(canvas, [Proposal(0, 20, 0.99), Proposal(3, tok.eom_id, 0.99), Proposal(2, 22, 0.95)])
    assert [c.kind for c in changes] == ["commit", "commit"]
    assert canvas.ids[1] == tok.mask_id and canvas.end() is None


class _RefuseEveryMiddle:
    """Allows every commit and refuses every finished middle: both candidates run, and the
    last resort never finds a valid early ending (engine/ending.py `valid`): it writes to
    the end."""

    def allows(self, prefix, pieces, suffix):
        return True

    def accept_final(self, prefix, middle, suffix):
        return False

    def polish(self, prefix, middle, suffix):
        return middle


def test_a_second_candidate_numbers_its_passes_on(tiny_engine, monkeypatch):
    # The playground listed `pass 1` twice: the second candidate restarted the count.
    import engine.api

    monkeypatch.setattr(engine.api, "constraint_for", lambda language: _RefuseEveryMiddle())
    steps = list(tiny_engine.stream("x = [1, 2, ", "]\n", language="python", max_tokens=6))
    result = steps[-1].result
    assert result.candidates_tried == 2 and result.middle == "" and result.stop_reason == "rejected"
    numbers = [s.step for s in steps[:-1]]
    assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) >= 2
    assert steps[-1].step == numbers[-1]


def test_a_later_candidate_replays_the_passes_an_earlier_one_computed(tiny_engine, monkeypatch):
    # The last resort (left to right) passes through the canvases the first candidate
    # already had the model read: those passes are replayed from the kept logits, each
    # saving one forward and changing nothing else.
    import engine.api
    import engine.stopping

    monkeypatch.setattr(engine.api, "constraint_for", lambda language: _RefuseEveryMiddle())
    monkeypatch.setattr(tiny_engine, "lookahead_width", 0)  # no drafted canvases (tests/test_lookahead.py has both)
    # Without replays the work bound (WASTE_BOUND, and the last resort's LAST_RESORT_PASSES;
    # tested in test_sampler_bound.py) would stop the second candidate where the replaying
    # run goes on: lifted, so that the two runs compare pass for pass.
    monkeypatch.setattr(engine.stopping, "WASTE_BOUND", 1000)
    monkeypatch.setattr(engine.stopping, "LAST_RESORT_PASSES", 1000)
    calls = []
    for name in ("canvas_logits", "encode_with_canvas"):  # the first pass encodes the context too
        original = getattr(tiny_engine.model, name)
        monkeypatch.setattr(tiny_engine.model, name, lambda *a, original=original, **k: calls.append(1) or original(*a, **k))

    def request():
        calls.clear()
        tiny_engine.forget_context()  # both encode their context: the same forward count before the canvas
        steps = list(tiny_engine.stream("def f(a, b):\n    return ", "\n", language="python", max_tokens=12, confidence_threshold=1.0))
        return steps, len(calls)

    monkeypatch.setattr(engine.request, "REPLAY_BYTES", 0)
    steps_computed, calls_computed = request()
    monkeypatch.setattr(engine.request, "REPLAY_BYTES", 8 << 20)
    steps_replayed, calls_replayed = request()
    computed, replayed = steps_computed[-1].result, steps_replayed[-1].result
    assert computed.candidates_tried == replayed.candidates_tried == 2
    assert computed.replayed == 0 and replayed.replayed >= 2
    assert replayed.forwards + replayed.replayed == computed.forwards
    assert calls_computed - calls_replayed == replayed.replayed  # no model call for a replayed pass
    assert (replayed.middle, replayed.written, replayed.stop_reason) == (computed.middle, computed.written, computed.stop_reason)
    assert replayed.forwards <= replayed.written + 2
    # The streamed passes stay numbered 1, 2, 3, ...: a replayed pass is not streamed.
    numbers = [s.step for s in steps_replayed[:-1]]
    assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) == calls_replayed


def test_a_pass_that_can_write_nothing_ends_the_run(tok):
    """Seen on the dev set (an empty suffix after a docstring): the text at the first
    masked position was vetoed with all its fallbacks and the only proposal left was a
    sure end behind it, which `commit` rightly drops. The run used to spin forever on
    the same canvas; now the end does not count as progress, and a pass that can write
    nothing stops the run."""
    from engine.sampler import CanvasState, Proposal, without_early_ends

    canvas = CanvasState(4, tok)
    canvas.commit(0, 20)
    end = Proposal(2, tok.eom_id, 0.99)
    assert without_early_ends([end], canvas) == []  # position 1 stays masked
    assert without_early_ends([end, Proposal(1, 21, 0.6)], canvas) == [end, Proposal(1, 21, 0.6)]

    model = ScriptedModel(tok, [20, 21], confidence=[0.99, 0.6, 0.99])
    only_20 = _TextConstraint(tok, bad={tok.piece(t) for t in range(tok.vocab_size)} - {tok.piece(20), tok.piece(tok.eom_id)})
    for settings in (SamplerSettings(max_tokens=8, order="contiguous", confidence_threshold=0.5), SamplerSettings(max_tokens=8, confidence_threshold=0.5)):
        steps = []
        for step in denoise(model, tok, None, settings, constraint=only_20):
            steps.append(step)
            assert len(steps) < 50, "the sampler stopped making progress"
        result = steps[-1].result
        # as when every proposal is refused: the first that can be written stands, the final check judges
        assert result.middle == tok.decode([20, 21]) and result.forwards < 10
