"""Find and choose: where the workspace's drafts miss the line a user writes.

    python -m lab.workspace.recall [--set tune] [--n 100]               # retrieval only (seconds)
    python -m lab.workspace.recall --fit                                # + fit the retrieval rank (prints RANK_WEIGHTS)
    python -m lab.workspace.recall --verify [--features FILE]           # + the model's first pass: verified and kept
    python -m lab.workspace.recall --show 20                            # + the held lines missed, with their neighbours

For each real line of the packages (lab/workspace/lines.py: the cursor after the line's
indentation, the package with every sampled line blanked as the workspace), it asks whether
the line is *held*: it stands elsewhere in what the workspace index holds (the blanked copy,
as lab/workspace/novelty.py counts it). Only held lines can come back as a draft, so those
are the ones it scores:

- **found (any rank)**: the line among every candidate engine/workspace/retrieve.py gathers
  (`drafts_for(..., limit=1 << 30)`: neighbours, lines near the cursor, imports the file
  lacks), before any cut;
- **offered**: among the MAX_DRAFTS a request gets, in retrieval order;
- **in the first VERIFIED_DRAFTS**: what the model's first pass judges, by retrieval alone
  (a draft longer than MAX_DRAFT_TOKENS is not judged: --verify counts exactly);
- with --verify, the engine's own first pass per line (InfillJob with the workspace, as
  lab/workspace/fit_drafts.py collects it): **verified** (the line among the judged
  drafts), **kept** (today's accept rule in engine/drafts.py keeps it, judged from the
  stored features: the request's answer is the line, unless the final syntax check
  refuses it), and the wrong drafts kept, over all lines. The weights are fitted on these
  same lines, so these are in-sample; fit_drafts.py prints the leave-one-package-out ones.

It also times the lookup per request (p50 / p99, milliseconds; the indexes are small here:
lab/workspace/bench_index.py times a large one). --fit fits the retrieval rank (a logistic
regression of the drafts' evidence, retrieve.py RANK_FEATURES) on the same candidates and
prints, leave-one-package-out, how many held lines have the line in the first K drafts,
then the weights fitted on all packages. Tune only on the TUNE packages; `--set aside` is
for reporting, once.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

from lab.workspace.lines import ASIDE, TUNE

SETS = {"tune": TUNE, "aside": ASIDE}
TOP_K = (1, 3, 6, 8, 12, 16, 24)


def retrieval(names: list[str], n: int, tmp: Path) -> tuple[list[dict], list[float]]:
    """Per line: held?, the reference's rank among all candidates (None: not found), the
    candidates' rank features and labels; and each lookup's seconds."""
    from engine.workspace import WorkspaceIndex
    from engine.workspace.retrieve import cursor_lines, drafts_for, rank_features
    from lab.workspace.lines import items
    from lab.workspace.novelty import held_lines

    records, seconds, indexes, held = [], [], {}, {}
    for item in items(names, n, tmp / "workspaces"):
        if item.workspace not in indexes:
            index = indexes[item.workspace] = WorkspaceIndex(item.workspace, cache_dir=tmp / "cache")
            index.refresh()
            held[item.workspace] = held_lines(path for path, _ in index.files())
        start = time.perf_counter()  # the lookup as a request makes it (MAX_DRAFTS)
        drafts_for(indexes[item.workspace], item.prefix, item.suffix, filename=item.filename)
        seconds.append(time.perf_counter() - start)
        drafts = drafts_for(indexes[item.workspace], item.prefix, item.suffix, filename=item.filename, limit=1 << 30)
        lines = [d.line for d in drafts]
        cursor = cursor_lines(item.prefix, item.suffix)
        records.append({"id": item.id, "package": item.package, "reference": item.reference, "held": held[item.workspace][item.reference] > 0,
                        "rank": lines.index(item.reference) if item.reference in lines else None, "candidates": len(drafts),
                        "prev": cursor.prev, "next": cursor.next, "top": lines[:3],
                        "drafts": [{"line": d.line, "right": d.line == item.reference, "rank_features": rank_features(d)} for d in drafts]})
    for index in indexes.values():
        index.close()
    return records, seconds


def fit_rank(records: list[dict]) -> tuple[np.ndarray, float]:
    """The retrieval rank's logistic regression over every candidate of `records`."""
    from engine.workspace.retrieve import RANK_FEATURES
    from lab.workspace.fit_drafts import fit

    rows = [{"package": r["package"], "drafts": [{"features": d["rank_features"], "right": d["right"]} for d in r["drafts"]]} for r in records]
    return fit(rows, features=RANK_FEATURES)


