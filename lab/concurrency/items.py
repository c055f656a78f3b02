"""The sweep's requests: held-out middles, single-line and multi-line.

The held-out set (lab/bench_data/heldout_lines.jsonl, never tuned on) holds one source
line per item with the file's verbatim text around it. Every third item is turned into a
multi-line middle: its line plus the next MULTI_LINE_EXTRA lines of its suffix (the
last one not blank), cut from the same verbatim text, so no new data is needed and none is tuned on.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from lab.evaluation.items import BENCH_FILE, load_items as load_rows

MULTI_LINE_EVERY = 3  # every third held-out item becomes a multi-line middle
MULTI_LINE_EXTRA = 2  # lines of the suffix added to its middle


@dataclass(frozen=True)
class Item:
    id: str
    language: str
    prefix: str
    middle: str
    suffix: str
    kind: str  # "single-line" | "multi-line" | "real-line" (lab/concurrency/real_lines_speed.py)
    filename: Optional[str] = None  # the file being edited (real lines: inside the workspace)
    workspace: Any = field(default=None, compare=False, repr=False)  # its WorkspaceContext (engine/workspace/retrieve.py), or None


def _multi_line(row: dict) -> Optional[Item]:
    lines = row["suffix"].splitlines(keepends=True)
    extra = lines[:MULTI_LINE_EXTRA]
    if len(lines) <= MULTI_LINE_EXTRA or not extra[-1].strip() or not all(line.endswith("\n") for line in extra):
        return None  # a middle should not end on a blank line or run to the end of the file
    return Item(row["id"] + "+lines", row["language"], row["prefix"], row["middle"] + "".join(extra), "".join(lines[MULTI_LINE_EXTRA:]), "multi-line")


def load_items(path: Path = BENCH_FILE) -> list[Item]:
    """Every held-out item once, in file order; every third as a multi-line middle when its
    suffix allows (else it stays single-line)."""
    items = []
    for index, row in enumerate(load_rows(path=path)):
        multi = _multi_line(row) if index % MULTI_LINE_EVERY == MULTI_LINE_EVERY - 1 else None
        items.append(multi or Item(row["id"], row["language"], row["prefix"], row["middle"], row["suffix"], "single-line"))
    return items
