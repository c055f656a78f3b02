"""Speed where it counts: what a user can accept, per second, on real lines with the workspace.

    python -m lab bench --concurrency 1,4 --real-lines tune [--n 25]
    python -m lab.concurrency.real_lines_speed --set tune --concurrency 1,4 [--n 25] [--json] [--out F]

The items are the real lines of lab/workspace/lines.py (packages outside the training
corpus; `tune` or `aside`, --n lines a package): the cursor after a line's indentation,
the rest of the line to write, and the package's source tree with every sampled line
blanked as the workspace. Each package copy gets one WorkspaceIndex, refreshed, and its
copy table built, before anything is timed; every request then carries its
WorkspaceContext and filename, as `infill batch` sends them (infill_lsp/batch.py).

Two ways of answering, on the same weights, in one process, in a closed loop of C users
(lab/concurrency/sweep.py `run_level`: each user sends a request, waits for its answer and
sends the next):

- batched: the diffusion engine with continuous batching; its first pass judges up to 16
  of the workspace's candidate lines (engine/drafts.py);
- autoregressive+workspace: the same weights writing the line left to right, greedily,
  batched the same way (lab/baseline/autoregressive.py), given the same drafts: its first
  pass verifies the same candidate lines (the prefill over prefix + one tree of drafts;
  the longest path its own greedy tokens agree with is kept), later passes the copy rule's
  drafts (prompt-lookup). It reads the same prefix window, healed the same way; it never
  reads the suffix (only its drafts look there) and stops at the end of the first line.

The modes alternate over chunks of the items (A B, then B A, ...; --repeats passes over
all of them), so a machine whose load changes weighs on both alike; a mode's figures pool
its runs.

The headline, right characters per second per user: the characters of the answers whose
first line is exactly the line (stripped; a line right counts its length, a line wrong
counts 0), over the level's wall seconds, over its users. Beside it the acceptable-prefix
rate (the characters of each first line before its first difference from the line, the
part a user could take of a wrong answer), exact match, empty answers, tokens per forward,
p50/p90 latency (send to answer) and mean latency, and the ratio of the two modes.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

import torch

from engine.drafts import VERIFIED_DRAFTS
from lab.concurrency.items import Item
from lab.concurrency.servers import ALL_MODES, DRAFT_TOKENS, WORKSPACE_DRAFTED
from lab.concurrency.sweep import Record, load_engine, parse_levels, parse_settings, run_level
from lab.evaluation.items import percentile
from lab.workspace import lines

SETS = {"tune": lines.TUNE, "aside": lines.ASIDE}
MODES = ("batched", WORKSPACE_DRAFTED)
DEFAULT_LEVELS = "1,4"
CHUNK = 50  # items a mode answers before the other mode takes its turn


def first_line(middle: str) -> str:
    """The answer as the real lines score it: its first line, stripped ('' when empty)."""
    return middle.split("\n")[0].strip() if middle.strip() else ""


def right_chars(middle: str, reference: str) -> int:
    """The headline's characters: the line's length when the answer's first line is exactly
    the line (both stripped), else 0."""
    return len(reference) if reference and first_line(middle) == reference else 0


def prefix_chars(middle: str, reference: str) -> int:
    """Acceptable-prefix characters: how much of the answer's first line agrees with the
    line before the first difference (all of it for a right line)."""
    return len(os.path.commonprefix([first_line(middle), reference]))


def build_items(names: Iterable[str], n: int, into: Path, eng, log: Callable[[str], None] = lambda _: None) -> list[Item]:
    """The real lines of `names` (n a package) as sweep items, each with its package copy's
    WorkspaceContext: one index per copy, refreshed, and the copy rule's table built for
    the engine's tokenizer, here, before any timing."""
    from engine.workspace import WorkspaceContext, WorkspaceIndex

    found = lines.items(list(names), n, into / "workspaces", workspace=True)
    contexts: dict[str, Any] = {}
    out = []
    for line in found:
        if line.workspace not in contexts:
            start = time.perf_counter()
            index = WorkspaceIndex(line.workspace, cache_dir=into / "index-cache")
            report = index.refresh()
            context = WorkspaceContext(index, wait_for_tables=True)  # the same answers every run
            context.ngrams(eng.tokenizer)  # built now, not in the first timed request
            contexts[line.workspace] = context
            log(f"-- indexed {line.package} ({report.files} files) and built its copy table in {time.perf_counter() - start:.1f} s")
        out.append(Item(line.id, line.language, line.prefix, line.reference, line.suffix, "real-line", line.filename, contexts[line.workspace]))
    return out


