"""The concurrency sweep: batched diffusion vs one request at a time vs autoregressive.

    python -m lab bench --concurrency 1,2,4,8,16,32,64 [--json] [--plot docs/concurrency.png] [--draft-tokens 6]
    python -m lab.concurrency.sweep --concurrency 1,2,4,8,16,32,64 ...   (the same)

For each level C, C clients in a closed loop: each sends a request, waits for its result
and sends the next, until `max(--requests, 4C)` requests have finished; every mode runs
twice per level, in order and in reverse order (--repeats), and its runs are pooled. Requests are the
held-out middles (lab/concurrency/items.py: single-line, every third multi-line), the
same ones in the same order for every mode. The modes (lab/concurrency/servers.py):

- batched: the diffusion engine, continuous batching (engine/batching.py);
- sequential: the diffusion engine one request at a time, as served before batching;
- autoregressive: the same weights writing the middle left to right, one token per pass,
  batched the same way (lab/baseline/autoregressive.py); it does not see the suffix;
- autoregressive+drafts: the same decode with prompt-lookup drafts: each pass also
  verifies up to --draft-tokens tokens guessed by the diffusion sampler's copy rule (the
  same drafts the sampler copies from: prefix, then suffix), batched the same way. Its
  middles are the autoregressive mode's, token for token (the share is printed: "same").

Figures per level and mode: total tokens/s (middle tokens of every request / wall time),
tokens/s per user (sum of tokens / sum of latencies: the rate one client sees), p50/p99
latency (send to result, queueing and context encoding included), tokens per forward
(sum of tokens / sum of each request's own passes; both engines encode a new context in the
pass that writes the first token, as an autoregressive server's prefill does),
exact match with the held-out text (trailing whitespace ignored), right characters per
second per user (the characters of each answer that agree with the held-out text before
the first difference, over the sum of latencies: what a user could accept, where tokens/s
also counts a line run on to max_tokens), for `batched` the
share of middles identical to `sequential`'s, and for `autoregressive+drafts` the share
identical to `autoregressive`'s and the share of drafted tokens kept (draft_accept). Everything runs in one process, one mode
after another, so the ratios within one run are the figures to trust on a shared machine.
With --json the last line of output is one JSON object: {"levels": [...], ...}.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import torch

from lab.evaluation.items import exact_match, percentile
from lab.concurrency.items import Item, load_items
from lab.concurrency.servers import DRAFT_TOKENS, DRAFTED, MODES, Finished, make_server

DEFAULT_LEVELS = "1,2,4,8,16,32,64"
MIN_REQUESTS = 24  # per level; a level C runs max(MIN_REQUESTS, 4C) requests (WAVES)
# Requests per client at least. The total counts until the last request finishes, and the
# last wave drains with fewer than C in flight: with 2 waves that tail made batching look
# like it lost throughput from 16 to 64 users on the CPU (79.7 -> 54.6 tokens/s; 63.0 ->
# 64.1 with 256 requests a level, docs/batching.md).
WAVES = 4


@dataclass
class Record:
    finished: Finished
    item: Item
    latency_ms: float


def run_level(eng, mode: str, items: list[Item], concurrency: int, requests: int, draft_tokens: int = DRAFT_TOKENS, **server_options: Any) -> tuple[list[Record], float]:
    """C clients in a closed loop until `requests` have finished. Returns (records, wall s).
    `server_options` go to make_server (e.g. workspace_drafts)."""
    server = make_server(mode, eng, concurrency, draft_tokens, **server_options)
    sent: dict[int, float] = {}
    records: list[Record] = []
    next_key = 0

    def send() -> None:
        nonlocal next_key
        sent[next_key] = time.perf_counter()
        server.submit(next_key, items[next_key % len(items)])
        next_key += 1

    start = time.perf_counter()
    for _ in range(min(concurrency, requests)):
        send()
    while len(records) < requests:
        finished = server.pump()
        now = time.perf_counter()
        for done in finished:
            records.append(Record(done, items[done.key % len(items)], (now - sent.pop(done.key)) * 1000))
            if next_key < requests:
                send()
    return records, time.perf_counter() - start


def summarize(mode: str, concurrency: int, records: list[Record], wall: float) -> dict[str, Any]:
    tokens = sum(r.finished.tokens for r in records)
    latencies = [r.latency_ms for r in records]
    forwards = sum(r.finished.forwards for r in records)
    drafted = sum(r.finished.drafted for r in records)
    right = sum(right_chars(r.finished.middle, r.item.middle) for r in records)
    out = {
        "concurrency": concurrency,
        "mode": mode,
        "tokens_per_s": round(tokens / wall, 2),
        "tokens_per_s_per_user": round(tokens / (sum(latencies) / 1000), 2) if latencies else 0.0,
        "p50_ms": round(percentile(latencies, 0.5), 1),
        "p99_ms": round(percentile(latencies, 0.99), 1),
        # What a request takes on average, and what it returns: tokens/s per user is their
        # ratio, so a mode that answers shorter (or empty) is slower by it at equal time.
        "mean_ms": round(sum(latencies) / len(latencies), 1) if latencies else 0.0,
        "tokens_per_request": round(tokens / len(records), 2) if records else 0.0,
        "empty_answers": sum(1 for r in records if r.finished.tokens == 0),
        "tpf": round(tokens / forwards, 3) if forwards else 0.0,
        "exact_match": _exact_match(records),
        # What a user could accept of the answers: the characters that agree with the held-out
        # text up to the first difference, per second of a user's wait. Tokens/s counts a line
        # written to max_tokens as fast work whatever it says; this does not.
        "right_chars": right,
        "right_chars_per_s_per_user": round(right / (sum(latencies) / 1000), 2) if latencies else 0.0,
        "exact_match_single_line": _exact_match([r for r in records if r.item.kind == "single-line"]),
        "exact_match_multi_line": _exact_match([r for r in records if r.item.kind == "multi-line"]),
        "requests": len(records),
        "tokens": tokens,
        "wall_s": round(wall, 2),
    }
    if mode == DRAFTED:
        out["drafted"] = drafted
        out["draft_accept"] = round(sum(r.finished.accepted for r in records) / drafted, 4) if drafted else None
    return out


def right_chars(middle: str, expected: str) -> int:
    """How many characters of `middle` agree with `expected` before the first difference
    (trailing whitespace ignored, as exact match ignores it)."""
    return len(os.path.commonprefix([middle.rstrip(), expected.rstrip()]))


def _exact_match(records: list[Record]) -> Optional[float]:
    if not records:
        return None
    return round(sum(exact_match(r.finished.middle, r.item.middle) for r in records) / len(records), 4)


def identical_share(a: list[Record], b: list[Record]) -> float:
    """Share of requests (matched by key) whose middles are exactly equal."""
    by_key = {r.finished.key: r.finished.middle for r in b}
    pairs = [(r.finished.middle, by_key[r.finished.key]) for r in a if r.finished.key in by_key]
    return round(sum(x == y for x, y in pairs) / len(pairs), 4) if pairs else 0.0


def crossover(levels: list[dict[str, Any]], key: str = "tokens_per_s_per_user", baseline: str = "autoregressive") -> dict[str, Any]:
    """The lowest concurrency from which the `baseline` mode (autoregressive, or
    autoregressive+drafts) beats batched diffusion on `key` and stays ahead, and who leads
    at the lowest level."""
    by_c: dict[int, dict[str, float]] = {}
    for level in levels:
        by_c.setdefault(level["concurrency"], {})[level["mode"]] = level[key]
    both = sorted(c for c, modes in by_c.items() if {"batched", baseline} <= set(modes))
    if not both:
        return {"at": None, "text": f"not measured (needs both batched and {baseline})"}
    ahead = [by_c[c][baseline] > by_c[c]["batched"] for c in both]
    if all(ahead):
        return {"at": None, "text": f"{baseline} ahead at every level ({both[0]}..{both[-1]}): no crossover, diffusion never leads"}
    if not ahead[-1]:
        return {"at": None, "text": f"batched diffusion ahead of {baseline} up to {both[-1]}: no crossover in the range measured"}
    first = max(i for i, a in enumerate(ahead) if not a) + 1
    return {"at": both[first], "text": f"{baseline} overtakes batched diffusion at concurrency {both[first]} (diffusion ahead at {both[first - 1]})"}


def load_engine(model: Optional[Path], device: str, shapes: Optional[Path], threads: Optional[int], dtype: Optional[str] = None, settings: Optional[dict[str, Any]] = None):
    """The engine to sweep: a model directory (default: the embedded model), or with
    `shapes` a ModelConfig JSON built with random weights and the embedded tokenizer (a
    larger model's speed, not its quality: random weights never close a middle early).
    `dtype` casts the weights (e.g. bfloat16 on a GPU); `settings` override the sampler's."""
    import engine

    eng = engine.load(model, device=device, threads=threads)
    if shapes is not None:
        from engine.model import InfillTransformer, ModelConfig

        cfg = ModelConfig.from_dict(json.loads(shapes.read_text()))
        if cfg.vocab_size < eng.tokenizer.vocab_size:
            raise engine.InfillError(f"{shapes}: vocab_size {cfg.vocab_size} < the tokenizer's {eng.tokenizer.vocab_size}")
        torch.manual_seed(0)
        with torch.device(device):
            eng.model = InfillTransformer(cfg).eval()
        eng.model_name = f"random weights, shapes of {shapes.stem}"
        eng.info = {"parameters": eng.model.num_parameters()}
    if dtype:
        eng.model.to(getattr(torch, dtype))
    if settings:
        eng.settings = eng.settings.replace(**settings)
    return eng


def parse_settings(pairs: list[str]) -> dict[str, Any]:
    """KEY=VALUE sampler settings (values parsed as JSON when they can be: 32, false, 0.9)."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--set wants KEY=VALUE, got {pair!r}")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def run_sweep(eng, levels: list[int], modes: list[str], min_requests: int, progress=None, repeats: int = 2, draft_tokens: int = DRAFT_TOKENS) -> dict[str, Any]:
    """Every level runs every mode `repeats` times, in order, then in reverse order, and so
    on (ABBA): a machine that slows down or speeds up during a level weighs on every mode
    alike. A mode's figures pool its runs (tokens and wall time summed, latencies joined)."""
    items = load_items()
    eng.infill(items[0].prefix, items[0].suffix, language=items[0].language)  # warm-up
    out: list[dict[str, Any]] = []
    same = compared = 0
    for c in levels:
        requests = max(min_requests, WAVES * c)
        records: dict[str, list[Record]] = {mode: [] for mode in modes}
        walls: dict[str, float] = {mode: 0.0 for mode in modes}
        level_same = level_compared = ar_same = ar_compared = 0
        for repeat in range(repeats):
            runs: dict[str, list[Record]] = {}
            for mode in (modes if repeat % 2 == 0 else modes[::-1]):
                runs[mode], wall = run_level(eng, mode, items, c, requests, draft_tokens)
                records[mode] += runs[mode]
                walls[mode] += wall
            if "batched" in runs and "sequential" in runs:
                share = identical_share(runs["batched"], runs["sequential"])
                level_same, level_compared = level_same + round(share * requests), level_compared + requests
            if DRAFTED in runs and "autoregressive" in runs:
                share = identical_share(runs[DRAFTED], runs["autoregressive"])
                ar_same, ar_compared = ar_same + round(share * requests), ar_compared + requests
        for mode in modes:
            out.append(summarize(mode, c, records[mode], walls[mode]))
            if mode == "batched" and level_compared:
                out[-1]["identical_to_sequential"] = round(level_same / level_compared, 4)
            if mode == DRAFTED and ar_compared:
                out[-1]["identical_to_autoregressive"] = round(ar_same / ar_compared, 4)
            if progress:
                progress(out[-1])
        same, compared = same + level_same, compared + level_compared
    return {
        "levels": out,
        "crossover_per_user": crossover(out),
        "crossover_total": crossover(out, "tokens_per_s"),
        "crossover_per_user_drafts": crossover(out, baseline=DRAFTED),
        "draft_tokens": draft_tokens,
        "batched_identical_to_sequential": {"identical": same, "requests": compared},
        "model": eng.model_name,
        "parameters": eng.info.get("parameters"),
        "device": eng.device,
        "dtype": str(next(eng.model.parameters()).dtype).replace("torch.", "") if hasattr(eng.model, "parameters") else None,
        "threads": torch.get_num_threads(),
        "settings": {k: v for k, v in vars(eng.settings).items()},
        "items": "held-out middles (lab/concurrency/items.py)",
        "repeats": repeats,
    }


def table(report: dict[str, Any]) -> str:
    rows = [f"{'C':>3} {'mode':<22}{'tok/s':>9}{'tok/s/user':>11}{'mean ms':>9}{'p50 ms':>9}{'p99 ms':>9}{'tok/req':>9}{'empty':>7}{'tpf':>7}{'EM':>7}{'right ch/s':>11}{'same':>7}"]
    for l in report["levels"]:
        # batched: the share identical to sequential; autoregressive+drafts: to autoregressive
        same_share = l.get("identical_to_sequential", l.get("identical_to_autoregressive"))
        same = f"{same_share:.0%}" if same_share is not None else ""
        rows.append(f"{l['concurrency']:>3} {l['mode']:<22}{l['tokens_per_s']:>9.1f}{l['tokens_per_s_per_user']:>11.1f}{l.get('mean_ms', 0):>9.0f}{l['p50_ms']:>9.0f}{l['p99_ms']:>9.0f}{l.get('tokens_per_request', 0):>9.2f}{l.get('empty_answers', 0):>7}{l['tpf']:>7.2f}{l['exact_match']:>7.1%}{l.get('right_chars_per_s_per_user', 0):>11.1f}{same:>7}")
    rows.append(f"tokens/s per user: {report['crossover_per_user']['text']}")
    rows.append(f"total tokens/s:    {report['crossover_total']['text']}")
    if any(l["mode"] == DRAFTED for l in report["levels"]):
        accept = [f"C={l['concurrency']} {l['draft_accept']:.0%} of {l['drafted']}" for l in report["levels"] if l["mode"] == DRAFTED and l.get("draft_accept") is not None]
        rows.append(f"per user, drafts:  {report['crossover_per_user_drafts']['text']}")
        rows.append(f"draft tokens kept (--draft-tokens {report.get('draft_tokens')}): {', '.join(accept) or 'none drafted'}")
    return "\n".join(rows)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m lab bench --concurrency", description=__doc__.split("\n")[0])
    p.add_argument("--concurrency", default=DEFAULT_LEVELS, help=f"comma-separated levels (default {DEFAULT_LEVELS})")
    p.add_argument("--modes", default=",".join(MODES), help=f"comma-separated subset of {','.join(MODES)}")
    p.add_argument("--requests", type=int, default=MIN_REQUESTS, help="requests per level at least (a level C runs max(this, 4C))")
    p.add_argument("--draft-tokens", type=int, default=DRAFT_TOKENS, help=f"{DRAFTED}: the longest draft verified per pass (default {DRAFT_TOKENS})")
    p.add_argument("--repeats", type=int, default=2, help="runs of every mode per level, in alternating order (default 2: ABBA)")
    p.add_argument("--model", type=Path, default=None, help="model directory (default: the embedded model)")
    p.add_argument("--shapes", type=Path, default=None, help="ModelConfig JSON: random weights of these shapes (speed only)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: the engine's choice)")
    p.add_argument("--dtype", default=None, help="cast the weights, e.g. bfloat16 (default: as loaded)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a sampler setting for every request (repeatable), e.g. constrained=false")
    p.add_argument("--json", action="store_true", help="the last line of output is the JSON report")
    p.add_argument("--plot", type=Path, default=None, help="write a PNG of tokens/s per user against concurrency")
    p.add_argument("--out", type=Path, default=None, help="also write the JSON report to this file")
    return p


def parse_levels(text: str) -> list[int]:
    try:
        levels = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise ValueError(f"--concurrency wants comma-separated integers, got {text!r}") from None
    if not levels or levels[0] < 1:
        raise ValueError("--concurrency levels must be positive integers")
    return levels


def main(argv: Optional[list[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        levels = parse_levels(args.concurrency)
        settings = parse_settings(args.set)
    except ValueError as exc:
        print(f"python -m lab bench: error: {exc}", file=sys.stderr)
        return 2
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        print(f"python -m lab bench: error: unknown mode(s) {unknown}; known: {', '.join(MODES)}", file=sys.stderr)
        return 2
    if args.draft_tokens < 1:
        print("python -m lab bench: error: --draft-tokens must be at least 1", file=sys.stderr)
        return 2
    eng = load_engine(args.model, args.device, args.shapes, args.threads, args.dtype, settings)

    def progress(level: dict[str, Any]) -> None:
        print(f"C={level['concurrency']:<3} {level['mode']:<22} {level['tokens_per_s']:8.1f} tok/s  mean {level['mean_ms']:6.0f} ms  p50 {level['p50_ms']:7.0f} ms  {level['tokens_per_request']:5.2f} tokens/request  EM {level['exact_match']:.1%}", file=sys.stderr, flush=True)

    report = run_sweep(eng, levels, modes, args.requests, progress, max(1, args.repeats), args.draft_tokens)
    if args.plot:
        from lab.concurrency.plot import plot

        plot(report, args.plot)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1) + "\n")
    if args.json:
        print(json.dumps(report))
    else:
        print(table(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
