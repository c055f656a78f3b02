"""`python -m lab train`: train (or resume) the embedded masked-diffusion infilling model.

Objective (MDLM / LLaDA, adapted to infilling):
* canvas rows: cross-entropy on masked positions weighted by 1/t (t = the example's
  mask rate), on randomly corrupted positions with weight 1 (so token-to-token edits are
  learned), on clean positions with a small weight; prefix and suffix are never noised;
* prefix rows: next-token cross-entropy (the prefix is a causal stream; this puts loss on
  every computed position of the context, not only on the ~10% that is canvas).

Runs on CPU (bf16 autocast, measured ~1.7x faster than fp32 here) and on a CUDA GPU
(bf16). Checkpoints (model + optimizer + data position) are written every few minutes
and on exit; a stopped run resumes with `--resume`. The learning-rate schedule runs on
progress = max(step / max_steps, elapsed / time_budget) so a time-boxed run still ends
with a fully decayed learning rate.
"""
from __future__ import annotations

import argparse
import json
import math
import random
import signal
import sys
import time
from dataclasses import asdict
from pathlib import Path

import torch
import torch.nn.functional as F

from engine.model import SEG_CANVAS, SEG_PREFIX, InfillTransformer, ModelConfig
from engine.modeldir import TOKENIZER_FILE, load_infill_model, read_config, save_model_dir
from engine.tokenizer import Tokenizer
from lab.training.checkpoint import CheckpointError, atomic_save, load_latest
from lab.training.corpus import read_split
from lab.training.data import Batch, DataConfig, batch_source, collate, make_example
from lab.training.loss import linear_cross_entropy
from lab.training.snapshots import save_snapshot

AR_LOSS_WEIGHT = 0.5


def compute_loss(model: InfillTransformer, batch: Batch, device: torch.device) -> tuple[torch.Tensor, dict[str, float]]:
    """Weighted masked-diffusion loss on canvas rows plus next-token loss on prefix rows.

    Both are one weighted cross-entropy over the rows that carry loss (loss.py computes
    projection and cross-entropy chunk by chunk); the weights make it equal to
    canvas_loss + AR_LOSS_WEIGHT * mean next-token CE.
    """
    segments = batch.segments.to(device)
    targets = batch.targets.to(device)
    hidden = model(batch.ids.to(device), batch.positions.to(device), segments, batch.layout)  # (B, T, C)
    canvas_rows = segments >= SEG_CANVAS
    prefix_rows = (segments == SEG_PREFIX) & (targets >= 0)
    row_weights = torch.where(canvas_rows, batch.weights.to(device) / batch.canvas_lengths.sum().to(device), 0.0)
    row_weights = torch.where(prefix_rows, AR_LOSS_WEIGHT / prefix_rows.sum().clamp(min=1), row_weights)
    rows = canvas_rows | prefix_rows
    out = linear_cross_entropy(hidden[rows], model.lm_head.weight, targets[rows], row_weights[rows])
    in_canvas = canvas_rows[rows]
    masked = batch.masked.to(device)[rows] & in_canvas
    ar_ce = out.ce[~in_canvas]
    stats = {
        "canvas_loss": float((out.ce * row_weights[rows])[in_canvas].sum()),
        "masked_ce": float(out.ce[masked].mean()) if masked.any() else 0.0,
        "masked_acc": float(out.correct[masked].float().mean()) if masked.any() else 0.0,
        "ar_loss": float(ar_ce.mean()) if ar_ce.numel() else 0.0,
    }
    return out.loss, stats


def validation_batches(tok: Tokenizer, cfg: DataConfig, corpus: Path, n_batches: int, batch_size: int, languages: str = "") -> list[Batch]:
    """A fixed validation set: same documents, cuts and noise every time (seeded);
    `languages` (comma-separated) keeps only those languages' files."""
    docs = read_split(corpus, "valid")
    if languages:
        wanted = {name.strip() for name in languages.split(",") if name.strip()}
        docs = [d for d in docs if d.get("language", "python") in wanted]
    rng = random.Random(1234)
    torch_state = torch.random.get_rng_state()
    torch.manual_seed(1234)
    batches = []
    for i in range(n_batches):
        texts = [rng.choice(docs)["text"] for _ in range(batch_size)]
        examples = [make_example(t, tok, cfg, rng) for t in texts]
        t_values = [0.1 + 0.8 * j / (batch_size - 1) for j in range(batch_size)]
        batches.append(collate(examples, tok, cfg, rng, t_values))
    torch.random.set_rng_state(torch_state)
    return batches


