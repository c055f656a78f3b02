#!/usr/bin/env python
"""Speed, memory and cache fidelity of an open diffusion checkpoint (Dream, LLaDA, Open-dCoder).

On a GPU, with a real checkpoint directory (target: done in < 8 minutes on an H200):
    python scripts/gpu_family_bench.py /models/Dream-Coder-v0-Base-7B --out family_bench.json
CPU smoke run with a tiny model (what the tests do):
    python scripts/gpu_family_bench.py DIR --device cpu --modes none,int8 --repeats 1 --out /tmp/fb.json

For each precision mode (none = the load dtype, bf16 on GPU; nf4 / bnb8 = bitsandbytes;
int8 / int4 = engine.quant) it loads the checkpoint, then runs the engine's real sampler
(engine.api.Engine) at batch 1 on two scenarios:
  single_line  max 16 tokens, block 16   (a line completion)
  tokens_64    max 64 tokens, block 16   (a multi-line body)
and records latency (p50 / p90 / mean ms), tokens written per second and per forward pass,
load time and peak GPU memory. On the full-precision model it then measures the dual
cache (lab.families.fidelity): per refresh policy, logit drift against the uncached
logits and whether the middles stay the same. Results are written after every mode, so
a run cut short still leaves a file; modes not started before --budget-s are recorded as
skipped.
"""
from __future__ import annotations

import argparse
import gc
import json
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from engine.api import Engine  # noqa: E402
from engine.families import CachePolicy, load_family_model  # noqa: E402
from lab.families.fidelity import measure_policy  # noqa: E402

# (prefix, suffix) pairs: Python, JavaScript, Go, Rust. The middle is a line or a body.
PROMPTS: list[tuple[str, str]] = [
    ("def mean(xs: list[float]) -> float:\n    if not xs:\n        return 0.0\n    ", "\n\n\nprint(mean([1.0, 2.0, 3.0]))\n"),
    ("function debounce(fn, ms) {\n  let timer;\n  return (...args) => {\n    ", "\n  };\n}\n\nexport default debounce;\n"),
    ("func Reverse(s string) string {\n\trunes := []rune(s)\n\t", "\n\treturn string(runes)\n}\n"),
    ("fn parse_kv(line: &str) -> Option<(String, String)> {\n    ", "\n}\n\nfn main() {\n    println!(\"{:?}\", parse_kv(\"a=b\"));\n}\n"),
]
SCENARIOS = {"single_line": dict(max_tokens=16, block_size=16), "tokens_64": dict(max_tokens=64, block_size=16)}


def parse_args(argv: Optional[list[str]]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    p.add_argument("model_dir", type=Path)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--dtype", default=None, help="load dtype (default: bf16 on GPU, fp32 on CPU)")
    p.add_argument("--modes", default="none,nf4,bnb8,int8,int4", help="comma list of none,nf4,bnb8,int8,int4")
    p.add_argument("--repeats", type=int, default=2, help="timed passes over the prompts per scenario")
    p.add_argument("--cache", default="block", help="cache policy for the timing runs (exact | block | every:K)")
    p.add_argument("--fidelity-policies", default="exact,block,every:4", help="policies compared against the exact logits ('' = skip)")
    p.add_argument("--budget-s", type=float, default=420.0, help="start no new mode or fidelity run after this many seconds")
    p.add_argument("--threads", type=int, default=0, help="CPU threads for torch (0 = torch's default)")
    p.add_argument("--out", type=Path, default=Path("family_bench.json"))
    return p.parse_args(argv)


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _peak_gib(device: str) -> Optional[float]:
    return round(torch.cuda.max_memory_allocated() / 1024**3, 3) if device.startswith("cuda") else None


def run_scenario(eng: Engine, device: str, settings: dict[str, int], repeats: int) -> dict[str, Any]:
    eng.infill(*PROMPTS[0], **settings, constrained=False)  # warm-up (kernels, allocator)
    latencies: list[float] = []
    tokens = forwards = 0
    for _ in range(repeats):
        for prefix, suffix in PROMPTS:
            _sync(device)
            t0 = time.perf_counter()
            result = eng.infill(prefix, suffix, **settings, constrained=False)
            _sync(device)
            latencies.append((time.perf_counter() - t0) * 1000)
            # The decoder's throughput: the tokens the sampler wrote. What a user is shown can
            # be shorter (a random-weight checkpoint's loops are degenerate middles, shown as
            # nothing: engine/degenerate.py), which is not what this bench measures.
            tokens += result.written
            forwards += result.forwards
    seconds = sum(latencies) / 1000
    ordered = sorted(latencies)
    return {
        "runs": len(latencies),
        "latency_ms_p50": round(statistics.median(ordered), 2),
        "latency_ms_p90": round(ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))], 2),
        "latency_ms_mean": round(statistics.fmean(ordered), 2),
        "tokens": tokens,
        "forwards": forwards,
        "tokens_per_s": round(tokens / seconds, 2) if seconds else 0.0,
        "tokens_per_forward": round(tokens / forwards, 3) if forwards else 0.0,
    }


