"""Crash-safe training: checkpoints survive kills, corruption and full disks (issue 20)."""
import errno
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from lab.training import train
from lab.training.checkpoint import KILL_POINTS, CheckpointError, atomic_save, load_latest, load_verified
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


# Where each kill point leaves the files: (temporary file left behind, newest file in place,
# the kill lands after the new checkpoint replaced the old one).
_AFTER_KILL = {
    "opened": (True, True, False),
    "half-written": (True, True, False),
    "synced": (True, True, False),
    "previous-kept": (True, False, False),
    "renamed": (False, True, True),
    "done": (False, True, True),
}


@pytest.mark.slow
def test_sigkill_at_every_point_of_a_save_loses_at_most_one_checkpoint_interval(tmp_path):
    """The run SIGKILLs itself at each named point of its second save in each life
    (INFILL_CHECKPOINT_KILL_AT): deterministic, whatever the machine's load."""
    assert set(_AFTER_KILL) == set(KILL_POINTS)
    run, args = _tiny_run(tmp_path)
    cmd = [sys.executable, "-m", "lab.training.train", *args, "--max-steps", "100000", "--time-budget", "100000", "--checkpoint-minutes", "0.004"]
    last_step = 0
    for life, point in enumerate(KILL_POINTS):
        env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT), INFILL_CHECKPOINT_KILL_AT=f"checkpoint.pt:{point}:2")
        proc = subprocess.run(cmd + (["--resume"] if life else []), cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
        out = proc.stdout
        assert proc.returncode == -signal.SIGKILL, (point, proc.returncode, out)
        if life:  # the run resumed where the last one was left
            assert f"resuming {run / 'checkpoint.pt'} at step {last_step} " in out, out
        tmp_left, newest_there, replaced = _AFTER_KILL[point]
        assert (run / "checkpoint.pt.tmp").exists() == tmp_left, (point, out)
        assert (run / "checkpoint.pt").exists() == newest_there, (point, out)
        saved = [int(line.split("checkpoint at step ")[1].split()[0]) for line in out.splitlines() if "checkpoint at step" in line]
        assert len(saved) == 1 and saved[0] > last_step, (point, out)  # one save completed, then the kill in the second
        state = load_latest(run / "checkpoint.pt")  # never a half-written file
        # At most one interval lost: the resumable step is the last completed save, or the
        # one in flight when its rename had landed.
        if replaced:
            assert state["step"] > saved[-1], (point, state["step"], saved)
        else:
            assert state["step"] == saved[-1], (point, state["step"], saved)
        last_step = state["step"]
    # And the run still resumes and finishes normally.
    assert train.main(args + ["--resume", "--max-steps", str(last_step + 5), "--time-budget", "100000"]) == 0
    assert load_verified(run / "checkpoint.pt")["step"] == last_step + 5


def test_a_kill_point_that_names_no_point_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("INFILL_CHECKPOINT_KILL_AT", "checkpoint.pt:midway:1")
    with pytest.raises(ValueError, match="expected <file name>:<point>:<n>"):
        atomic_save({"step": 1}, tmp_path / "checkpoint.pt")
