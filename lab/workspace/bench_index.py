"""How fast the workspace index builds, updates and answers (issue 36's budgets).

    python -m lab.workspace.bench_index [FOLDER] [--requests 500]

FOLDER defaults to this interpreter's standard library. Prints one JSON line: files,
lines and bytes indexed, the cold build's wall and CPU seconds and the resident memory it
added, the re-index time of one changed file (the median-sized and the largest one: what a
save or a watched change costs; wall and CPU milliseconds, medians over --repeats edits,
each edit and its undoing timed), and the drafts lookup per request (p50/p99 over seeded
cursors in the indexed files, each with its own file as the unsaved buffer; and again with
the cursor on a top-level import line, where the lookup also asks for the imports a file
lacks). The edits are
handed to the index as bytes (`_index_file(..., data=)`, everything `update_file` does but
the disk read), never written into FOLDER: a line added in the middle (the lines below it
move: the usual save), a line added at the top (every line moves), the file unchanged (a
save without a change), and every line changed (a formatter run: every row rewritten).
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
from engine.workspace.imports import bound_names, family
from engine.workspace.retrieve import drafts_for


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


EDITS = {
    "middle": lambda lines: lines[: len(lines) // 2] + ["    added = 1"] + lines[len(lines) // 2 :],
    "top": lambda lines: ["import added"] + lines,
    "unchanged": lambda lines: lines,
    "every_line": lambda lines: [line + "  # changed" if line.strip() else line for line in lines],
}


def time_edits(index: WorkspaceIndex, relative: str, repeats: int) -> dict:
    """Median wall and CPU milliseconds of re-indexing `relative` after each kind of edit."""
    path = index.root / relative
    st = path.stat()
    original = path.read_bytes()
    lines = original.decode("utf-8").split("\n")
    out = {}
    for edit, change in EDITS.items():
        changed = "\n".join(change(lines)).encode("utf-8")
        wall, cpu = [], []
        for _ in range(repeats):
            for data in (changed, original):  # the edit, then its undoing: each a change
                started, cpu_started = time.perf_counter(), time.process_time()
                index._index_file(path, relative, st.st_mtime_ns, st.st_size, index.file_id(relative), data=data)
                wall.append((time.perf_counter() - started) * 1000)
                cpu.append((time.process_time() - cpu_started) * 1000)
        out[edit] = {"ms": round(statistics.median(wall), 1), "cpu_ms": round(statistics.median(cpu), 1), "max_ms": round(max(wall), 1)}
    return out


def time_lookups(index: WorkspaceIndex, files: list[tuple[int, str]], requests: int, at_imports: bool) -> tuple[list[float], list[float]]:
    """Sorted wall and CPU milliseconds of `requests` drafts lookups at seeded cursors, each
    file its own unsaved buffer. `at_imports`: the cursor on one of a file's top-level import
    lines (where the lookup also asks for the imports the file lacks: imports.py), in files
    that have any; else anywhere."""
    rng = random.Random("bench-index" + ("-imports" if at_imports else ""))
    if at_imports:  # only files of an import syntax (engine/workspace/imports.py) can have such lines
        files = [(size, relative) for size, relative in files if family(relative) is not None]
    timings, cpu_timings = [], []
    tries = 0
    while len(timings) < requests and files and tries < 100 * requests:  # a folder without import lines times none
        tries += 1
        _, relative = rng.choice(files)
        text = (index.root / relative).read_text(errors="replace")
        lines = text.split("\n")
        if at_imports:
            syntax = family(relative)
            places = [i for i, line in enumerate(lines) if line[:1].strip() and bound_names(line.strip(), syntax)]
            if not places:
                continue
            i = rng.choice(places)
        else:
            i = rng.randrange(len(lines))
        indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
        prefix, suffix = "\n".join(lines[:i] + [indent]), "\n" + "\n".join(lines[i + 1 :])
        started, cpu_started = time.perf_counter(), time.process_time()
        drafts_for(index, prefix, suffix, filename=str(index.root / relative))
        timings.append((time.perf_counter() - started) * 1000)
        cpu_timings.append((time.process_time() - cpu_started) * 1000)
    return sorted(timings), sorted(cpu_timings)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.workspace.bench_index", description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", type=Path, default=Path(sysconfig.get_paths()["stdlib"]))
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=5, help="timed edits of each kind per file (each undone, timed too)")
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
            update_ms[label] = {"path": relative, "bytes": size, **time_edits(index, relative, args.repeats)}
        timings, cpu_timings = time_lookups(index, files, args.requests, at_imports=False)
        import_timings, _ = time_lookups(index, files, args.requests, at_imports=True)
        print(json.dumps({
            "folder": str(index.root), "files": report.files, "lines": report.lines, "mb": round(report.bytes / 1e6, 1),
            "cold_seconds": round(report.seconds, 1), "cold_cpu_seconds": round(build_cpu, 1), "rss_added_mb": round(added, 1),
            "index_file_mb": round(os.path.getsize(index.db_path) / 1e6, 1), "update_one_file": update_ms,
            "drafts_ms": {"p50": round(statistics.median(timings), 2), "p99": round(timings[int(0.99 * (len(timings) - 1))], 2), "max": round(timings[-1], 2)},
            "drafts_cpu_ms": {"p50": round(statistics.median(cpu_timings), 2), "p99": round(cpu_timings[int(0.99 * (len(cpu_timings) - 1))], 2)},
            "drafts_ms_at_imports": {"p50": round(statistics.median(import_timings), 2), "p99": round(import_timings[int(0.99 * (len(import_timings) - 1))], 2),
                                     "max": round(import_timings[-1], 2)} if import_timings else None,
            "skipped": report.skipped,
        }))
        for label, timed in update_ms.items():
            print(f"re-index one changed file, {label} ({timed['path']}, {timed['bytes'] / 1000:.0f} kB): " + ", ".join(
                f"{edit} {timed[edit]['ms']} ms ({timed[edit]['cpu_ms']} ms CPU)" for edit in EDITS), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
