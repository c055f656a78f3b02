"""Injected faults: what breaks under the engine and what the user sees. Each fault and
its outcome is also a row of the table in docs/reliability.md."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import engine
from engine.model_dir_watch import ModelDirWatch


@pytest.fixture()
def own_model_dir(tmp_path: Path) -> Path:
    from lab.fixtures.tiny_model import make_tiny_model_dir

    return make_tiny_model_dir(tmp_path / "model")


@pytest.mark.parametrize("fault", ["deleted", "truncated", "overwritten"])
def test_a_loaded_model_keeps_serving_when_its_directory_goes_bad(own_model_dir: Path, fault: str) -> None:
    eng = engine.load(own_model_dir)
    before = eng.infill("def f(x):\n    return ", "\n", max_tokens=4, constrained=False, seed=1).middle
    weights = own_model_dir / "model.safetensors"
    if fault == "deleted":
        shutil.rmtree(own_model_dir)
    elif fault == "truncated":
        with open(weights, "r+b") as handle:
            handle.truncate(0)
    else:
        size = weights.stat().st_size
        with open(weights, "r+b") as handle:
            handle.write(os.urandom(size))
    # The weights were copied at load: nothing is read from the directory any more.
    assert eng.infill("def f(x):\n    return ", "\n", max_tokens=4, constrained=False, seed=1).middle == before


def test_model_dir_watch_reports_each_change_once(own_model_dir: Path) -> None:
    clock = [0.0]
    watch = ModelDirWatch(own_model_dir, interval_s=5.0, clock=lambda: clock[0])
    assert watch.check() is None
    (own_model_dir / "model.safetensors").write_bytes(b"new weights")
    assert watch.check() is None  # not yet: at most every interval_s
    clock[0] += 6
    message = watch.check()
    assert message is not None and "changed while in use" in message and "model.safetensors" in message
    clock[0] += 6
    assert watch.check() is None  # told once
    shutil.rmtree(own_model_dir)
    clock[0] += 6
    message = watch.check()
    assert message is not None and "disappeared" in message
    clock[0] += 6
    assert watch.check() is None
    own_model_dir.mkdir()
    (own_model_dir / "config.json").write_text("{}")
    clock[0] += 6
    assert "changed" in (watch.check() or "")
