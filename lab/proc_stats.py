"""Figures about a running process, for the lab's long runs (fuzz, soak)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional


def rss_mb(pid: int) -> Optional[float]:
    """Resident memory of process `pid` in MiB (Linux /proc), or None when it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None
