"""How fast the workspace index builds, updates and answers (issue 36's budgets).

    python -m lab.workspace.bench_index [FOLDER] [--requests 500]

FOLDER defaults to this interpreter's standard library. Prints one JSON line: files,
lines and bytes indexed, the cold build's wall and CPU seconds and the resident memory it
added, the re-index time of one file (median-sized and largest: what a saved or watched
change costs), and the drafts lookup per request (p50/p99 over seeded cursors in the
indexed files, each with its own file as the unsaved buffer).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from engine.workspace import WorkspaceIndex
from engine.workspace.retrieve import drafts_for


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.workspace.bench_index", description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", type=Path, default=Path(sysconfig.get_paths()["stdlib"]))
    parser.add_argument("--requests", type=int, default=500)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as cache:
        before, cpu = rss_mb(), time.process_time()
        index = WorkspaceIndex(args.folder, cache_dir=Path(cache))
        report = index.refresh()
        build_cpu, added = time.process_time() - cpu, rss_mb() - before
        files = [(size, path) for path, size in index.db.execute("SELECT path, size FROM files")]
        files.sort()
        update_ms = {}
        for label, (size, relative) in (("median", files[len(files) // 2]), ("largest", files[-1])):
            path = index.root / relative
            st = path.stat()
            started = time.perf_counter()
            index._index_file(path, relative, st.st_mtime_ns, st.st_size, index.file_id(relative))  # what update_file does on a change
            update_ms[label] = {"bytes": size, "ms": round((time.perf_counter() - started) * 1000, 2)}
        rng = random.Random("bench-index")
        timings = []
        for _ in range(args.requests):
            _, relative = rng.choice(files)
            text = (index.root / relative).read_text(errors="replace")
            lines = text.split("\n")
            i = rng.randrange(len(lines))
            indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
            prefix, suffix = "\n".join(lines[:i] + [indent]), "\n" + "\n".join(lines[i + 1 :])
            started = time.perf_counter()
            drafts_for(index, prefix, suffix, filename=str(index.root / relative))
            timings.append((time.perf_counter() - started) * 1000)
        timings.sort()
        print(json.dumps({
            "folder": str(index.root), "files": report.files, "lines": report.lines, "mb": round(report.bytes / 1e6, 1),
            "cold_seconds": round(report.seconds, 1), "cold_cpu_seconds": round(build_cpu, 1), "rss_added_mb": round(added, 1),
            "index_file_mb": round(os.path.getsize(index.db_path) / 1e6, 1), "update_one_file": update_ms,
            "drafts_ms": {"p50": round(statistics.median(timings), 2), "p99": round(timings[int(0.99 * (len(timings) - 1))], 2), "max": round(timings[-1], 2)},
            "skipped": report.skipped,
        }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
