"""The model card is written from the run's records, including the learning-curve trend."""
import json

from lab.fixtures.tiny_model import make_tiny_model_dir
from lab.training.model_card import _trend, render


def _curve(n=12):
    return [{"step": 100 * i, "tokens": 1_000_000 * i, "masked_ce": 5.0 - 0.1 * i, "masked_acc": 0.1, "ar_loss": 6.0 - 0.2 * i} for i in range(1, n + 1)]


def test_trend_reads_the_slope_per_ten_million_tokens():
    text = _trend(_curve())
    assert "masked CE" in text and "-1.00 per 10M tokens" in text and "-2.00 per 10M tokens" in text
    assert "too few" in _trend(_curve(3))


def test_card_renders_from_a_run_directory(tmp_path):
    model_dir = make_tiny_model_dir(tmp_path / "model")
    run = tmp_path / "run"
    run.mkdir()
    (run / "log.jsonl").write_text("".join(json.dumps({"validation": p}) + "\n" for p in _curve()))
    eval_report = {"humaneval_single_line": {"engine": {"pass_at_1": 1.5, "exact_match": 1.0, "mean_ms": 100, "tokens_per_forward": 0.5, "tasks": 3}}}
    card = render(model_dir, run, tmp_path / "no-corpus", eval_report, None)
    assert "| 1200 | 12.0M |" in card  # the last validation point is in the table
    assert "1.5%" in card and "per 10M tokens" in card


def test_card_says_when_the_weights_are_a_checkpoint_average(tmp_path):
    model_dir = make_tiny_model_dir(tmp_path / "model")
    run = tmp_path / "run"
    run.mkdir()
    (run / "log.jsonl").write_text("".join(json.dumps({"validation": p}) + "\n" for p in _curve()))
    assert "mean of the last" not in render(model_dir, run, tmp_path / "no-corpus", None, None)
    config = json.loads((model_dir / "config.json").read_text())
    config.setdefault("training", {}).update({"averaged_steps": [900, 1000],
        "averaged_validation": {"average": {"masked_ce": 2.9}, "latest": {"masked_ce": 3.0}, "batches": 24}})
    (model_dir / "config.json").write_text(json.dumps(config))
    card = render(model_dir, run, tmp_path / "no-corpus", None, None)
    assert "mean of the last 2 checkpoints (steps 900, 1,000)" in card and "2.900 vs 3.000" in card


def test_card_curve_stops_at_the_published_step(tmp_path):
    # The run went on training after the model was published: later points are not its.
    model_dir = make_tiny_model_dir(tmp_path / "model")
    config = json.loads((model_dir / "config.json").read_text())
    config.setdefault("training", {})["steps"] = 800
    (model_dir / "config.json").write_text(json.dumps(config))
    run = tmp_path / "run"
    run.mkdir()
    (run / "log.jsonl").write_text("".join(json.dumps({"validation": p}) + "\n" for p in _curve()))
    card = render(model_dir, run, tmp_path / "no-corpus", None, None)
    assert "| 800 | 8.0M |" in card and "| 900 |" not in card


def test_card_lists_the_corpus_per_language_and_source_from_its_summary(tmp_path):
    model_dir = make_tiny_model_dir(tmp_path / "model")
    run = tmp_path / "run"
    run.mkdir()
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    summary = {"train": 90, "valid": 2, "bytes": 3_000_000, "duplicates": 1, "near_duplicates": 7,
               "languages": {"go": {"train": 40, "valid": 1, "mb": 1.0, "mean_weight": 1.4, "sampling_share": 0.3},
                             "python": {"train": 50, "valid": 1, "mb": 2.0, "mean_weight": 1.6, "sampling_share": 0.7}},
               "sources": {"deb:golang-x-dev=1.0-1": {"languages": ["go"], "train": 40, "valid": 1, "mb": 1.0, "near_duplicates": 3},
                           "pypi:x==1.0": {"languages": ["python"], "train": 50, "valid": 1, "mb": 2.0, "near_duplicates": 4}}}
    (corpus / "summary.json").write_text(json.dumps(summary))
    card = render(model_dir, run, corpus, None, None)
    assert "| go | 40 | 1 | 1.0 | 1.40 | 30.0% |" in card
    assert "| deb:golang-x-dev=1.0-1 | go | 40 | 1 | 1.00 | 3 |" in card
    assert "7 files dropped" in card and "python 67%, go 33%" in card and "the corpus is 3 MB" in card
    assert "pinned Debian packages for Go and Rust; PSF, MIT, BSD, ISC and Apache licences" in card


