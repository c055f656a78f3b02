"""engine.load: the sampler's context windows follow what the model was trained on."""
import json

import engine
from lab.fixtures.tiny_model import make_tiny_model_dir


def _with_config(path, **entries):
    config_path = path / "config.json"
    config = json.loads(config_path.read_text())
    config.update(entries)
    config_path.write_text(json.dumps(config))
    return path


def test_windows_default_to_the_trained_ones(tmp_path):
    model_dir = _with_config(make_tiny_model_dir(tmp_path / "m"), training={"data": {"prefix_tokens": 64, "suffix_tokens": 32}})
    eng = engine.load(model_dir)
    assert (eng.settings.context_tokens, eng.settings.suffix_tokens) == (64, 32)
    prefix_ids, suffix_ids = eng.context_ids("x = 1\n" * 500, "y = 2\n" * 500)
    assert len(prefix_ids) <= 64 and len(suffix_ids) <= 32
    # The copy rule may look further back than the model's window.
    assert len(eng.copy_source("x = 1\n" * 500, prefix_ids, eng.settings)) > 64


def test_a_sampler_entry_overrides_the_trained_windows(tmp_path):
    model_dir = _with_config(
        make_tiny_model_dir(tmp_path / "m"),
        training={"data": {"prefix_tokens": 64, "suffix_tokens": 32}},
        sampler={"context_tokens": 128},
    )
    eng = engine.load(model_dir)
    assert (eng.settings.context_tokens, eng.settings.suffix_tokens) == (128, 32)


def test_without_a_training_record_the_engine_defaults_stay(tmp_path):
    eng = engine.load(make_tiny_model_dir(tmp_path / "m"))
    assert eng.settings.context_tokens == engine.SamplerSettings().context_tokens
