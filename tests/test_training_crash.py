"""Crash-safe training: checkpoints survive kills, corruption and full disks (issue 20)."""
import errno
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from lab.training import train
from lab.training.checkpoint import CheckpointError, atomic_save, load_latest, load_verified
from lab.training.tokenizer_train import train_tokenizer

ROOT = Path(__file__).resolve().parents[1]


def _tiny_run(tmp: Path) -> tuple[Path, list[str]]:
    docs = [{"path": str(p), "source": "test", "language": "python", "text": p.read_text()} for p in sorted((ROOT / "engine").rglob("*.py"))]
    corpus = tmp / "corpus"
    corpus.mkdir()
    for split, part in (("train", docs[2:]), ("valid", docs[:2])):
        (corpus / f"{split}.jsonl").write_text("".join(json.dumps(d) + "\n" for d in part))
    run = tmp / "run"
    run.mkdir()
    train_tokenizer((d["text"] for d in docs), 400).save(str(run / "tokenizer.json"))
    args = ["--run", str(run), "--corpus", str(corpus), "--d-model", "32", "--layers", "1", "--heads", "2", "--batch-size", "4",
            "--prefix-tokens", "64", "--suffix-tokens", "32", "--eval-every", "100000", "--log-every", "5", "--threads", "1", "--snapshots", "2"]
    return run, args


def test_a_failed_write_leaves_the_previous_checkpoint_intact(tmp_path):
    path = tmp_path / "checkpoint.pt"
    atomic_save({"step": 1}, path)

    def disk_full(handle, data):
        handle.write(data[:100])
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(CheckpointError, match="No space left on device.*checkpoint.pt is intact"):
        atomic_save({"step": 2}, path, _write=disk_full)
    assert load_verified(path) == {"step": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint.pt"]  # no half-written file left behind


def test_a_corrupt_checkpoint_is_detected_and_the_previous_one_used(tmp_path, capsys):
    path = tmp_path / "checkpoint.pt"
    atomic_save({"step": 1, "w": torch.ones(3)}, path)
    atomic_save({"step": 2, "w": torch.ones(3)}, path)
    data = bytearray(path.read_bytes())
    data[-10] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="checksum mismatch"):
        load_verified(path)
    assert load_latest(path)["step"] == 1
    assert "resuming from the previous checkpoint" in capsys.readouterr().out
    path.with_name("checkpoint.pt.prev").write_bytes(b"garbage")
    with pytest.raises(CheckpointError, match="no readable checkpoint"):
        load_latest(path)


def test_resume_refuses_unreadable_checkpoints_with_a_clear_message(tmp_path, capsys):
    run, args = _tiny_run(tmp_path)
    (run / "checkpoint.pt").write_bytes(b"\x00" * 64)
    assert train.main(args + ["--max-steps", "3", "--time-budget", "600", "--resume"]) == 2
    assert "not a readable checkpoint" in capsys.readouterr().err


@pytest.mark.slow
def test_sigkill_at_random_moments_loses_at_most_one_checkpoint_interval(tmp_path):
    run, args = _tiny_run(tmp_path)
    env = dict(os.environ, OMP_NUM_THREADS="1", INFILL_CHECKPOINT_WRITE_DELAY="0.15", PYTHONPATH=str(ROOT))
    cmd = [sys.executable, "-m", "lab.training.train", *args, "--max-steps", "100000", "--time-budget", "100000", "--checkpoint-minutes", "0.004"]
    rng = random.Random(7)
    kills, mid_save = 0, 0
    last_step = 0
    while kills < 5 or (mid_save == 0 and kills < 12):
        log = (tmp_path / f"out{kills}.txt").open("w")
        proc = subprocess.Popen(cmd + (["--resume"] if kills else []), cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.time() + 120
        while "checkpoint at step" not in (tmp_path / f"out{kills}.txt").read_text():  # at least one save this life
            assert proc.poll() is None and time.time() < deadline, (tmp_path / f"out{kills}.txt").read_text()
            time.sleep(0.1)
        time.sleep(rng.uniform(0.0, 1.5))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        log.close()
        kills += 1
        mid_save += (run / "checkpoint.pt.tmp").exists()
        text = (tmp_path / f"out{kills - 1}.txt").read_text()
        saved = [int(line.split("checkpoint at step ")[1].split()[0]) for line in text.splitlines() if "checkpoint at step" in line]
        state = load_latest(run / "checkpoint.pt")  # never a half-written file
        # The resumable step is the last completed save of this life (or the one in flight if its rename landed).
        assert state["step"] >= saved[-1] >= last_step, (state["step"], saved)
        last_step = state["step"]
    assert mid_save >= 1, "no kill landed during a save"
    # And the run still resumes and finishes normally.
    assert train.main(args + ["--resume", "--max-steps", str(last_step + 5), "--time-budget", "100000"]) == 0
    assert load_verified(run / "checkpoint.pt")["step"] == last_step + 5
