"""Draft and verify (engine/lookahead.py): canvases guessed for the next pass ride in the
forward of this one, and a pass whose canvas was guessed is replayed without a forward.

The sampler is untouched, so the middles must be the same with and without the drafted
canvases, solo and in a packed batch; only the forwards change. Run on the embedded model
(the weights users get) and on lines the tests write themselves."""
from __future__ import annotations

import pytest
import torch

import engine.api
import engine.request
import engine.stopping
from engine.batching import BatchRunner
from engine.draft_sources import lookahead_sources
from engine.drafts import Candidates
from engine.lookahead import guesses


def _sources(workspace=()):
    """The request's lookahead sources with these whole-line token drafts as the workspace's."""
    return lookahead_sources(Candidates((), tuple(tuple(d) for d in workspace), 0) if workspace else None)
from engine.sampler import Denoising, Surroundings
from engine.types import SamplerSettings
from tests.test_sampler import _RefuseEveryMiddle
from tests.test_compute_dtype import BOTH_DTYPES

# Code that repeats itself: the copy rule's guesses are right often, so drafts hit.
FILE = "".join(f"    result_{i} = compute_value(items[{i}], scale=factor, offset=base_offset)\n" for i in range(6))
CASES = [
    ("def run(items, factor, base_offset):\n" + FILE + "    ", "\n    return result_0\n", "python"),
    ("def total(xs):\n    s = 0\n    for x in xs:\n        ", "\n    return s\n", "python"),
    ("function add(a, b) {\n  const sum = a + b;\n  ", "\n}\n", "javascript"),
    ("class Point:\n    def __init__(self, x, y):\n        self.x = x\n        ", "\n\n    def norm(self):\n        return (self.x ** 2 + self.y ** 2) ** 0.5\n", "python"),
]


@pytest.fixture(scope="module", params=BOTH_DTYPES)
def eng(request):
    """The embedded model in both compute dtypes (engine/precision.py `compute_dtype`): the
    rows of a bf16 forward must be as independent of each other as fp32's."""
    return engine.api.load(None, dtype=request.param)


@pytest.fixture(autouse=True)
def unbounded(monkeypatch):
    """The work bound counts forwards: with fewer of them a request may run passes the
    bound cuts without drafts. Lifted here, so that runs compare pass for pass."""
    monkeypatch.setattr(engine.stopping, "WASTE_BOUND", 1000)
    monkeypatch.setattr(engine.stopping, "LAST_RESORT_PASSES", 1000)


def _run_all(eng, width: int):
    eng.lookahead_width = width
    out = []
    for prefix, suffix, language in CASES:
        eng.forget_context()
        out.append(eng.infill(prefix, suffix, language=language))
    return out


def test_drafted_canvases_change_no_middle_and_save_forwards(eng) -> None:
    plain = _run_all(eng, 0)
    drafted = _run_all(eng, 2)
    assert [r.middle for r in drafted] == [r.middle for r in plain]
    assert [r.tokens for r in drafted] == [r.tokens for r in plain]
    assert all(r.lookahead_passes == 0 and r.lookahead == {} for r in plain)
    assert all(d.forwards + d.lookahead_passes == p.forwards for d, p in zip(drafted, plain))
    # the repeated line: the copy rule's drafts are replayed, fewer forwards are spent
    assert drafted[0].lookahead.get("copy", 0) > 0
    assert drafted[0].forwards < plain[0].forwards


def test_packed_batch_with_drafts_gives_the_solo_middles(eng) -> None:
    eng.lookahead_width = 0
    solo = [eng.infill(p, s, language=lang).middle for p, s, lang in CASES]
    eng.lookahead_width = 2
    runner = BatchRunner(eng, max_batch=4)
    tickets = [runner.submit(eng.job(p, s, language=lang)) for p, s, lang in CASES]
    while runner.has_work():
        runner.run_pass()
    results = [t.final.result for t in tickets]
    assert [r.middle for r in results] == solo
    assert sum(r.lookahead_passes for r in results) > 0


def _run_state(eng, prefix: str, copy_source: list[int], width_first: int = 8) -> Denoising:
    around = Surroundings(prefix, "", None, copy_source, ())
    return Denoising.begin(eng.tokenizer, SamplerSettings(), around, 0.0, 0)


