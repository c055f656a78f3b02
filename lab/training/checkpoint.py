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
import signal
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


# The named moments of a save, in order. A fault-injection test sets
# INFILL_CHECKPOINT_KILL_AT=<file name>:<point>:<n> and the process SIGKILLs itself at that
# point of its n-th save of that file name (counted from 1 in this process): a kill then
# lands exactly where the test wants it, whatever the machine's load (a timed kill missed
# the save window under load).
KILL_POINTS = (
    "opened",  # the temporary file exists, nothing written
    "half-written",  # half the bytes written and flushed to the temporary file
    "synced",  # the temporary file is complete and fsynced, not yet renamed
    "previous-kept",  # the old checkpoint moved to .prev, the new one not yet in place
    "renamed",  # the new checkpoint in place, the folder not yet fsynced
    "done",  # the save returned
)
_saves_started: dict[str, int] = {}  # file name -> saves begun by this process


def _kill_point(path: Path, point: str) -> None:
    """SIGKILL this process if INFILL_CHECKPOINT_KILL_AT names `point` of the current save of `path`."""
    spec = os.environ.get("INFILL_CHECKPOINT_KILL_AT")
    if not spec:
        return
    name, at, nth = (spec.split(":") + ["", ""])[:3]
    if at not in KILL_POINTS or not nth.isdigit():
        raise ValueError(f"INFILL_CHECKPOINT_KILL_AT={spec!r}: expected <file name>:<point>:<n>, the point one of {', '.join(KILL_POINTS)}")
    if name == path.name and at == point and _saves_started.get(path.name) == int(nth):
        os.kill(os.getpid(), signal.SIGKILL)


def _write_in_halves(path: Path) -> Callable[[Any, bytes], None]:
    """handle.write(data), in two halves with a kill point between them."""

    def write(handle: Any, data: bytes) -> None:
        half = len(data) // 2
        handle.write(data[:half])
        handle.flush()
        _kill_point(path, "half-written")
        handle.write(data[half:])

    return write


def atomic_save(obj: Any, path: Path, keep_previous: bool = True, _write: Optional[Callable[[Any, bytes], None]] = None) -> None:
    """Write `obj` (anything torch.save takes) to `path` atomically with a checksum.

    `_write(handle, data)` replaces the plain `handle.write(data)`: tests use it to kill
    or fail a save half-way."""
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    payload = buffer.getvalue()
    data = MAGIC + hashlib.sha256(payload).digest() + payload
    tmp = path.with_name(path.name + ".tmp")
    _saves_started[path.name] = _saves_started.get(path.name, 0) + 1
    try:
        with open(tmp, "wb") as handle:
            _kill_point(path, "opened")
            (_write or _write_in_halves(path))(handle, data)
            handle.flush()
            os.fsync(handle.fileno())
        _kill_point(path, "synced")
        if keep_previous and path.exists():
            os.replace(path, path.with_name(path.name + ".prev"))
            _kill_point(path, "previous-kept")
        os.replace(tmp, path)
        _kill_point(path, "renamed")
        _fsync_dir(path.parent)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        intact = path if path.exists() else path.with_name(path.name + ".prev")
        left = f"{intact} is intact" if intact.exists() else "no earlier checkpoint exists"
        raise CheckpointError(f"could not write {path}: {exc.strerror or exc}; {left}") from exc
    _kill_point(path, "done")


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
