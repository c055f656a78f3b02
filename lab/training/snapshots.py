"""Snapshots: the model weights of a run's last few checkpoints, for averaging (average.py)."""
from __future__ import annotations

from pathlib import Path

import torch

from lab.training.checkpoint import atomic_save

SNAPSHOT_DIR = "snapshots"


def snapshot_paths(run: Path) -> list[Path]:
    """The run's snapshots, oldest first (file names carry the zero-padded step)."""
    return sorted((run / SNAPSHOT_DIR).glob("step_*.pt"))


def save_snapshot(run: Path, model: torch.nn.Module, step: int, tokens: int, keep: int) -> None:
    """Keep this checkpoint's weights; drop all but the newest `keep` snapshots."""
    folder = run / SNAPSHOT_DIR
    folder.mkdir(parents=True, exist_ok=True)
    weights = {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}
    atomic_save({"model": weights, "step": step, "tokens": tokens}, folder / f"step_{step:06d}.pt", keep_previous=False)
    for old in snapshot_paths(run)[:-keep] if keep > 0 else []:
        old.unlink(missing_ok=True)
