"""One progress line for long runs (benchmarks, evaluations), on stderr.

On a terminal the line is rewritten in place (`\\r`); anywhere else (a log file, CI, a
pipe) each report is a line of its own, and only every tenth of the way and the last one
are written, so logs stay readable: `bench 1/5bench 2/5` never happens.
"""
from __future__ import annotations

import sys
from typing import IO, Optional


def report_progress(label: str, done: int, total: int, stream: Optional[IO[str]] = None) -> None:
    stream = stream if stream is not None else sys.stderr
    text = f"{label} {done}/{total}"
    if getattr(stream, "isatty", lambda: False)():
        stream.write(f"\r{text}" + ("\n" if done >= total else ""))
    else:
        step = max(1, total // 10)
        if done >= total or done % step == 0:
            stream.write(text + "\n")
    stream.flush()
