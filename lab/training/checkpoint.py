"""Crash-safe checkpoint files: written atomically, verified by a checksum when read.

A training run may be killed at any moment (SIGKILL, an out-of-memory kill, a full
disk, a machine that goes away). The rules that make that cost at most one checkpoint
interval:

* a checkpoint is written to a temporary file in the same folder, flushed and fsynced,
  then renamed over the old one (rename is atomic on POSIX file systems), and the
  folder is fsynced so the rename itself survives a crash;
* the file starts with a magic line and the SHA-256 of the payload: a file that was cut
  short or corrupted afterwards is detected when it is read, never half-loaded;
* the previous checkpoint is kept as `<name>.prev` until the new one is in place, so
  when the newest is unreadable the run resumes from the one before;
* a failed write (no space left, a read-only folder) removes its temporary file and
  raises `CheckpointError` with a message that says which checkpoint is still intact.
"""
from __future__ import annotations

import hashlib
import io
import os
import time
from pathlib import Path
from typing import Any, Callable, Optional

import torch

MAGIC = b"infill-checkpoint v1 sha256\n"
DIGEST_BYTES = 32


class CheckpointError(Exception):
    """A checkpoint could not be written or read; the message says what is left."""


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return  # not supported here (e.g. some network file systems)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_with_injected_delay(handle: Any, data: bytes) -> None:
    """handle.write(data); with INFILL_CHECKPOINT_WRITE_DELAY=seconds set (fault-injection
    tests), the first half is written, then the writer sleeps: a kill then lands mid-save."""
    delay = float(os.environ.get("INFILL_CHECKPOINT_WRITE_DELAY", "0") or 0)
    if delay <= 0:
        handle.write(data)
        return
    half = len(data) // 2
    handle.write(data[:half])
    handle.flush()
    time.sleep(delay)
    handle.write(data[half:])


def atomic_save(obj: Any, path: Path, keep_previous: bool = True, _write: Optional[Callable[[Any, bytes], None]] = None) -> None:
    """Write `obj` (anything torch.save takes) to `path` atomically with a checksum.

    `_write(handle, data)` replaces the plain `handle.write(data)`: tests use it to kill
    or fail a save half-way."""
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    payload = buffer.getvalue()
    data = MAGIC + hashlib.sha256(payload).digest() + payload
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "wb") as handle:
            (_write or _write_with_injected_delay)(handle, data)
            handle.flush()
            os.fsync(handle.fileno())
        if keep_previous and path.exists():
            os.replace(path, path.with_name(path.name + ".prev"))
        os.replace(tmp, path)
        _fsync_dir(path.parent)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        intact = path if path.exists() else path.with_name(path.name + ".prev")
        left = f"{intact} is intact" if intact.exists() else "no earlier checkpoint exists"
        raise CheckpointError(f"could not write {path}: {exc.strerror or exc}; {left}") from exc


def load_verified(path: Path) -> Any:
    """Read a checkpoint written by `atomic_save`, checking its checksum.

    Files from before checksums (plain torch.save) are read as they are."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CheckpointError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if data.startswith(MAGIC):
        digest = data[len(MAGIC) : len(MAGIC) + DIGEST_BYTES]
        payload = data[len(MAGIC) + DIGEST_BYTES :]
        if hashlib.sha256(payload).digest() != digest:
            raise CheckpointError(f"{path} is corrupt or cut short (checksum mismatch, {len(data):,} bytes)")
    else:
        payload = data
    try:
        return torch.load(io.BytesIO(payload), map_location="cpu", weights_only=False)
    except Exception as exc:  # a legacy file cut short, or not a checkpoint at all
        raise CheckpointError(f"{path} is not a readable checkpoint ({type(exc).__name__}: {exc})") from exc


def load_latest(path: Path, log: Callable[[str], None] = print) -> Optional[Any]:
    """The newest readable checkpoint among `path` and `path.prev` (None if neither
    exists); an unreadable one is reported, then skipped."""
    candidates = [path, path.with_name(path.name + ".prev")]
    existing = [p for p in candidates if p.exists()]
    errors = []
    for candidate in existing:
        try:
            state = load_verified(candidate)
        except CheckpointError as exc:
            errors.append(str(exc))
            log(f"train: {exc}; trying the previous checkpoint")
            continue
        if candidate != path:
            log(f"train: resuming from the previous checkpoint {candidate}")
        return state
    if errors:
        raise CheckpointError("no readable checkpoint: " + "; ".join(errors))
    return None