def test_guesses_fill_the_first_masked_position_and_chain(eng) -> None:
    tok = eng.tokenizer
    source = tok.encode("x = alpha + beta\ny = alpha + beta\nz = alpha")
    run = _run_state(eng, "", source)
    ids = [tok.mask_id] * 8
    found = guesses(run, ids, None, _sources(), width=3)
    assert found and all(g.source == "copy" for g in found)
    # each guess is the canvas with the next 1, 2, 3 positions filled by the chain
    for depth, g in enumerate(found, 1):
        assert g.canvas[depth:] == tuple(ids[depth:])
        assert tok.mask_id not in g.canvas[:depth]
    assert tok.decode(list(found[-1].canvas[:3])).startswith(" +")
    assert len(guesses(run, ids, None, _sources(), width=1)) == 1
    assert guesses(run, ids, None, _sources(), width=0) == []


def test_guesses_never_leave_a_canvas_without_a_mask_nor_repeat_one(eng) -> None:
    tok = eng.tokenizer
    run = _run_state(eng, "", tok.encode("a b c d e f g h a b c d e f g h a b"))
    ids = list(tok.encode(" c d e f")[:3]) + [tok.mask_id]  # one masked position left
    logits = torch.zeros(len(ids), tok.vocab_size)
    logits[3, tok.encode(" q")[0]] = 5.0
    found = guesses(run, ids, logits, _sources((tuple(ids[:3]) + (tok.encode(" z")[0], tok.eom_id),)), width=4)
    assert found == []  # filling the last mask grows the canvas: another size, only for a packed pass (grown=True)
    ids = ids + [tok.mask_id]
    logits = torch.zeros(len(ids), tok.vocab_size)
    logits[3, tok.encode(" q")[0]] = 5.0
    found = guesses(run, ids, logits, _sources((tuple(ids[:3]) + (tok.encode(" z")[0], tok.eom_id),)), width=4)
    canvases = [g.canvas for g in found]
    assert len(canvases) == len(set(canvases)) and all(tok.mask_id in c for c in canvases)
    assert {g.source for g in found} >= {"workspace", "model"}
    assert tuple(ids) not in canvases


def test_a_guess_that_fills_the_last_mask_is_the_grown_canvas(eng) -> None:
    """Where the forward can take canvases of two lengths (grown=True), a guess filling the
    last masked position is the canvas the sampler reads next: one block of masks longer
    (sampler.grow); none where the sampler stops instead (max_tokens reached)."""
    tok = eng.tokenizer
    run = _run_state(eng, "", tok.encode("a b c d e f g h a b c d e f g h a b"))
    ids = list(tok.encode(" c d e f")[:3]) + [tok.mask_id]
    logits = torch.zeros(len(ids), tok.vocab_size)
    logits[3, tok.encode(" q")[0]] = 5.0
    workspace = (tuple(ids[:3]) + (tok.encode(" z")[0], tok.eom_id),)
    found = guesses(run, ids, logits, _sources(workspace), width=4, grown=True)
    block = run.settings.block_size
    assert {g.source for g in found} >= {"workspace", "model"}
    for g in found:
        assert len(g.canvas) == len(ids) + block and g.depth == 1
        assert g.canvas[:3] == tuple(ids[:3]) and g.canvas[3] != tok.mask_id and g.canvas[4:] == (tok.mask_id,) * block
    assert tok.encode(" q")[0] in {g.canvas[3] for g in found} and tok.encode(" z")[0] in {g.canvas[3] for g in found}
    at_most_four = Denoising.begin(tok, SamplerSettings(max_tokens=4), Surroundings("", "", None, tok.encode("a b c d e f g h a b c d e f g h a b"), ()), 0.0, 0)
    assert guesses(at_most_four, ids, logits, _sources(workspace), width=4, grown=True) == []  # a full canvas at max_tokens stops


# Middles longer than one block (8), written a token a pass: the canvas grows.
GROWING = [
    ("def fib(n):\n    if n < 2:\n        return n\n    ", "\n"),
    ("def parse_args():\n    ", "\n"),  # (a __repr__ body once: now a degenerate middle, answered empty)
    ("def area(radius):\n    ", "\n"),
]