def rank_recall(records: list[dict]) -> dict[int, int]:
    """Leave one package out: held lines whose line is in the first K drafts by a rank
    fitted on the other packages."""
    from engine.workspace.retrieve import rank_score

    hits = Counter()
    for package in sorted({r["package"] for r in records}):
        w, b = fit_rank([r for r in records if r["package"] != package])
        for r in records:
            if r["package"] != package or not r["held"]:
                continue
            order = sorted(r["drafts"], key=lambda d: -rank_score(d["rank_features"], tuple(w), b))
            at = next((i for i, d in enumerate(order) if d["right"]), None)
            for k in TOP_K:
                hits[k] += at is not None and at < k
    return dict(hits)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.workspace.recall", description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", choices=sorted(SETS), default="tune", help="which packages (aside: report only, never tune on it)")
    parser.add_argument("--n", type=int, default=100, help="lines per package")
    parser.add_argument("--fit", action="store_true", help="fit the retrieval rank (leave-one-package-out figures, then the weights)")
    parser.add_argument("--verify", action="store_true", help="run the model's first pass per line: verified and kept (a few minutes)")
    parser.add_argument("--features", type=Path, help="with --verify: the first pass's records (fit_drafts.py --features), read or written")
    parser.add_argument("--show", type=int, default=0, help="print up to this many held lines the drafts miss")
    args = parser.parse_args(argv)
    from engine.drafts import VERIFIED_DRAFTS
    from engine.workspace.retrieve import MAX_DRAFTS

    names = list(SETS[args.set])
    with tempfile.TemporaryDirectory() as tmp:
        records, seconds = retrieval(names, args.n, Path(tmp))
    held = [r for r in records if r["held"]]
    ms = sorted(s * 1000 for s in seconds)
    found = sum(r["rank"] is not None for r in held)
    offered = sum(r["rank"] is not None and r["rank"] < MAX_DRAFTS for r in held)
    first = sum(r["rank"] is not None and r["rank"] < VERIFIED_DRAFTS for r in held)
    print(f"{len(records)} lines of {', '.join(names)}: {len(held)} held elsewhere in the workspace; "
          f"{statistics.mean(r['candidates'] for r in records):.0f} candidates a line")
    print(f"held lines: found (any rank) {found} ({found / max(len(held), 1):.1%}), offered (first {MAX_DRAFTS}) {offered}, "
          f"in the first {VERIFIED_DRAFTS} {first} ({first / max(len(held), 1):.1%})")
    print(f"lookup: p50 {statistics.median(ms):.2f} ms, p99 {ms[min(len(ms) - 1, int(len(ms) * 0.99))]:.2f} ms, max {ms[-1]:.2f} ms")
    for package in names:
        mine = [r for r in held if r["package"] == package]
        print(f"  {package:15} held {len(mine):3d}  found {sum(r['rank'] is not None for r in mine):3d}  "
              f"first {VERIFIED_DRAFTS}: {sum(r['rank'] is not None and r['rank'] < VERIFIED_DRAFTS for r in mine):3d}")
    if args.fit:
        hits = rank_recall(records)
        print("retrieval rank, leave one package out: held lines with the line in the first K: "
              + ", ".join(f"K={k} {hits.get(k, 0)}" for k in TOP_K))
        w, b = fit_rank(records)
        from engine.workspace.retrieve import RANK_FEATURES

        print("fitted on all these lines; for engine/workspace/retrieve.py:")
        print(f"RANK_WEIGHTS = ({', '.join(f'{x:.4f}' for x in w)},)  # {', '.join(RANK_FEATURES)}")
        print(f"RANK_BIAS = {b:.4f}")
    if args.show:
        missed = [r for r in held if r["rank"] is None or r["rank"] >= VERIFIED_DRAFTS][: args.show]
        for r in missed:
            print(f"  {r['id']}: {r['reference']!r} (rank {r['rank']}) after {r['prev']!r}, before {r['next']!r}; first: {r['top'][:2]!r}")
    if args.verify:
        verify_figures(args, names, {r["id"]: r["held"] for r in records})
    return 0


def verify_figures(args: argparse.Namespace, names: list[str], held: dict[str, bool]) -> None:
    """The model's first pass over every line (fit_drafts.py's records): verified, kept."""
    from lab.workspace.fit_drafts import collect

    if args.features is not None and args.features.exists():
        records = [json.loads(line) for line in args.features.read_text().splitlines()]
    else:
        records = collect(args.n, False, names)
        if args.features is not None:
            args.features.write_text("".join(json.dumps(r) + "\n" for r in records))
    from engine.drafts import ACCEPT, probability

    for r in records:  # the kept draft by today's accept rule (engine/drafts.py), from the stored features
        probs = [probability(d["features"]) for d in r["drafts"]]
        best = max(range(len(probs)), key=probs.__getitem__) if probs else None
        r["kept"] = best if best is not None and probs[best] >= ACCEPT else None
    mine = [r for r in records if held.get(r["id"])]
    verified = sum(any(d["right"] for d in r["drafts"]) for r in mine)
    kept_right = sum(r["kept"] is not None and r["drafts"][r["kept"]]["right"] for r in mine)
    kept_wrong = sum(r["kept"] is not None and not r["drafts"][r["kept"]]["right"] for r in records)
    print(f"first pass: held lines verified {verified} of {len(mine)} ({verified / max(len(mine), 1):.1%}), "
          f"kept right {kept_right} ({kept_right / max(len(mine), 1):.1%}); wrong drafts kept {kept_wrong} of {len(records)} lines")


if __name__ == "__main__":
    sys.exit(main())
