"""Training-step throughput: tokens/s and achieved FLOP/s of a full step, for any config.

    python -m lab.training.throughput --config d256x6h4 --config d512x8h8
    python -m lab.training.throughput --config d256x6h4 --baseline 08ebe88

Rates are per CPU-second of the measuring process (at --threads 1, time on the core),
so other work on a shared machine does not count against a step; the wall-clock time is
reported too.

A step is what `python -m lab train` does: forward, loss, backward, gradient clipping, AdamW,
on batches from the training pipeline (bf16 autocast on CPU). FLOPs follow the usual
accounting: 6 x parameters x tokens for the matmuls of forward and backward, plus
12 x layers x d_model per (query, key) pair that the attention rule allows between real
tokens (`attended_pairs`): padding and skipped blocks do not flatter a step.

`--baseline REV` measures the same configs with the training code of git revision REV
(checked out to a temporary worktree) in alternating rounds with this tree, so a
before/after comparison shares the machine's load; the ratio is the figure to quote.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CONFIG = re.compile(r"^d(\d+)x(\d+)h(\d+)$")


def parse_config(text: str) -> tuple[int, int, int]:
    match = CONFIG.match(text)
    if not match:
        raise argparse.ArgumentTypeError(f"config {text!r}: expected dDxLhH, e.g. d256x6h4")
    return int(match[1]), int(match[2]), int(match[3])


def attended_pairs(segments) -> int:
    """(query, key) pairs the model's attention rule allows, over a batch's real tokens:
    suffix x suffix, the prefix's causal triangle, each canvas copy x (context + itself).
    The same count for any row layout, so trees that lay rows out differently compare."""
    total = 0
    for row in segments.tolist():
        S, P = row.count(1), row.count(2)
        copies = [row.count(seg) for seg in set(row) if seg >= 3]
        total += S * S + P * (P + 1) // 2 + sum(n * (S + P + n) for n in copies)
    return total


def _training_modules():
    """The measured tree's training modules (engine.training before the lab/ split)."""
    try:
        from lab.training import data, train  # type: ignore[import-not-found]
    except ImportError:
        from engine.training import data, train  # type: ignore[no-redef]
    return data, train


def measure(config: str, corpus: Path, tokenizer: Path, batch_size: int, steps: int, threads: int, compile: int = 0, seed: int = 0, profile: Path | None = None) -> dict:
    """One config's step in this process: warm-up steps, then `steps` timed steps."""
    import torch

    from engine.model import InfillTransformer, ModelConfig
    from engine.tokenizer import Tokenizer

    data, train = _training_modules()
    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    d, layers, heads = parse_config(config)
    tok = Tokenizer.from_file(tokenizer)
    docs = [json.loads(line) for line in open(corpus / "train.jsonl")][:2000]
    batches = data.batch_source(docs, tok, data.DataConfig(), seed=seed, edit_fraction=0.1, batch_size=batch_size)
    cfg = ModelConfig(vocab_size=tok.vocab_size, d_model=d, n_layers=layers, n_heads=heads, ffn_hidden=int(8 * d / 3 / 16) * 16)
    model = InfillTransformer(cfg).train()
    if compile:
        model.compile_for_training()
    make_optimizer = getattr(train, "make_optimizer", None)
    opt = make_optimizer(model, 1e-3) if make_optimizer else torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95), fused=False)
    device = torch.device("cpu")

    def step(batch) -> None:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss, _ = train.compute_loss(model, batch, device)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    for _ in range(6 if compile else 2):  # compiling happens in the first steps
        step(next(batches))
    timed = [next(batches) for _ in range(steps)]
    start, cpu_start = time.perf_counter(), time.process_time()
    if profile is not None:  # the same steps under torch.profiler: the table is the summary
        from torch.profiler import ProfilerActivity
        from torch.profiler import profile as profiler

        with profiler(activities=[ProfilerActivity.CPU]) as prof:
            for batch in timed:
                step(batch)
        profile.write_text(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25) + "\n")
    else:
        for batch in timed:
            step(batch)
    wall = time.perf_counter() - start
    # CPU seconds of this process: on a shared machine the wall clock also counts the
    # time other processes held the core, CPU time (at one thread) does not.
    seconds = time.process_time() - cpu_start
    tokens = sum(b.tokens for b in timed)
    computed = sum(b.ids.numel() for b in timed)
    params = model.num_parameters()
    flops = 6 * params * tokens + 12 * layers * d * sum(attended_pairs(b.segments) for b in timed)
    canvas = sum(int((b.segments >= 3).sum()) for b in timed)
    prefix_loss = sum(int(((b.segments == 2) & (b.targets >= 0)).sum()) for b in timed)
    return {
        "config": config, "compiled": bool(compile), "parameters": params, "batch_size": batch_size, "steps": steps, "cpu_seconds": round(seconds, 3), "wall_seconds": round(wall, 3),
        "tokens_per_s": round(tokens / seconds), "tflops": round(flops / seconds / 1e12, 4),
        "padding": round(1 - tokens / computed, 4),
        "loss_positions": round((canvas + prefix_loss) / tokens, 4), "canvas_positions": round(canvas / tokens, 4),
    }