def summarize(mode: str, concurrency: int, records: list[Record], wall: float) -> dict[str, Any]:
    """One mode at one level, its runs pooled (records joined, wall seconds summed)."""
    n = len(records)
    latencies = [r.latency_ms for r in records]
    right = sum(right_chars(r.finished.middle, r.item.middle) for r in records)
    prefix = sum(prefix_chars(r.finished.middle, r.item.middle) for r in records)
    tokens = sum(r.finished.tokens for r in records)
    forwards = sum(r.finished.forwards for r in records)
    per_user = wall * concurrency
    line_chars = sum(len(r.item.middle) for r in records)
    out = {
        "concurrency": concurrency,
        "mode": mode,
        "right_chars_per_s_per_user": round(right / per_user, 2) if per_user else 0.0,
        "prefix_chars_per_s_per_user": round(prefix / per_user, 2) if per_user else 0.0,
        # the share of the lines' characters the answers got before their first difference
        "prefix_share": round(prefix / line_chars, 4) if line_chars else None,
        "exact_match": round(sum(right_chars(r.finished.middle, r.item.middle) > 0 for r in records) / n, 4) if n else None,
        "empty": sum(1 for r in records if not first_line(r.finished.middle)),
        "tpf": round(tokens / forwards, 3) if forwards else 0.0,
        "p50_ms": round(percentile(latencies, 0.5), 1),
        "p90_ms": round(percentile(latencies, 0.9), 1),
        "mean_ms": round(sum(latencies) / n, 1) if n else 0.0,
        "requests": n,
        "right_chars": right,
        "prefix_chars": prefix,
        "tokens": tokens,
        "forwards": forwards,
        "wall_s": round(wall, 2),
    }
    drafted = sum(r.finished.drafted for r in records)
    if mode != "batched" and mode != "sequential":
        out["drafted"] = drafted
        out["draft_accept"] = round(sum(r.finished.accepted for r in records) / drafted, 4) if drafted else None
    return out


def lines_among_drafts(eng, items: list[Item], workspace_drafts: int = VERIFIED_DRAFTS) -> dict[str, int]:
    """How many lines are among the drafts both modes verify (`line_drafts`: the
    workspace's best-ranked candidates that fit), and how many are the best-ranked of
    them: what the drafts can give at most. Counted after the timing."""
    from engine.healing import Healing
    from lab.baseline.autoregressive import line_drafts

    tok, among, best = eng.tokenizer, 0, 0
    for item in items:
        removed = Healing.at_cursor(item.prefix, tok, whitespace=True, word=False)[1].removed
        drafts = line_drafts(tok, item.workspace.drafts(item.prefix, item.suffix, item.filename), removed, workspace_drafts, eng.settings.max_tokens)
        texts = [tok.decode(ids).strip() for ids in drafts]
        among += item.middle in texts
        best += bool(texts) and texts[0] == item.middle
    return {"lines": len(items), "among_drafts": among, "best_ranked": best}


def chunks(items: list[Item], size: int) -> list[list[Item]]:
    size = max(1, size)
    return [items[i : i + size] for i in range(0, len(items), size)]


