"""The held-out and dev items of the model benchmarks, and how they are scored.

Items are single-line middles cut from the corpus's validation files
(lab/bench_data/README.md says how): `heldout_lines.jsonl` is the benchmark reported
(`python -m lab bench`, `python -m lab eval heldout`); `dev_lines.jsonl` is where sampler knobs are
chosen (lab/evaluation/sweep.py), never the held-out set.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

BENCH_DATA = Path(__file__).resolve().parent.parent / "bench_data"
BENCH_FILE = BENCH_DATA / "heldout_lines.jsonl"
DEV_FILE = BENCH_DATA / "dev_lines.jsonl"


def load_items(limit: Optional[int] = None, path: Path = BENCH_FILE) -> list[dict]:
    with open(path) as fh:
        items = [json.loads(line) for line in fh if line.strip()]
    return items[:limit] if limit else items


def exact_match(middle: str, expected: str) -> bool:
    """Middles compare with trailing whitespace stripped."""
    return middle.rstrip() == expected.rstrip()


def percentile(values: list[float], q: float) -> float:
    """Linear-interpolated percentile (0.0 for no values)."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)