def test_grown_canvases_drafted_change_no_middle_and_save_forwards(eng, monkeypatch) -> None:
    """Solo requests whose middles outgrow the first block: with grown canvases drafted
    (packed passes over two canvas lengths), the same middles in fewer forwards."""
    import engine.lookahead

    def run_all() -> list:
        eng.lookahead_width = 3
        out = []
        for prefix, suffix in GROWING:
            eng.forget_context()
            out.append(eng.infill(prefix, suffix, language="python"))
        return out

    with_grown = run_all()
    monkeypatch.setattr(engine.lookahead, "_grown", lambda run, canvas: None)
    without = run_all()
    assert all(r.tokens > 8 for r in without[:2])  # middles that outgrow the first block of 8
    assert [r.middle for r in with_grown] == [r.middle for r in without]
    assert [r.written for r in with_grown] == [r.written for r in without]
    assert all(g.forwards <= w.forwards for g, w in zip(with_grown, without))
    assert sum(g.forwards for g in with_grown) < sum(w.forwards for w in without)


def test_every_pass_is_a_forward_a_candidate_replay_or_a_drafted_one(eng, monkeypatch) -> None:
    """With every middle refused, the request runs both candidates; the second replays the
    first's passes, some of which were drafted: the passes add up either way."""
    monkeypatch.setattr(engine.api, "constraint_for", lambda language: _RefuseEveryMiddle())
    runs = {}
    for width in (0, 3):
        eng.lookahead_width = width
        eng.forget_context()
        runs[width] = eng.infill(CASES[1][0], CASES[1][1], language="python", max_tokens=12)
    plain, drafted = runs[0], runs[3]
    assert plain.candidates_tried == drafted.candidates_tried == 2
    assert (drafted.middle, drafted.written, drafted.stop_reason) == (plain.middle, plain.written, plain.stop_reason)
    assert drafted.forwards + drafted.replayed + drafted.lookahead_passes == plain.forwards + plain.replayed
    assert drafted.forwards <= drafted.written + 2


def test_the_first_pass_encodes_the_context_and_several_canvases_at_once(eng) -> None:
    """encode_with_canvas over (3, N) canvases: each row is what it gets alone."""
    tok, model = eng.tokenizer, eng.model
    prefix_ids, suffix_ids = eng.context_ids(CASES[3][0], CASES[3][1])
    rows = torch.full((3, 8), tok.mask_id)
    rows[1, 0] = tok.encode(" self")[0]
    rows[2, :2] = torch.tensor(tok.encode(" self.y")[:2])
    _, together = model.encode_with_canvas(prefix_ids, suffix_ids, rows)
    assert together.shape == (3, 8, model.cfg.vocab_size)
    for i in range(3):
        _, alone = model.encode_with_canvas(prefix_ids, suffix_ids, rows[i : i + 1])
        assert torch.allclose(together[i], alone[0], atol=1e-4)
    assert not torch.allclose(together[0], together[1], atol=1e-3)  # each canvas reads its own rows


def test_the_width_comes_from_the_environment_and_a_bad_one_is_a_clear_error(monkeypatch) -> None:
    monkeypatch.setenv("INFILL_LOOKAHEAD_WIDTH", "0")
    assert engine.api.lookahead_width() == 0
    monkeypatch.setenv("INFILL_LOOKAHEAD_WIDTH", " 5 ")
    assert engine.api.lookahead_width() == 5
    assert engine.api.lookahead_width("cuda") == 5  # the variable wins on any device
    monkeypatch.delenv("INFILL_LOOKAHEAD_WIDTH")
    assert engine.api.lookahead_width() == engine.api.LOOKAHEAD_WIDTH
    assert engine.api.lookahead_width("cuda:0") == engine.api.LOOKAHEAD_WIDTH_GPU > engine.api.LOOKAHEAD_WIDTH
    for bad in ("-1", "17", "three"):
        monkeypatch.setenv("INFILL_LOOKAHEAD_WIDTH", bad)
        with pytest.raises(engine.api.InfillError, match="INFILL_LOOKAHEAD_WIDTH"):
            engine.api.lookahead_width()
