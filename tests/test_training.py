"""Training smoke test: a few steps on a tiny config lower the loss, and a run resumes."""
import json
import random
from pathlib import Path

import torch

import engine
from engine.modeldir import load_infill_model, read_config
from engine.tokenizer import Tokenizer
from lab.training import train
from lab.training.data import DataConfig, ExampleStream, collate, make_example
from lab.training.tokenizer_train import train_tokenizer


def _corpus(tmp: Path) -> Path:
    root = Path(engine.__file__).parent
    docs = [{"path": str(p), "source": "test", "language": "python", "text": p.read_text()} for p in sorted(root.rglob("*.py"))]
    corpus = tmp / "corpus"
    corpus.mkdir()
    for split, part in (("train", docs[2:]), ("valid", docs[:2])):
        (corpus / f"{split}.jsonl").write_text("".join(json.dumps(d) + "\n" for d in part))
    return corpus


def test_examples_keep_context_clean_and_canvas_well_formed(tmp_path):
    corpus = _corpus(tmp_path)
    texts = [json.loads(l)["text"] for l in (corpus / "train.jsonl").read_text().splitlines()]
    tok_path = tmp_path / "tok.json"
    train_tokenizer(iter(texts), 400).save(str(tok_path))
    tok = Tokenizer.from_file(tok_path)
    cfg = DataConfig(prefix_tokens=64, suffix_tokens=32)
    rng = random.Random(0)
    for _ in range(200):
        ex = make_example(rng.choice(texts), tok, cfg, rng)
        assert ex.prefix[0] == tok.bos_id and len(ex.prefix) <= cfg.prefix_tokens
        assert len(ex.suffix) <= cfg.suffix_tokens and 1 <= len(ex.canvas) <= cfg.canvas_max
        if tok.eom_id in ex.canvas:  # EOM padding is a contiguous tail
            first = ex.canvas.index(tok.eom_id)
            assert all(t == tok.eom_id for t in ex.canvas[first:])
    batch = collate([make_example(texts[0], tok, cfg, rng) for _ in range(4)], tok, cfg, rng)
    context = (batch.segments == 1) | (batch.segments == 2)
    assert not (batch.ids[context] == tok.mask_id).any()  # prefix and suffix never noised
    assert (batch.ids[batch.masked] == tok.mask_id).all()


def test_few_steps_lower_the_loss_and_resume_continues(tmp_path):
    corpus = _corpus(tmp_path)
    run = tmp_path / "run"
    common = ["--run", str(run), "--corpus", str(corpus), "--d-model", "32", "--layers", "1", "--heads", "2", "--batch-size", "8",
              "--prefix-tokens", "64", "--suffix-tokens", "32", "--lr", "3e-3", "--warmup", "0.05", "--eval-every", "1000", "--log-every", "5", "--threads", "1"]
    tok_path = run / "tokenizer.json"
    run.mkdir()
    train_tokenizer((json.loads(l)["text"] for l in (corpus / "train.jsonl").read_text().splitlines()), 400).save(str(tok_path))
    tok = Tokenizer.from_file(tok_path)
    cfg = DataConfig(prefix_tokens=64, suffix_tokens=32)
    val = train.validation_batches(tok, cfg, corpus, n_batches=2, batch_size=8)

    def val_loss(model):
        model.eval()
        with torch.no_grad():
            return sum(float(train.compute_loss(model, b, torch.device("cpu"))[0]) for b in val) / len(val)

    torch.manual_seed(0)
    from engine.model import InfillTransformer, ModelConfig

    initial = InfillTransformer(ModelConfig(vocab_size=tok.vocab_size, d_model=32, n_layers=1, n_heads=2, ffn_hidden=80))
    before = val_loss(initial)
    assert train.main(common + ["--max-steps", "60", "--time-budget", "600"]) == 0
    trained = load_infill_model(run / "model", read_config(run / "model"))
    after = val_loss(trained)
    assert after < before - 0.5, (before, after)
    info = read_config(run / "model")["training"]
    assert info["steps"] == 60 and info["tokens_seen"] > 0
    # --eval-every 1000 never fired: the run still ends its validation curve where it stopped
    assert info["last_validation"]["step"] == 60
    assert [json.loads(l)["validation"]["step"] for l in (run / "log.jsonl").read_text().splitlines() if "validation" in l] == [60]
    assert train.main(common + ["--max-steps", "70", "--time-budget", "600", "--resume"]) == 0
    assert read_config(run / "model")["training"]["steps"] == 70
    assert any("step" in json.loads(l) for l in (run / "log.jsonl").read_text().splitlines())

    # Each checkpoint kept a snapshot of its weights; averaging them is measured, not assumed.
    from lab.training import average
    from lab.training.snapshots import snapshot_paths

    snaps = snapshot_paths(run)
    assert [p.name for p in snaps] == ["step_000060.pt", "step_000070.pt"]
    mean, steps = average.average_states(snaps)
    from lab.training.checkpoint import load_verified

    a, b = (load_verified(p)["model"] for p in snaps)
    assert steps == [60, 70] and torch.allclose(mean["embed.weight"], (a["embed.weight"] + b["embed.weight"]) / 2)
    assert average.main(["--run", str(run), "--corpus", str(corpus), "--last", "1"]) == 2  # one snapshot is no average
    assert average.main(["--run", str(run), "--corpus", str(corpus), "--batches", "2", "--write"]) == 0
    written = read_config(run / "model")["training"]
    if "averaged_steps" in written:  # written only when the average scored better
        assert written["averaged_steps"] == [60, 70]
        assert torch.allclose(load_infill_model(run / "model", read_config(run / "model")).embed.weight, mean["embed.weight"])


