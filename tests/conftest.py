"""Shared fixtures. Tests run torch on one thread: small models are no faster on two,
and one thread never suffers OpenMP oversubscription next to the servers tests start."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from hypothesis import settings

torch.set_num_threads(1)

# Property tests draw the same examples on every run (a verdict that depends on the run's
# random draw is a flaky test; a counterexample once found is kept as an @example). Set
# HYPOTHESIS_PROFILE=explore to search afresh.
settings.register_profile("ci", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session")
def tok():
    """The embedded model's tokenizer."""
    import engine
    from engine.modeldir import load_tokenizer

    return load_tokenizer(engine.DEFAULT_MODEL_DIR)


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    from lab.fixtures.tiny_model import make_tiny_model_dir

    return make_tiny_model_dir(tmp_path_factory.mktemp("tiny") / "model")


@pytest.fixture(scope="session")
def tiny_engine(tiny_model_dir):
    import engine

    return engine.load(tiny_model_dir)


@pytest.fixture()
def tiny_faults(tiny_engine):
    """The session engine's passes wrapped for one test (lab/fixtures/faulty_model.py), so a
    test can hold them: a request then cannot finish before the test has done what must
    come first (hang up, supersede), however fast or slow the machine."""
    from lab.fixtures.faulty_model import ModelFaults

    faults = ModelFaults(tiny_engine.model)
    yield faults
    faults.restore()