def fidelity(model, tok, policies: list[str], budget_left: float) -> list[dict[str, Any]]:
    prompts = [(([tok.bos_id] if tok.bos_id is not None else []) + tok.encode(p), tok.encode(s)) for p, s in PROMPTS]
    out = []
    deadline = time.perf_counter() + budget_left
    for text in policies:
        if time.perf_counter() > deadline:
            out.append({"policy": text, "skipped": "time budget"})
            continue
        out.append(measure_policy(model, CachePolicy.parse(text), prompts, max_tokens=32, block=16, per_pass=2).to_dict())
    return out


def main(argv: Optional[list[str]] = None) -> int:
    args = parse_args(argv)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    start = time.perf_counter()
    report: dict[str, Any] = {
        "model_dir": str(args.model_dir),
        "device": args.device,
        "device_name": torch.cuda.get_device_name() if args.device.startswith("cuda") else platform.processor() or platform.machine(),
        "torch": torch.__version__,
        "cache_policy": args.cache,
        "scenarios": SCENARIOS,
        "modes": {},
    }

    def save() -> None:
        report["elapsed_s"] = round(time.perf_counter() - start, 1)
        args.out.write_text(json.dumps(report, indent=2) + "\n")

    for mode in [m for m in args.modes.split(",") if m]:
        if time.perf_counter() - start > args.budget_s:
            report["modes"][mode] = {"skipped": "time budget"}
            save()
            continue
        if args.device.startswith("cuda"):
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
        entry: dict[str, Any] = {}
        model = eng = None
        try:
            t0 = time.perf_counter()
            model, tok, info = load_family_model(args.model_dir, device=args.device, dtype=args.dtype, quantization=None if mode == "none" else mode, cache_policy=args.cache)
            _sync(args.device)
            entry["load_s"] = round(time.perf_counter() - t0, 2)
            entry["weights_gib"] = _peak_gib(args.device)
            report.setdefault("model", {k: info[k] for k in ("family", "parameters", "layers", "hidden_size", "heads", "dtype", "mask_id", "eom_id", "shift_logits")})
            eng = Engine(model, tok, model_dir=args.model_dir, name=info["family"], info=info, device=args.device)
            for name, settings in SCENARIOS.items():
                entry[name] = run_scenario(eng, args.device, settings, args.repeats)
            entry["peak_gib"] = _peak_gib(args.device)
            policies = [p for p in args.fidelity_policies.split(",") if p]
            if mode == "none" and policies:
                entry["cache_fidelity"] = fidelity(model, tok, policies, args.budget_s - (time.perf_counter() - start))
        except Exception as exc:  # one failing mode (e.g. bitsandbytes missing) must not lose the rest
            entry["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        report["modes"][mode] = entry
        model = eng = None  # free the weights before the next mode
        gc.collect()
        save()
    save()
    for mode, entry in report["modes"].items():
        if "single_line" in entry:
            s, b = entry["single_line"], entry["tokens_64"]
            print(f"{mode:>5}: single-line p50 {s['latency_ms_p50']} ms, {s['tokens_per_s']} tok/s, {s['tokens_per_forward']} tok/fwd | "
                  f"64-token p50 {b['latency_ms_p50']} ms, {b['tokens_per_s']} tok/s | peak {entry.get('peak_gib')} GiB")
        else:
            print(f"{mode:>5}: {entry}")
    print(f"results: {args.out} ({report['elapsed_s']} s)")
    return 0 if all("error" not in e for e in report["modes"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