def run(eng, items: list[Item], levels: list[int], modes: list[str], repeats: int = 2, chunk: int = CHUNK, draft_tokens: int = DRAFT_TOKENS,
        workspace_drafts: int = VERIFIED_DRAFTS, progress: Optional[Callable[[dict[str, Any]], None]] = None) -> dict[str, Any]:
    """Every level: `repeats` passes over the items, chunk by chunk, the modes taking turns
    in alternating order (A B, B A, ...); each chunk is a closed loop of C users that
    answers each of its items once."""
    for warm in {item.language: item for item in items}.values():  # grammars, kernels: not timed
        for mode in modes:
            run_level(eng, mode, [warm], 1, 1, draft_tokens, workspace_drafts=workspace_drafts)
    out: list[dict[str, Any]] = []
    turn = 0
    for c in levels:
        records: dict[str, list[Record]] = {mode: [] for mode in modes}
        walls = {mode: 0.0 for mode in modes}
        for _ in range(max(1, repeats)):
            for part in chunks(items, chunk):
                for mode in modes if turn % 2 == 0 else modes[::-1]:
                    done, wall = run_level(eng, mode, part, c, len(part), draft_tokens, workspace_drafts=workspace_drafts)
                    records[mode] += done
                    walls[mode] += wall
                turn += 1
        for mode in modes:
            out.append(summarize(mode, c, records[mode], walls[mode]))
            if progress:
                progress(out[-1])
    return {
        "levels": out,
        "ratios": ratios(out),
        "lines_among_drafts": lines_among_drafts(eng, items, workspace_drafts),
        "draft_tokens": draft_tokens,
        "workspace_drafts": workspace_drafts,
        "model": eng.model_name,
        "parameters": eng.info.get("parameters"),
        "device": eng.device,
        "threads": torch.get_num_threads(),
        "repeats": repeats,
        "chunk": chunk,
        "items": len(items),
    }


def ratios(levels: list[dict[str, Any]], baseline: str = WORKSPACE_DRAFTED) -> list[dict[str, Any]]:
    """Per level, batched diffusion over the baseline: right and prefix characters per
    second per user, and p50 latency (below 1: diffusion answers sooner)."""
    by_c: dict[int, dict[str, dict[str, Any]]] = {}
    for level in levels:
        by_c.setdefault(level["concurrency"], {})[level["mode"]] = level
    out = []
    for c, modes in sorted(by_c.items()):
        if "batched" not in modes or baseline not in modes:
            continue
        a, b = modes["batched"], modes[baseline]
        div = lambda x, y: round(x / y, 3) if y else None  # noqa: E731
        out.append({"concurrency": c, "right_chars": div(a["right_chars_per_s_per_user"], b["right_chars_per_s_per_user"]),
                    "prefix_chars": div(a["prefix_chars_per_s_per_user"], b["prefix_chars_per_s_per_user"]),
                    "p50_latency": div(a["p50_ms"], b["p50_ms"])})
    return out