def test_worker_processes_prepare_distinct_well_formed_batches(tmp_path):
    # The GPU path (--data-workers N): batches come from N processes, each its own stream.
    from lab.training.data import batch_source

    corpus = _corpus(tmp_path)
    docs = [json.loads(l) for l in (corpus / "train.jsonl").read_text().splitlines()]
    tok_path = tmp_path / "tok.json"
    train_tokenizer((d["text"] for d in docs), 400).save(str(tok_path))
    tok = Tokenizer.from_file(tok_path)
    cfg = DataConfig(prefix_tokens=64, suffix_tokens=32)
    batches = batch_source(docs, tok, cfg, seed=3, edit_fraction=0.1, batch_size=4, workers=2)
    got = [next(batches) for _ in range(4)]
    for batch in got:
        assert batch.ids.shape[0] == 4 and batch.tokens > 0
        context = (batch.segments == 1) | (batch.segments == 2)
        assert not (batch.ids[context] == tok.mask_id).any()
    # Two workers seeded apart: their first batches differ.
    assert got[0].ids.shape != got[1].ids.shape or not torch.equal(got[0].ids, got[1].ids)
    # And training runs on them end to end.
    run = tmp_path / "run"
    run.mkdir()
    (run / "tokenizer.json").write_bytes(tok_path.read_bytes())
    args = ["--run", str(run), "--corpus", str(corpus), "--d-model", "32", "--layers", "1", "--heads", "2", "--batch-size", "4",
            "--prefix-tokens", "64", "--suffix-tokens", "32", "--max-steps", "6", "--time-budget", "600", "--threads", "1",
            "--data-workers", "2", "--snapshots", "0"]
    assert train.main(args) == 0
    assert read_config(run / "model")["training"]["steps"] == 6
    assert not (run / "snapshots").exists()


def test_chunked_linear_cross_entropy_matches_autograd():
    # The fused projection + CE gives the same loss and gradients as the plain way.
    from lab.training.loss import linear_cross_entropy
    import torch.nn.functional as F

    torch.manual_seed(0)
    hidden = torch.randn(37, 16, requires_grad=True)
    weight = torch.randn(50, 16, requires_grad=True)
    targets = torch.randint(0, 50, (37,))
    w = torch.rand(37)
    out = linear_cross_entropy(hidden, weight, targets, w, chunk=8)
    out.loss.backward()
    h2, w2 = hidden.detach().clone().requires_grad_(), weight.detach().clone().requires_grad_()
    ce = F.cross_entropy(h2 @ w2.t(), targets, reduction="none")
    (ce * w).sum().backward()
    assert torch.allclose(out.loss, (ce * w).sum(), atol=1e-4)
    assert torch.allclose(out.ce, ce.detach(), atol=1e-5)
    assert torch.equal(out.correct, (h2 @ w2.t()).argmax(-1) == targets)
    assert torch.allclose(hidden.grad, h2.grad, atol=1e-5) and torch.allclose(weight.grad, w2.grad, atol=1e-5)
    # Under bf16 autocast the matmuls run in bf16 and the result stays close.
    hidden.grad = None
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out_bf16 = linear_cross_entropy(hidden, weight, targets, w, chunk=8)
    assert abs(float(out_bf16.loss) - float(out.loss)) / float(out.loss) < 0.02