def test_curves_section_reports_each_run_and_the_leader(tmp_path):
    import json

    from lab.training.model_card import curves_section

    assert curves_section(tmp_path / "missing.json") == []
    summary = {"common_hours": 0.5, "runs": [
        {"shape": "d256 x 6 layers", "parameters": 6.8e6, "tokens_at_end": 9e6, "masked_ce_at_common": 3.6, "ar_ce_at_common": 4.1, "masked_ce_slope_per_hour": -0.5},
        {"shape": "d512 x 8 layers", "parameters": 29.3e6, "tokens_at_end": 3e6, "masked_ce_at_common": 4.2, "ar_ce_at_common": 5.1, "masked_ce_slope_per_hour": -0.2}]}
    (tmp_path / "c.json").write_text(json.dumps(summary))
    text = "\n".join(curves_section(tmp_path / "c.json"))
    assert "| d256 x 6 layers | 6.8M | 9.0M | 3.600 | 4.100 | -0.500/h |" in text
    assert "| d512 x 8 layers | 29.3M | 3.0M | 4.200 | 5.100 | -0.200/h |" in text
    assert "(d256 x 6 layers leads" in text and "learning_curves.png" in text


def test_a_continued_run_says_what_it_started_from_and_its_own_recipe(tmp_path):
    """A run started with --init-from: the card names the model it continued, the corpus
    it went on with and its own schedule, read from the run's checkpoint."""
    from pathlib import Path

    from lab.training.checkpoint import atomic_save
    from lab.training.model_card import _recipe_lines, _run_record

    run = tmp_path / "cont"
    run.mkdir()
    args = {"run": str(run), "init_from": "engine/default_model", "corpus": "/data/corpus_v2", "lr": 3e-4, "warmup": 0.05,
            "batch_size": 16, "time_budget": 3600.0, "clock": "cpu", "compile": True}
    atomic_save({"args": args, "history": {"first_step": 11840}}, run / "checkpoint.pt")
    (run / "log.jsonl").write_text('{"step": 11850, "tokens": 68900000, "loss": 4.2}\n{"validation": {"step": 11900, "tokens": 69300000}}\n')
    lines = "\n".join(_recipe_lines(run, _run_record(run)))
    assert "Continued from the model in `engine/default_model` (step 11,840, about 68.9M tokens seen)" in lines
    assert "/data/corpus_v2" in lines and "peak LR 0.0003" in lines and "--init-from engine/default_model" in lines
    # a run from scratch keeps the release run's recipe; no checkpoint at all reads as from scratch
    assert "runs/main" in "\n".join(_recipe_lines(Path(tmp_path / "none"), _run_record(tmp_path / "none")))


def test_card_wording_is_the_shipped_cards(tmp_path):
    """The generator writes the shipped card's product wording: no word of how the work was
    organized, and a corpus without Debian packages does not claim them."""
    from engine.api import DEFAULT_MODEL_DIR

    model_dir = make_tiny_model_dir(tmp_path / "model")
    run = tmp_path / "run"
    run.mkdir()
    (run / "log.jsonl").write_text("".join(json.dumps({"validation": p}) + "\n" for p in _curve()))
    card = render(model_dir, run, tmp_path / "no-corpus", None, None)
    assert "session" not in card.lower() and "issue" not in card.lower()
    shipped = (DEFAULT_MODEL_DIR / "MODEL_CARD.md").read_text().splitlines()
    for start in ("- Command:", "- Tokens first:"):
        assert next(line for line in card.splitlines() if line.startswith(start)) in shipped
    origin = "(CPython 3.11.7 standard library and pinned PyPI and npm packages; PSF, MIT, BSD and Apache licences)"
    assert origin in card and any(origin in line for line in shipped) and "pinned Debian" not in card