def table(report: dict[str, Any]) -> str:
    rows = [f"{'C':>3} {'mode':<26}{'right ch/s/user':>16}{'prefix ch/s/user':>17}{'exact':>8}{'prefix':>8}{'empty':>7}{'tpf':>7}{'p50 ms':>8}{'p90 ms':>8}{'mean ms':>9}{'requests':>9}{'kept':>7}"]
    for l in report["levels"]:
        kept = f"{l['draft_accept']:.1%}" if l.get("draft_accept") is not None else ""
        rows.append(f"{l['concurrency']:>3} {l['mode']:<26}{l['right_chars_per_s_per_user']:>16.2f}{l['prefix_chars_per_s_per_user']:>17.2f}{l['exact_match']:>8.1%}{l['prefix_share'] or 0:>8.1%}{l['empty']:>7}{l['tpf']:>7.2f}{l['p50_ms']:>8.0f}{l['p90_ms']:>8.0f}{l['mean_ms']:>9.0f}{l['requests']:>9}{kept:>7}")
    held = report.get("lines_among_drafts")
    if held:
        rows.append(f"the line among the verified drafts: {held['among_drafts']} of {held['lines']} (the best-ranked: {held['best_ranked']})")
    shown = lambda x: f"{x}x" if x is not None else "n/a (left to right: 0)"  # noqa: E731
    for r in report["ratios"]:
        rows.append(f"C={r['concurrency']}: diffusion / left to right with the same drafts: right chars {shown(r['right_chars'])}, prefix chars {shown(r['prefix_chars'])}, p50 latency {shown(r['p50_latency'])}")
    return "\n".join(rows)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m lab.concurrency.real_lines_speed", description=__doc__.split("\n")[0])
    p.add_argument("--set", choices=sorted(SETS), default="tune", help="which packages (default tune; aside only for reporting)")
    p.add_argument("--package", action="append", default=None, choices=sorted(lines.PACKAGES), help="only these packages (repeatable)")
    p.add_argument("--n", type=int, default=25, help="lines a package (default 25)")
    p.add_argument("--concurrency", default=DEFAULT_LEVELS, help=f"comma-separated levels (default {DEFAULT_LEVELS})")
    p.add_argument("--modes", default=",".join(MODES), help=f"comma-separated subset of {','.join(ALL_MODES)} (default {','.join(MODES)})")
    p.add_argument("--repeats", type=int, default=2, help="passes over the items per level (default 2)")
    p.add_argument("--chunk", type=int, default=CHUNK, help=f"items a mode answers before the other takes its turn (default {CHUNK})")
    p.add_argument("--draft-tokens", type=int, default=DRAFT_TOKENS, help=f"the copy drafts' longest draft, later passes (default {DRAFT_TOKENS})")
    p.add_argument("--workspace-drafts", type=int, default=VERIFIED_DRAFTS, help=f"workspace lines the left-to-right first pass verifies (default {VERIFIED_DRAFTS}, as the engine)")
    p.add_argument("--model", type=Path, default=None, help="model directory (default: the embedded model)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: the engine's choice)")
    p.add_argument("--dtype", default=None, help="cast the weights, e.g. bfloat16 (default: as loaded)")
    p.add_argument("--knob", action="append", default=[], dest="knobs", metavar="KEY=VALUE", help="a sampler setting for every request (repeatable)")
    p.add_argument("--json", action="store_true", help="the last line of output is the JSON report")
    p.add_argument("--out", type=Path, default=None, help="also write the JSON report to this file")
    return p


def main(argv: Optional[list[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        levels = parse_levels(args.concurrency)
        settings = parse_settings(args.knobs)
    except ValueError as exc:
        print(f"python -m lab bench: error: {exc}", file=sys.stderr)
        return 2
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not modes or any(m not in ALL_MODES for m in modes):
        print(f"python -m lab bench: error: --modes wants a subset of {', '.join(ALL_MODES)}", file=sys.stderr)
        return 2
    if args.n < 1:
        print("python -m lab bench: error: --n must be at least 1", file=sys.stderr)
        return 2
    log = lambda text: print(text, file=sys.stderr, flush=True)  # noqa: E731
    eng = load_engine(args.model, args.device, None, args.threads, args.dtype, settings)
    names = args.package or list(SETS[args.set])
    into = Path(tempfile.mkdtemp(prefix="real-lines-speed-"))
    try:
        log(f"-- sampling {args.n} lines of {', '.join(names)}")
        items = build_items(names, args.n, into, eng, log)

        def progress(level: dict[str, Any]) -> None:
            log(f"C={level['concurrency']:<3} {level['mode']:<26} {level['right_chars_per_s_per_user']:7.2f} right ch/s/user  exact {level['exact_match']:.1%}  p50 {level['p50_ms']:6.0f} ms")

        report = run(eng, items, levels, modes, args.repeats, args.chunk, args.draft_tokens, args.workspace_drafts, progress)
    finally:
        shutil.rmtree(into, ignore_errors=True)
    report["packages"] = {name: lines.PACKAGES[name].flag(name) for name in names}
    report["n_per_package"] = args.n
    report["set"] = None if args.package else args.set
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report) if args.json else table(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