def test_canvas_copies_are_complementary_and_see_only_the_context(tmp_path):
    from engine.model import SEG_CANVAS, InfillTransformer

    corpus = _corpus(tmp_path)
    texts = [json.loads(l)["text"] for l in (corpus / "train.jsonl").read_text().splitlines()]
    tok_path = tmp_path / "tok.json"
    train_tokenizer(iter(texts), 400).save(str(tok_path))
    tok = Tokenizer.from_file(tok_path)
    cfg = DataConfig(prefix_tokens=64, suffix_tokens=32)
    rng = random.Random(1)
    examples = [make_example(texts[i % len(texts)], tok, cfg, rng) for i in range(6)]
    batch = collate(examples, tok, cfg, rng, copies=2)
    for row, ex in enumerate(examples):
        first, second = batch.segments[row] == SEG_CANVAS, batch.segments[row] == SEG_CANVAS + 1
        assert int(first.sum()) == int(second.sum()) == len(ex.canvas)
        assert torch.equal(batch.targets[row][first], batch.targets[row][second])  # one middle, two noisings
        assert torch.equal(batch.positions[row][first], batch.positions[row][second])
        m1, m2 = batch.masked[row][first], batch.masked[row][second]
        if m1.all() or (~m1).all():
            continue  # a forced mask breaks exact complementarity on tiny canvases
        assert torch.equal(m1, ~m2)  # every middle token is masked in exactly one copy
        assert int(batch.canvas_lengths[row]) == 2 * len(ex.canvas)
    mask = InfillTransformer.attention_mask(batch.segments)[:, 0]
    seg = batch.segments
    q, k = seg.unsqueeze(2), seg.unsqueeze(1)
    # A copy never sees the other copy; every copy sees the whole context.
    assert not mask[(q == SEG_CANVAS) & (k == SEG_CANVAS + 1)].any()
    assert not mask[(q == SEG_CANVAS + 1) & (k == SEG_CANVAS)].any()
    assert mask[(q >= SEG_CANVAS) & ((k == 1) | (k == 2))].all()
    # The context never sees a canvas copy.
    assert not mask[((q == 1) | (q == 2)) & (k >= SEG_CANVAS)].any()


def test_batches_group_examples_of_similar_length(tmp_path):
    corpus = _corpus(tmp_path)
    docs = [json.loads(l) for l in (corpus / "train.jsonl").read_text().splitlines()]
    tok_path = tmp_path / "tok.json"
    train_tokenizer((d["text"] for d in docs), 400).save(str(tok_path))
    tok = Tokenizer.from_file(tok_path)
    cfg = DataConfig(prefix_tokens=64, suffix_tokens=32)
    stream = ExampleStream(docs, tok, cfg, seed=0)
    pad = sum(float((b.segments == 0).float().mean()) for b, _ in zip(stream.batches(8, pool=8), range(16))) / 16
    unsorted = ExampleStream(docs, tok, cfg, seed=0)
    pad_unsorted = sum(float((b.segments == 0).float().mean()) for b, _ in zip(unsorted.batches(8, pool=1), range(16))) / 16
    assert pad < pad_unsorted


def test_block_attention_equals_the_full_mask_on_real_positions(tmp_path):
    # Training attends per aligned block; it must be the same attention as the mask
    # that defines the model (engine.model.InfillTransformer.attention_mask).
    from engine.model import InfillTransformer, ModelConfig

    corpus = _corpus(tmp_path)
    texts = [json.loads(l)["text"] for l in (corpus / "train.jsonl").read_text().splitlines()]
    tok_path = tmp_path / "tok.json"
    train_tokenizer(iter(texts), 400).save(str(tok_path))
    tok = Tokenizer.from_file(tok_path)
    cfg = DataConfig(prefix_tokens=64, suffix_tokens=32)
    rng = random.Random(2)
    examples = [make_example(texts[i % len(texts)], tok, cfg, rng) for i in range(5)]
    examples.append(make_example(texts[0][:40], tok, cfg, rng))  # a short row: pads in every block
    batch = collate(examples, tok, cfg, rng, copies=2)
    assert batch.layout is not None and (batch.segments == 0).any()
    torch.manual_seed(0)
    model = InfillTransformer(ModelConfig(vocab_size=tok.vocab_size, d_model=32, n_layers=2, n_heads=2, ffn_hidden=80)).eval()
    with torch.no_grad():
        blocked = model(batch.ids, batch.positions, batch.segments, batch.layout)
        full = model(batch.ids, batch.positions, batch.segments)
    real = batch.segments != 0
    assert torch.allclose(blocked[real], full[real], atol=1e-5)