def _child(tree: Path, args: argparse.Namespace, config: str) -> dict:
    """Measure in a fresh process importing the training code of `tree`."""
    here = tree == Path(__file__).resolve().parents[2]
    if not here and args.baseline_config:
        config = args.baseline_config
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); "
        "from importlib.machinery import SourceFileLoader; "
        "m = SourceFileLoader('throughput', sys.argv[2]).load_module(); "
        "print(json.dumps(m.measure(sys.argv[3], *map(__import__('pathlib').Path, sys.argv[4:6]), *map(int, sys.argv[6:10]))))"
    )
    cmd = [sys.executable, "-c", code, str(tree), __file__, config, str(args.corpus.resolve()), str(args.tokenizer.resolve()),
           str(args.batch_size if here or not args.baseline_batch_size else args.baseline_batch_size),
           str(args.steps), str(args.threads), str(int(args.compile and here))]
    env = dict(os.environ, PYTHONPATH=str(tree), OMP_NUM_THREADS=str(args.threads))
    out = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"measurement in {tree} failed: {out.stderr.strip()[-800:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lab.training.throughput", description=__doc__.splitlines()[0])
    p.add_argument("--config", action="append", type=str, help="dDxLhH (repeatable; default d256x6h4, the shipped shape)")
    p.add_argument("--corpus", type=Path, default=Path("data/corpus"))
    p.add_argument("--tokenizer", type=Path, default=Path(__file__).resolve().parents[2] / "engine" / "default_model" / "tokenizer.json")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rounds", type=int, default=2, help="alternating rounds with --baseline")
    p.add_argument("--baseline", default=None, help="git revision whose training step to measure side by side")
    p.add_argument("--compile", action="store_true", help="measure this tree with `python -m lab train --compile`")
    p.add_argument("--baseline-config", default=None, help="the baseline's config (default: each --config)")
    p.add_argument("--baseline-batch-size", type=int, default=None, help="the baseline's batch size (default: --batch-size)")
    p.add_argument("--profile", type=Path, default=None, help="profile this tree's first config in-process (torch.profiler) and write the table here")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    configs = args.config or ["d256x6h4"]
    for c in configs:
        parse_config(c)
    if not (args.corpus / "train.jsonl").exists():
        p.error(f"{args.corpus}/train.jsonl not found: run `python -m lab corpus --out {args.corpus}` first")
    here = Path(__file__).resolve().parents[2]
    if args.profile:
        result = measure(configs[0], args.corpus, args.tokenizer, args.batch_size, args.steps, args.threads, int(args.compile), profile=args.profile)
        print(f"{configs[0]}: {result['tokens_per_s']:,} tok/s under the profiler; table in {args.profile}")
        return 0
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"this tree": here}
        if args.baseline:
            base = Path(tmp) / "baseline"
            subprocess.run(["git", "-C", str(here), "worktree", "add", "--detach", str(base), args.baseline], check=True, capture_output=True)
            trees[f"baseline {args.baseline}"] = base
        try:
            for config in configs:
                for r in range(args.rounds if args.baseline else 1):
                    for name, tree in trees.items():
                        result = _child(tree, args, config) | {"tree": name, "round": r, "compared_with": config}
                        rows.append(result)
                        print(f"{name:>20} {result['config']:>10}{' compiled' if result.get('compiled') else ''} round {r}: {result['tokens_per_s']:>7,} tok/s  {result['tflops']:.3f} TFLOP/s  "
                              f"padding {result['padding']:.1%}  loss on {result['loss_positions']:.1%} (canvas {result['canvas_positions']:.1%})", flush=True)
        finally:
            if args.baseline:
                subprocess.run(["git", "-C", str(here), "worktree", "remove", "--force", str(Path(tmp) / "baseline")], capture_output=True)
    summary = {}
    for config in configs:
        mine = [r["tflops"] for r in rows if r["compared_with"] == config and r["tree"] == "this tree"]
        entry = {"tflops": round(sum(mine) / len(mine), 4)}
        if args.baseline:
            base = [r for r in rows if r["compared_with"] == config and r["tree"] != "this tree"]
            base_tflops = [r["tflops"] for r in base]
            entry |= {"baseline_config": base[0]["config"], "baseline_tflops": round(sum(base_tflops) / len(base), 4), "ratio": round(sum(mine) / sum(base_tflops), 3)}
            print(f"{config}{' (compiled)' if args.compile else ''}: {entry['tflops']:.3f} TFLOP/s vs {entry['baseline_tflops']:.3f} for {entry['baseline_config']} at {args.baseline}: {entry['ratio']:.2f}x")
        summary[config] = entry
    if args.json:
        print(json.dumps({"rows": rows, "summary": summary}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
