"""How far the dual cache's logits drift from the exact ones, per refresh policy.

`measure_policy` decodes each prompt with a plain confidence-ordered loop (commit the
`per_pass` most confident masked positions per pass, grow the canvas `block` positions at
a time — the shape of the engine's sampler, without its thresholds, edits or syntax
checks) twice: once under the policy and once exact. Along the cached run it also
computes the exact logits of the very same canvas, so the drift is measured pass by pass:
relative logit error and top-1 agreement over the masked positions, and at the end
whether the two runs produced the same middle.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Sequence

import torch

from engine.families.adapter import CachePolicy, FamilyModel


@dataclass
class DecodeTrace:
    tokens: list[int]  # the middle, up to (excluding) the first end-of-middle
    forwards: int
    seconds: float
    refreshes: int  # full-sequence passes (all of them when exact)


@torch.no_grad()
def confidence_decode(model: FamilyModel, prefix: list[int], suffix: list[int], max_tokens: int = 64, block: int = 16, per_pass: int = 2, exact_twin: FamilyModel | None = None, drift: list | None = None) -> DecodeTrace:
    """Greedy masked-diffusion decoding at batch 1. With `exact_twin`, appends to `drift`
    one (relative error, top-1 agreement) pair per pass, comparing against exact logits."""
    mask, eom = model.ids.mask, model.ids.eom
    ctx = model.encode_context(prefix, suffix)
    twin_ctx = exact_twin.encode_context(prefix, suffix) if exact_twin is not None else None
    canvas = torch.full((1, min(block, max_tokens)), mask, dtype=torch.long, device=model.net.device)
    forwards, start = 0, time.perf_counter()
    while True:
        masked = canvas[0] == mask
        if not masked.any():
            ends = (canvas[0] == eom).nonzero()
            if len(ends) or canvas.shape[1] >= max_tokens:
                break
            grow = min(block, max_tokens - canvas.shape[1])
            canvas = torch.cat([canvas, torch.full((1, grow), mask, dtype=torch.long, device=canvas.device)], dim=1)
            continue
        logits = model.canvas_logits(ctx, canvas)[0]  # (N, V)
        forwards += 1
        if exact_twin is not None and drift is not None:
            ref = exact_twin.canvas_logits(twin_ctx, canvas)[0]
            rows = masked.nonzero().squeeze(1)
            a, b = logits[rows], ref[rows]
            finite = torch.isfinite(b)
            err = float((a[finite] - b[finite]).abs().max() / b[finite].abs().max())
            agree = float((a.argmax(-1) == b.argmax(-1)).float().mean())
            drift.append((err, agree))
        logits[:, mask] = float("-inf")  # never "predict" a mask
        probs = logits.softmax(-1)
        conf, tok = probs.max(-1)
        conf = torch.where(masked, conf, torch.full_like(conf, -1.0))
        k = min(per_pass, int(masked.sum()))
        pick = conf.topk(k).indices
        canvas[0, pick] = tok[pick]
        # Everything after a committed end-of-middle is end-of-middle too.
        ends = (canvas[0] == eom).nonzero()
        if len(ends):
            canvas[0, int(ends[0]) :] = eom
    out = canvas[0].tolist()
    if eom in out:
        out = out[: out.index(eom)]
    seconds = time.perf_counter() - start
    return DecodeTrace(out, forwards, seconds, forwards if model.policy.exact else ctx.refreshes)


@dataclass
class PolicyReport:
    policy: str
    passes: int
    refreshes_per_infill: float
    max_rel_err: float
    mean_rel_err: float
    top1_agreement: float  # over masked positions, all passes
    same_middle: float  # fraction of prompts whose middle equals the exact run's
    forwards: int
    seconds: float

    def to_dict(self) -> dict:
        return asdict(self)


def measure_policy(model: FamilyModel, policy: CachePolicy, prompts: Sequence[tuple[list[int], list[int]]], max_tokens: int = 64, block: int = 16, per_pass: int = 2) -> PolicyReport:
    cached, exact = model.with_policy(policy), model.with_policy(CachePolicy(1))
    drift: list[tuple[float, float]] = []
    same, forwards, seconds, refreshes = 0, 0, 0.0, 0
    for prefix, suffix in prompts:
        trace = confidence_decode(cached, prefix, suffix, max_tokens, block, per_pass, exact_twin=exact, drift=drift)
        ref = confidence_decode(exact, prefix, suffix, max_tokens, block, per_pass)
        same += trace.tokens == ref.tokens
        forwards += trace.forwards
        # Time without the twin's extra passes: rerun cached alone.
        timed = confidence_decode(cached, prefix, suffix, max_tokens, block, per_pass)
        seconds += timed.seconds
        refreshes += timed.refreshes
    errs = [e for e, _ in drift] or [0.0]
    agrees = [a for _, a in drift] or [1.0]
    n = max(len(prompts), 1)
    return PolicyReport(policy.describe(), len(drift), refreshes / n, max(errs), sum(errs) / len(errs), sum(agrees) / len(agrees), same / n, forwards, seconds)



@torch.no_grad()
def pass_times_ms(model: FamilyModel, prefix: list[int], suffix: list[int], canvas_len: int = 16, repeats: int = 5) -> dict[str, float]:
    """Median wall time of one canvas pass per policy: exact (full forward) against a
    dual-cache pass after its refresh."""
    canvas = torch.full((1, canvas_len), model.ids.mask, dtype=torch.long, device=model.net.device)
    out = {}
    for text in ("exact", "block"):
        m = model.with_policy(CachePolicy.parse(text))
        ctx = m.encode_context(prefix, suffix)
        m.canvas_logits(ctx, canvas)  # warm-up; the refresh for the dual cache
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            m.canvas_logits(ctx, canvas)
            times.append((time.perf_counter() - t0) * 1000)
        out[text] = sorted(times)[len(times) // 2]
    return out


def synthetic_model(layers: int = 8, hidden: int = 512, vocab: int = 4096, seed: int = 0) -> FamilyModel:
    """A random Dream-layout model built directly (no checkpoint, no transformers)."""
    from engine.families.arch import ArchConfig
    from engine.families.network import BidirectionalDecoder
    from engine.families.spec import family_by_name
    from engine.families.tokens import SpecialIds

    torch.manual_seed(seed)
    cfg = ArchConfig(hidden_size=hidden, num_layers=layers, num_heads=hidden // 64, num_kv_heads=max(1, hidden // 256), head_dim=64, ffn_hidden=hidden * 11 // 4, vocab_size=vocab, norm_eps=1e-6, rope_theta=1e4, tie_embeddings=False, qkv_bias=True)
    net = BidirectionalDecoder(cfg).eval()
    for p in net.parameters():
        torch.nn.init.normal_(p, std=0.02)
    return FamilyModel(net, family_by_name("dream"), SpecialIds(mask=3, eom=0, pad=0, eos=0, bos=1), vocab)


def main(argv: Sequence[str] | None = None) -> int:
    """python -m lab.families.fidelity (MODEL_DIR | --tiny FAMILY) [--policies ...]"""
    import argparse
    import json
    import tempfile
    from pathlib import Path

    from engine.families import load_family_model

    p = argparse.ArgumentParser(prog="python -m lab.families.fidelity", description="Dual-cache logit drift against the exact logits, per refresh policy.")
    p.add_argument("model_dir", nargs="?", type=Path)
    p.add_argument("--tiny", help="measure a tiny random checkpoint of this family instead (needs transformers)")
    p.add_argument("--policies", default="exact,block,every:4,every:2")
    p.add_argument("--max-tokens", type=int, default=32)
    p.add_argument("--block", type=int, default=8)
    p.add_argument("--per-pass", type=int, default=1)
    p.add_argument("--device", default="cpu")
    p.add_argument("--toy-trained", action="store_true", help="measure a small model trained here for ~2 minutes on this repository's Python (lab.families.toy)")
    p.add_argument("--toy-steps", type=int, default=300)
    p.add_argument("--speed", action="store_true", help="instead: time exact vs cached passes of a synthetic 8-layer, width-512 model at 1,000 + 200 context tokens")
    args = p.parse_args(list(argv) if argv is not None else None)
    if args.speed:
        model = synthetic_model()
        g = torch.Generator().manual_seed(0)
        prefix, suffix = torch.randint(10, 4000, (1000,), generator=g).tolist(), torch.randint(10, 4000, (200,), generator=g).tolist()
        print(json.dumps({k: round(v, 1) for k, v in pass_times_ms(model, prefix, suffix).items()}))
        return 0
    if args.toy_trained:
        from lab.families.toy import code_texts, held_out_prompts, train_toy_model

        model, tok, held, losses = train_toy_model(code_texts(Path(__file__).resolve().parents[2] / "engine"), steps=args.toy_steps)
        print(json.dumps({"toy_loss_first_25": round(sum(losses[:25]) / 25, 3), "toy_loss_last_25": round(sum(losses[-25:]) / 25, 3)}))
        prompts = held_out_prompts(held, n=8, bos=tok.bos_id)
        for text in args.policies.split(","):
            report = measure_policy(model, CachePolicy.parse(text), prompts, args.max_tokens, args.block, args.per_pass)
            print(json.dumps({k: (round(v, 5) if isinstance(v, float) else v) for k, v in report.to_dict().items()}))
        return 0
    from lab.fixtures.family_checkpoints import CORPUS

    with tempfile.TemporaryDirectory() as tmp:
        path = args.model_dir
        if args.tiny:
            from lab.fixtures.family_checkpoints import make_tiny_checkpoint

            path = make_tiny_checkpoint(args.tiny, Path(tmp) / args.tiny, layers=4, hidden=128, heads=4).path
        if path is None:
            p.error("give MODEL_DIR or --tiny FAMILY")
        model, tok, _ = load_family_model(path, device=args.device)
        bos = [tok.bos_id] if tok.bos_id is not None else []
        prompts = [(bos + tok.encode(t[: len(t) // 2]), tok.encode(t[len(t) // 2 + 8 :])) for t in CORPUS]
        for text in args.policies.split(","):
            report = measure_policy(model, CachePolicy.parse(text), prompts, args.max_tokens, args.block, args.per_pass)
            print(json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in report.to_dict().items()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