def test_learning_curves_drop_what_a_resumed_run_superseded(tmp_path):
    """A run killed after its last checkpoint logged validation points that the resumed
    run logs again at the same clock: the curve keeps the resumed ones, in time order."""
    from lab.training import curves

    def write_run(name, points):
        run = tmp_path / name
        (run / "model").mkdir(parents=True)
        (run / "model" / "config.json").write_text(json.dumps({"model": {"d_model": 32, "n_layers": 2, "vocab_size": 100, "ffn_hidden": 64}}))
        lines = [{"validation": {"elapsed": s, "masked_ce": ce, "ar_loss": ce + 1, "tokens": s * 10}} for s, ce in points]
        (run / "log.jsonl").write_text("\n".join(json.dumps(l) for l in lines + [{"step": 1}]) + "\n")
        return run

    # killed at 3600 s after a checkpoint at 1800 s; the resumed run logs 2700 s and 3600 s again
    a = write_run("a", [(900, 5.0), (1800, 4.0), (2700, 3.9), (3600, 3.8), (2700, 3.5), (3600, 3.0), (4500, 2.9)])
    b = write_run("b", [(900, 5.5), (1800, 4.5), (3600, 4.0)])
    curve = curves.read_curve(a)
    assert [p[0] * 3600 for p in curve["points"]] == [900, 1800, 2700, 3600, 4500]
    assert [p[1] for p in curve["points"]] == [5.0, 4.0, 3.5, 3.0, 2.9]
    assert curve["parameters"] == 100 * 32 + 2 * (4 * 32 * 32 + 3 * 32 * 64 + 2 * 32) + 32
    summary = curves.summarize([curve, curves.read_curve(b)])
    assert summary["common_hours"] == 1.0
    first, second = summary["runs"]
    assert first["masked_ce_at_common"] == 3.0 and second["masked_ce_at_common"] == 4.0
    assert first["masked_ce_slope_per_hour"] == round((3.0 - curves.value_at(curve["points"], 2 / 3, 1)) / (1 / 3), 4)
    out = tmp_path / "curves.png"
    assert curves.main([str(a), str(b), "--out", str(out), "--json", str(tmp_path / "c.json")]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and json.loads((tmp_path / "c.json").read_text())["runs"][0]["run"] == "a"
    assert curves.main([str(write_run("c", [(900, 5.0)])), "--out", str(out)]) == 2  # one point is no curve


def _tiny_run_args(tmp_path: Path, *extra: str) -> tuple[Path, list[str]]:
    """A corpus, a 400-entry tokenizer trained on it, and `python -m lab train` arguments for a
    one-layer model that trains in seconds (plus `extra`)."""
    corpus = _corpus(tmp_path)
    tok_path = tmp_path / "tokenizer.json"
    train_tokenizer((json.loads(l)["text"] for l in (corpus / "train.jsonl").read_text().splitlines()), 400).save(str(tok_path))
    return corpus, ["--corpus", str(corpus), "--tokenizer", str(tok_path), "--d-model", "32", "--layers", "1", "--heads", "2",
                    "--eval-every", "1000", "--log-every", "5", "--threads", "1", "--time-budget", "600", *extra]


def test_init_from_counts_its_own_steps_and_resumes_without_resetting(tmp_path):
    """--init-from carries the source model's steps and tokens on, but --max-steps and the
    schedule count the new run's steps; a resume (with the same arguments) keeps its place."""
    corpus, small = _tiny_run_args(tmp_path, "--batch-size", "4", "--prefix-tokens", "32", "--suffix-tokens", "16")
    assert train.main(["--run", str(tmp_path / "a")] + small + ["--max-steps", "20"]) == 0
    source = read_config(tmp_path / "a" / "model")["training"]
    assert source["steps"] == 20
    b = ["--run", str(tmp_path / "b"), "--init-from", str(tmp_path / "a" / "model")] + small
    assert train.main(b + ["--max-steps", "10"]) == 0  # 10 steps of its own, not 0 (20 >= 10)
    info = read_config(tmp_path / "b" / "model")["training"]
    assert info["steps"] == 30 and info["tokens_seen"] > source["tokens_seen"]
    assert info["train_seconds"] >= source["train_seconds"]
    assert train.main(b + ["--max-steps", "15", "--resume"]) == 0
    info = read_config(tmp_path / "b" / "model")["training"]
    assert info["steps"] == 35 and info["train_seconds"] >= source["train_seconds"]


def test_compare_scores_models_on_one_validation_set(tmp_path):
    """A trained model beats its untrained starting point on the same batches; the exit
    status says whether the last model is better than the first."""
    from lab.training import compare

    corpus, small = _tiny_run_args(tmp_path, "--batch-size", "8", "--prefix-tokens", "64", "--suffix-tokens", "32", "--lr", "3e-3")
    assert train.main(["--run", str(tmp_path / "short")] + small + ["--max-steps", "1"]) == 0
    assert train.main(["--run", str(tmp_path / "long")] + small + ["--max-steps", "60"]) == 0
    short, long = tmp_path / "short" / "model", tmp_path / "long" / "model"
    rows = compare.score([short, long], corpus, n_batches=2)
    assert rows[1]["masked_ce"] < rows[0]["masked_ce"] - 0.3
    assert compare.main([str(short), str(long), "--corpus", str(corpus), "--batches", "2", "--json", str(tmp_path / "c.json")]) == 0
    assert compare.main([str(long), str(short), "--corpus", str(corpus), "--batches", "2"]) == 1
    assert json.loads((tmp_path / "c.json").read_text())[1]["steps"] == 60
    # --dev: each model also infills dev items; the report carries what it measured
    assert compare.main([str(short), str(long), "--corpus", str(corpus), "--batches", "2", "--dev", "2", "--json", str(tmp_path / "d.json")]) == 0
    dev = [row["dev"] for row in json.loads((tmp_path / "d.json").read_text())]
    # (a model trained for a step or sixty may answer both items empty: then it wrote no
    # token and tokens per forward is 0; that the scoring ran is what is checked here)
    assert [d["dev_items"] for d in dev] == [2, 2]
    assert all(0 <= d["exact_match"] <= 100 and 0 <= d["edit_similarity"] <= 100 and 0 <= d["tpf"] <= 64 and d["p50_ms"] > 0 for d in dev), dev


def test_dev_diff_lists_the_items_one_model_answers_right_and_the_other_not(monkeypatch):
    """Each listed item carries the reference and both answers, paired by item."""
    from types import SimpleNamespace

    import engine
    from lab.evaluation.items import DEV_FILE, load_items
    from lab.training import compare

    items = load_items(6, path=DEV_FILE)
    right = {"first": {0, 1, 2}, "last": {1, 2, 3}}  # item 0 lost, item 3 won

    class Fake:
        def __init__(self, name):
            self.name, self.asked = name, 0

        def forget_context(self):
            pass

        def infill(self, prefix, suffix, language=None):  # asked in the items' order
            i, self.asked = self.asked, self.asked + 1
            assert (prefix, suffix) == (items[i]["prefix"], items[i]["suffix"])
            return SimpleNamespace(middle=items[i]["middle"] if i in right[self.name] else "", stop_reason=f"{self.name}-{i}", ms=1.0, tokens=1, forwards=1)

    monkeypatch.setattr(engine, "load", lambda model_dir: Fake(str(model_dir)))
    diff = compare.dev_diff("first", "last", 6)
    assert [r["reference"] for r in diff["lost"]] == [items[0]["middle"]] and diff["lost"][0]["last"] == ""
    assert diff["lost"][0]["first"] == items[0]["middle"] and diff["lost"][0]["last_stop"] == "last-0"
    assert [r["reference"] for r in diff["won"]] == [items[3]["middle"]]
    assert diff["empty"] == [3, 3]


def test_init_from_reads_text_with_the_source_models_tokenizer(tmp_path):
    """A continued run without --tokenizer uses the source model's tokenizer (a new one trained
    on the corpus would scramble the embedding rows), and one given explicitly must match it."""
    corpus, small = _tiny_run_args(tmp_path, "--batch-size", "4", "--prefix-tokens", "32", "--suffix-tokens", "16", "--max-steps", "2")
    assert train.main(["--run", str(tmp_path / "a")] + small) == 0
    source = tmp_path / "a" / "model"
    without_tokenizer = [a for i, a in enumerate(small) if a != "--tokenizer" and small[i - 1] != "--tokenizer"]
    assert train.main(["--run", str(tmp_path / "b"), "--init-from", str(source)] + without_tokenizer) == 0
    assert not (tmp_path / "b" / "tokenizer.json").exists()  # nothing trained anew
    assert (tmp_path / "b" / "model" / "tokenizer.json").read_bytes() == (source / "tokenizer.json").read_bytes()
    other = tmp_path / "other.json"
    train_tokenizer(["def f(x):\n    return x\n"] * 50, 300).save(str(other))
    assert train.main(["--run", str(tmp_path / "c"), "--init-from", str(source)] + without_tokenizer + ["--tokenizer", str(other)]) == 2