@torch.no_grad()
def evaluate(model: InfillTransformer, batches: list[Batch], device: torch.device, autocast) -> dict[str, float]:
    model.eval()
    totals: dict[str, float] = {}
    for batch in batches:
        with autocast():
            _, stats = compute_loss(model, batch, device)
        for k, v in stats.items():
            totals[k] = totals.get(k, 0.0) + v / len(batches)
    model.train()
    return totals


class RunClock:
    """Seconds of training so far, carried across resumes.

    "wall" counts wall-clock time. "cpu" counts this process's CPU time divided by its
    torch threads: on a machine shared with other work, the learning-rate schedule,
    the time budget and the learning curves then measure the compute the run got, not
    how long it waited for a core."""

    def __init__(self, kind: str, before: float, threads: int):
        self.kind, self.before, self.threads = kind, before, max(1, threads)
        self.start_wall, self.start_cpu = time.time(), time.process_time()

    def cpu_seconds(self) -> float:
        return time.process_time() - self.start_cpu

    def elapsed(self) -> float:
        now = self.cpu_seconds() / self.threads if self.kind == "cpu" else time.time() - self.start_wall
        return self.before + now


def make_optimizer(model: InfillTransformer, lr: float) -> torch.optim.AdamW:
    """AdamW with weight decay on matrices only; the fused kernel (one pass over each
    parameter instead of a dozen elementwise ops) where the device has one."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.95), fused=True)


def lr_at(progress: float, peak: float, warmup: float) -> float:
    if progress < warmup:
        return peak * progress / warmup
    decay = min(1.0, (progress - warmup) / (1 - warmup))
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * decay)))


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m lab train", description="Train the embedded masked-diffusion infilling model.")
    p.add_argument("--run", type=Path, default=Path("runs/default"), help="run directory (checkpoints, logs, exported model)")
    p.add_argument("--corpus", type=Path, default=Path("data/corpus"))
    p.add_argument("--tokenizer", type=Path, default=None, help="tokenizer.json (default: <run>/tokenizer.json, trained if missing)")
    p.add_argument("--resume", action="store_true", help="continue from <run>/checkpoint.pt")
    p.add_argument("--init-from", type=Path, default=None, help="start from a model directory's weights (fresh optimizer)")
    p.add_argument("--d-model", type=int, default=256)
    p.add_argument("--layers", type=int, default=6)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--lr", type=float, default=1.5e-3)
    p.add_argument("--warmup", type=float, default=0.03, help="warm-up as a fraction of progress")
    p.add_argument("--max-steps", type=int, default=100_000)
    p.add_argument("--time-budget", type=float, default=3600.0, help="seconds of training (on --clock) for the LR schedule and the stop")
    p.add_argument("--clock", choices=("cpu", "wall"), default=None, help="what a second of training is: this process's CPU time per thread (default on CPU: a shared machine's other work does not count) or wall-clock time (default on GPU)")
    p.add_argument("--checkpoint-minutes", type=float, default=5.0)
    p.add_argument("--snapshots", type=int, default=4, help="keep the weights of the last N checkpoints for averaging (lab.training.average; 0 = none)")
    p.add_argument("--eval-every", type=int, default=100)
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = all cores)")
    p.add_argument("--data-workers", type=int, default=0, help="processes preparing batches ahead (GPU runs; 0 = in the training process)")
    p.add_argument("--compile", action="store_true", help="torch.compile the layers' work around attention (CPU: 1.3x faster steps after a few minutes)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--edit-fraction", type=float, default=0.1, help="share of next-edit examples in each batch")
    p.add_argument("--languages", default="", help="comma-separated corpus languages to train on (default: all); a continuation can stay on the languages its model knows")
    p.add_argument("--near-fraction", type=float, default=0.0, help="share of examples whose canvas starts from a near line of the same file (lab/training/near_lines.py)")
    p.add_argument("--context-fraction", type=float, default=0.0, help="share of examples that read snippets of the same file before their prefix (lab/training/context_snippets.py)")
    p.add_argument("--prefix-tokens", type=int, default=DataConfig.prefix_tokens)
    p.add_argument("--suffix-tokens", type=int, default=DataConfig.suffix_tokens)
    p.add_argument("--canvas-copies", type=int, default=DataConfig.canvas_copies, help="noised copies of each canvas per context (2: complementary masks)")
    return p.parse_args(argv)


def _tokenizer_path(args: argparse.Namespace, run: Path) -> Path | str:
    """The tokenizer a run uses. A run that starts from a model's weights (--init-from) must
    read text with that model's own tokenizer: its embedding rows are indexed by those ids,
    and a tokenizer trained anew on another corpus would silently scramble them. Returns an
    error message (str) when the two disagree."""
    if not args.init_from:
        return args.tokenizer or run / "tokenizer.json"
    source = Path(args.init_from) / TOKENIZER_FILE
    if args.tokenizer and Path(args.tokenizer).read_bytes() != source.read_bytes():
        return (f"train: --tokenizer {args.tokenizer} is not the tokenizer of --init-from {args.init_from}; "
                f"a continued model must keep its own ({source})")
    return source


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    args.clock = args.clock or ("cpu" if str(args.device).startswith("cpu") else "wall")
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    run: Path = args.run
    run.mkdir(parents=True, exist_ok=True)
    tok_path = _tokenizer_path(args, run)
    if isinstance(tok_path, str):
        print(tok_path, file=sys.stderr)
        return 2
    if not tok_path.exists():
        from lab.training.tokenizer_train import train_tokenizer

        print(f"train: no tokenizer at {tok_path}; training one on {args.corpus}", flush=True)
        train_tokenizer((d["text"] for d in read_split(args.corpus, "train")), 8192).save(str(tok_path))
    tok = Tokenizer.from_file(tok_path)
    data_cfg = DataConfig(prefix_tokens=args.prefix_tokens, suffix_tokens=args.suffix_tokens, canvas_copies=args.canvas_copies)

    ckpt_path = run / "checkpoint.pt"
    state = None
    if args.resume:
        try:
            state = load_latest(ckpt_path)
        except CheckpointError as exc:
            print(f"train: {exc}", file=sys.stderr)
            return 2
    if state is not None:
        model_cfg = ModelConfig.from_dict(state["model_config"])
        print(f"train: resuming {ckpt_path} at step {state['step']} ({state['tokens'] / 1e6:.1f}M tokens)", flush=True)
    elif args.init_from:
        config = read_config(args.init_from)
        model_cfg = ModelConfig.from_dict(config["model"])
    else:
        model_cfg = ModelConfig(vocab_size=tok.vocab_size, d_model=args.d_model, n_layers=args.layers, n_heads=args.heads, ffn_hidden=int(8 * args.d_model / 3 / 16) * 16)
    model = InfillTransformer(model_cfg)
    if state is not None:
        model.load_state_dict(state["model"])
    elif args.init_from:
        model.load_state_dict(load_infill_model(args.init_from, read_config(args.init_from)).state_dict())
    model.to(device).train()
    if args.compile:
        model.compile_for_training()
    opt = make_optimizer(model, args.lr)
    step, tokens, elapsed_before = 0, 0, 0.0
    history: dict = {}
    if state is not None:
        opt.load_state_dict(state["optimizer"])
        step, tokens, elapsed_before = state["step"], state["tokens"], state["elapsed"]
        history = state.get("history", {})
    init_history = {}
    if args.init_from:
        init_history = read_config(args.init_from).get("training", {})
        if state is None:  # a fresh start from another model's weights carries its counts on
            tokens = int(init_history.get("tokens_seen", 0))
            step = int(init_history.get("steps", 0))
            history["first_step"] = step
            history["init_train_seconds"] = float(init_history.get("train_seconds", 0))
    # --max-steps and the schedule count this run's own steps, not those of the model it started from
    first_step = int(history.get("first_step", 0))
    print(f"train: {model.num_parameters() / 1e6:.2f}M parameters, device {device}, threads {torch.get_num_threads()}", flush=True)

    train_docs = read_split(args.corpus, "train")
    if args.languages:
        wanted = {name.strip() for name in args.languages.split(",") if name.strip()}
        train_docs = [d for d in train_docs if d.get("language", "python") in wanted]
        if not train_docs:
            print(f"train: no training files in {args.corpus} are in --languages {args.languages}", file=sys.stderr)
            return 2
    batches = batch_source(train_docs, tok, data_cfg, seed=args.seed + step, edit_fraction=args.edit_fraction, batch_size=args.batch_size, workers=args.data_workers, near_fraction=args.near_fraction, context_fraction=args.context_fraction)
    torch.manual_seed(args.seed + step)
    val = validation_batches(tok, data_cfg, args.corpus, n_batches=6, batch_size=16)
    use_bf16 = True

    def autocast():
        return torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=use_bf16)

    log = open(run / "log.jsonl", "a")
    stop = {"now": False}

    def request_stop(signum, frame):  # finish the step, checkpoint, exit
        stop["now"] = True

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)

    def checkpoint(final: bool = False) -> bool:
        """Write checkpoint, model directory and snapshot; False (reported) if the disk refused."""
        elapsed = clock.elapsed()
        try:
            atomic_save(
                {"model": model.state_dict(), "optimizer": opt.state_dict(), "model_config": model_cfg.to_dict(), "step": step, "tokens": tokens, "elapsed": elapsed, "clock": clock.kind, "history": history, "args": vars(args) | {"run": str(run), "corpus": str(args.corpus), "tokenizer": str(tok_path), "init_from": str(args.init_from)}},
                ckpt_path,
            )
        except CheckpointError as exc:
            print(f"train: {exc}", file=sys.stderr, flush=True)
            return False
        training_info = {
            "steps": step,
            "tokens_seen": tokens,
            "train_seconds": round(elapsed + float(history.get("init_train_seconds", 0)), 1),
            "device": str(device),
            "data": asdict(data_cfg) | {"edit_fraction": args.edit_fraction, "near_fraction": args.near_fraction, "context_fraction": args.context_fraction, "languages": args.languages or "all"},
            "last_validation": history.get("last_validation"),
        }
        try:
            save_model_dir(model, tok_path, run / "model", {"training": training_info})
            if args.snapshots > 0:
                save_snapshot(run, model, step, tokens, keep=args.snapshots)
        except (OSError, CheckpointError) as exc:  # the checkpoint itself is safe: say so
            print(f"train: checkpoint at step {step} written, but not the model directory or snapshot: {exc}", file=sys.stderr, flush=True)
        print(f"train: checkpoint at step {step} -> {ckpt_path} and {run / 'model'}{' (final)' if final else ''}", flush=True)
        return True

    def validate() -> None:
        v = evaluate(model, val, device, autocast)
        history["last_validation"] = {"step": step, "tokens": tokens, "elapsed": round(clock.elapsed()), **{k: round(x, 4) for k, x in v.items()}}
        log.write(json.dumps({"validation": history["last_validation"]}) + "\n")
        log.flush()
        print(f"validation step {step}: masked ce {v['masked_ce']:.3f} acc {v['masked_acc']:.3f} | ar {v['ar_loss']:.3f}", flush=True)

    clock = RunClock(args.clock, before=elapsed_before, threads=torch.get_num_threads())
    last_ckpt = time.time()
    window_tokens, window_start = 0, time.time()
    while not stop["now"]:
        elapsed = clock.elapsed()
        progress = max((step - first_step) / args.max_steps, elapsed / args.time_budget)
        if progress >= 1.0:
            break
        lr = lr_at(progress, args.lr, args.warmup)
        for group in opt.param_groups:
            group["lr"] = lr
        batch = next(batches)
        with autocast():
            loss, stats = compute_loss(model, batch, device)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        tokens += batch.tokens
        window_tokens += batch.tokens
        if step % args.log_every == 0:
            rate = window_tokens / (time.time() - window_start)
            window_tokens, window_start = 0, time.time()
            remaining = (1 - progress) * args.time_budget
            line = {"step": step, "tokens": tokens, "lr": round(lr, 6), "loss": round(float(loss.detach()), 4), **{k: round(v, 4) for k, v in stats.items()}, "tok_s": round(rate), "elapsed": round(elapsed), "cpu_s": round(clock.cpu_seconds())}
            log.write(json.dumps(line) + "\n")
            log.flush()
            print(f"step {step:6d} | loss {float(loss.detach()):.3f} | masked ce {stats['masked_ce']:.3f} acc {stats['masked_acc']:.2f} | ar {stats['ar_loss']:.3f} | lr {lr:.2e} | {rate:,.0f} tok/s | {tokens / 1e6:.1f}M tok | {progress * 100:.1f}% | ~{remaining / 60:.0f} min left", flush=True)
        if step % args.eval_every == 0:
            validate()
        if time.time() - last_ckpt > args.checkpoint_minutes * 60:
            checkpoint()
            last_ckpt = time.time()
    if (history.get("last_validation") or {}).get("step") != step:
        validate()  # a run that ends (or is stopped) between evaluations still ends its curve where it stopped
    return 0 if checkpoint(final=True) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
