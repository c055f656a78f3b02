#!/usr/bin/env python
"""Check and time engine.quant's Triton kernels: one command, one results JSON.

On a CUDA GPU (target: finishes in < 8 minutes on an H200):
    python scripts/gpu_quant_bench.py --out gpu_quant_results.json
CPU twin (Triton interpreter, small shapes, correctness only; run by the tests):
    python scripts/gpu_quant_bench.py --interpret --small --out /tmp/quant_twin.json

For every kernel and shape it records the largest error against the torch reference
(relative to sum |x w|, the natural scale of a dot product) and a pass/fail against a
bound for the dtype. On a GPU it also records the kernel time, torch's bf16 matmul (or
cat + SDPA for attention) on the same shape, and the memory-bandwidth floor of the
shape: bytes the kernel must move / HBM bandwidth (--hbm-tbs, H200 ~4.8 TB/s).
It finishes with a tiny InfillTransformer quantized to int8/int4: logits through the
Triton kernels vs the torch path, and (GPU) canvas-pass times.
Exit status 0 only if every check passed.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    p.add_argument("--interpret", action="store_true", help="run kernels in the Triton interpreter on CPU (sets TRITON_INTERPRET=1)")
    p.add_argument("--small", action="store_true", help="small odd shapes (for the interpreter)")
    p.add_argument("--out", type=Path, default=Path("gpu_quant_results.json"))
    p.add_argument("--hbm-tbs", type=float, default=4.8, help="HBM bandwidth in TB/s for the floor (H200: 4.8)")
    p.add_argument("--budget-s", type=float, default=420.0, help="stop timing new cases after this many seconds")
    p.add_argument("--time-cpu", action="store_true", help="with --interpret: run the timing code too, with a CPU clock (exercises it; figures meaningless)")
    return p.parse_args(argv)


ARGS = parse_args(sys.argv[1:])
if ARGS.interpret:
    os.environ["TRITON_INTERPRET"] = "1"  # must precede the first import of triton
    os.environ["INFILL_QUANT_KERNEL"] = "triton"  # route CPU tensors to the kernels too
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import triton  # noqa: E402

from engine.model import InfillTransformer, ModelConfig  # noqa: E402
from engine.quant import formats, quantize_model  # noqa: E402
from lab.quant.attention import canvas_attention_ref  # noqa: E402
from lab.quant.triton_attention import canvas_attention  # noqa: E402
from engine.quant.triton_kernels import MatmulConfig, default_config, int4_matmul, int8_matmul  # noqa: E402

START = time.perf_counter()
DEVICE = torch.device("cpu" if ARGS.interpret else "cuda")
TIMING = not ARGS.interpret or ARGS.time_cpu
# Bound on |kernel - reference| / sum_k |x_k w_k| per activation dtype: bf16 rounds the
# output and the activations' partial products to 8 bits, fp16 to 11, fp32 is IEEE.
RTOL = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}
ATTN_ATOL = {torch.float32: 1e-5, torch.float16: 1e-2, torch.bfloat16: 4e-2}


def elapsed() -> float:
    return time.perf_counter() - START


def bench_ms(fn: Callable[[], Any]) -> float:
    if DEVICE.type == "cuda":
        # do_bench flushes L2 between runs, so small weights are not timed from cache.
        return float(triton.testing.do_bench(fn, warmup=10, rep=50))
    fn()  # --interpret --time-cpu: only proves the timing code runs
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1e3


def floor_ms(nbytes: float) -> float:
    return nbytes / (ARGS.hbm_tbs * 1e12) * 1e3


def matmul_cases() -> list[tuple[int, int, int]]:
    if ARGS.small:
        return [(m, k, n) for m in (1, 5, 17) for (k, n) in ((70, 33), (96, 80), (256, 130))]
    # Default infill model (d 256, SwiGLU 688, vocab 8192), a 7B-class layer set, odd sizes.
    kn = [(256, 768), (688, 256), (256, 8192), (4096, 4096), (4096, 14336), (14336, 4096), (1000, 3000)]
    return [(m, k, n) for (k, n) in kn for m in (1, 16, 64)]


def dtypes() -> list[torch.dtype]:
    # The interpreter mis-converts bf16 (no numpy bf16), so the twin checks fp32/fp16.
    return [torch.float32, torch.float16] if ARGS.interpret else [torch.bfloat16, torch.float16]


def check_matmul(kind: str, M: int, K: int, N: int, dtype: torch.dtype, group: int = 64) -> dict[str, Any]:
    g = torch.Generator(device="cpu").manual_seed(M * 7919 + K * 31 + N)
    x = torch.randn(M, K, generator=g).to(DEVICE, dtype)
    w = torch.randn(N, K, generator=g) * 0.02 + 0.002
    if kind == "int8":
        q, s = (t.to(DEVICE) for t in formats.quantize_int8(w))
        run = lambda cfg=None: int8_matmul(x, q, s, cfg)  # noqa: E731
        torch_path = lambda: torch.nn.functional.linear(x, q.to(dtype)) * s.to(dtype)  # noqa: E731
        ref = formats.int8_linear_ref(x.float(), q, s)
        deq = formats.dequantize_int8(q, s)
        weight_bytes = q.numel() + s.numel() * 4
    else:
        p, sc, mn = (t.to(DEVICE) for t in formats.quantize_int4(w, group))
        run = lambda cfg=None: int4_matmul(x, p, sc, mn, group, cfg)  # noqa: E731
        codes = formats.unpack_int4(p)
        torch_path = lambda: formats.int4_linear_grouped(x, codes, sc, mn, group)  # noqa: E731
        ref = formats.int4_linear_ref(x.float(), p, sc, mn, group)
        deq = formats.dequantize_int4(p, sc, mn, group, K)
        weight_bytes = p.numel() + (sc.numel() + mn.numel()) * 2
    y = run()
    scale = (x.float().abs() @ deq.abs().T).clamp_min(1e-12)
    rel = float(((y.float() - ref).abs() / scale).max())
    cfg = default_config(M, N, K, DEVICE, None if kind == "int8" else group)
    rec: dict[str, Any] = {
        "kernel": f"{kind}_matmul", "M": M, "K": K, "N": N, "dtype": str(dtype).replace("torch.", ""),
        "group_size": group if kind == "int4" else None, "config": cfg.__dict__,
        "max_rel_err": rel, "bound": RTOL[dtype], "passed": bool(rel <= RTOL[dtype] and torch.isfinite(y).all()),
    }
    if TIMING and elapsed() < ARGS.budget_s:
        xb, wb = x.to(torch.bfloat16), deq.to(DEVICE, torch.bfloat16)
        io_bytes = (M * K + M * N) * x.element_size()
        rec["kernel_ms"] = bench_ms(run)
        rec["torch_bf16_ms"] = bench_ms(lambda: torch.nn.functional.linear(xb, wb))
        rec["torch_dequant_path_ms"] = bench_ms(torch_path)  # what the engine would do without triton
        rec["floor_ms"] = floor_ms(weight_bytes + io_bytes)
        rec["bf16_floor_ms"] = floor_ms(N * K * 2 + io_bytes)
        rec["speedup_vs_bf16"] = rec["torch_bf16_ms"] / rec["kernel_ms"]
        rec["fraction_of_floor"] = rec["floor_ms"] / rec["kernel_ms"]  # 1.0 = at HBM bandwidth
    return rec


def sweep(kind: str, M: int, K: int, N: int) -> list[dict[str, Any]]:
    """A few alternative launch configs on one shape, to judge the default heuristic."""
    x = torch.randn(M, K, device=DEVICE, dtype=torch.bfloat16 if DEVICE.type == "cuda" else torch.float32)
    w = torch.randn(N, K) * 0.02
    out = []
    for bn, bk, sk, warps in [(32, 128, 1, 4), (64, 128, 1, 4), (128, 64, 1, 4), (64, 64, 4, 4), (64, 128, 8, 4), (32, 64, 8, 2)][: 6 if DEVICE.type == "cuda" else 2]:
        if elapsed() > ARGS.budget_s:
            break
        cfg = MatmulConfig(block_m=16 if M <= 16 else 64, block_n=bn, block_k=bk, split_k=sk, num_warps=warps)
        if kind == "int8":
            q, s = (t.to(DEVICE) for t in formats.quantize_int8(w))
            ms = bench_ms(lambda: int8_matmul(x, q, s, cfg))
        else:
            p, sc, mn = (t.to(DEVICE) for t in formats.quantize_int4(w, 128))
            ms = bench_ms(lambda: int4_matmul(x, p, sc, mn, 128, cfg))
        out.append({"kernel": f"{kind}_matmul", "M": M, "K": K, "N": N, "config": cfg.__dict__, "kernel_ms": ms})
    return out


def attention_cases() -> list[tuple[int, int, int, int, int, int]]:
    # (B canvases, H heads, N canvas, S suffix, P prefix, D head dim)
    if ARGS.small:
        return [(1, 2, 5, 0, 7, 32), (2, 2, 17, 9, 40, 24), (3, 1, 16, 33, 70, 16)]
    return [(1, 8, 16, 256, 1024, 32), (4, 8, 64, 256, 1024, 32), (1, 32, 16, 512, 4096, 128), (4, 32, 64, 512, 4096, 128)]


def check_attention(B: int, H: int, N: int, S: int, P: int, D: int, dtype: torch.dtype) -> dict[str, Any]:
    g = torch.Generator(device="cpu").manual_seed(B * 131 + N * 17 + P)
    rnd = lambda *shape: (torch.randn(*shape, generator=g) * 2).to(DEVICE, dtype)  # noqa: E731
    q, k, v = (rnd(B, N, H, D).transpose(1, 2) for _ in range(3))  # the model's layout
    sk, sv, pk, pv = rnd(1, H, S, D), rnd(1, H, S, D), rnd(1, H, P, D), rnd(1, H, P, D)
    out = canvas_attention(q, sk, sv, pk, pv, k, v)
    ref = canvas_attention_ref(*(t.float() for t in (q, sk, sv, pk, pv, k, v)))
    err = float((out.float() - ref).abs().max())
    rec: dict[str, Any] = {
        "kernel": "canvas_attention", "B": B, "H": H, "N": N, "S": S, "P": P, "D": D, "dtype": str(dtype).replace("torch.", ""),
        "max_abs_err": err, "bound": ATTN_ATOL[dtype], "passed": bool(err <= ATTN_ATOL[dtype]),
    }
    if TIMING and elapsed() < ARGS.budget_s:
        el = q.element_size()
        rec["kernel_ms"] = bench_ms(lambda: canvas_attention(q, sk, sv, pk, pv, k, v))
        rec["torch_cat_sdpa_ms"] = bench_ms(lambda: canvas_attention_ref(q, sk, sv, pk, pv, k, v))
        rec["floor_ms"] = floor_ms((2 * H * (S + P) * D + 4 * B * H * N * D) * el)  # context once + canvas q/k/v/out
        rec["speedup_vs_torch"] = rec["torch_cat_sdpa_ms"] / rec["kernel_ms"]
        rec["fraction_of_floor"] = rec["floor_ms"] / rec["kernel_ms"]
    return rec


def check_model() -> list[dict[str, Any]]:
    """Tiny model end to end: canvas logits through the kernels vs through the torch path."""
    cfg = ModelConfig(vocab_size=512, d_model=64, n_layers=2, n_heads=4, ffn_hidden=176, max_position=512) if ARGS.small else ModelConfig()
    out = []
    for bits in (8, 4):
        torch.manual_seed(0)
        model = InfillTransformer(cfg).eval()
        ref_fp = InfillTransformer(cfg).eval()
        ref_fp.load_state_dict(model.state_dict())
        quantize_model(model, bits=bits)
        g = torch.Generator().manual_seed(bits)
        prefix = torch.randint(0, cfg.vocab_size, (40 if ARGS.small else 1000,), generator=g).tolist()
        suffix = torch.randint(0, cfg.vocab_size, (9 if ARGS.small else 200,), generator=g).tolist()
        canvas = torch.randint(0, cfg.vocab_size, (1, 16), generator=g)
        os.environ["INFILL_QUANT_KERNEL"] = "torch"
        cpu_logits = model.canvas_logits(model.encode_context(prefix, suffix), canvas)
        fp_logits = ref_fp.canvas_logits(ref_fp.encode_context(prefix, suffix), canvas)
        os.environ["INFILL_QUANT_KERNEL"] = "triton" if ARGS.interpret else ""
        model.to(DEVICE)
        cache = model.encode_context(prefix, suffix)
        dev_canvas = canvas.to(DEVICE)
        logits = model.canvas_logits(cache, dev_canvas).cpu()
        rel = float((logits - cpu_logits).abs().max() / cpu_logits.abs().max())
        rec: dict[str, Any] = {
            "check": f"model_int{bits}_kernels_vs_torch_path", "d_model": cfg.d_model, "n_layers": cfg.n_layers,
            "max_rel_err": rel, "bound": 1e-4, "passed": rel <= 1e-4,
            "quantized_vs_float_rel_err": float((cpu_logits - fp_logits).abs().max() / fp_logits.abs().max()),
        }
        if TIMING and elapsed() < ARGS.budget_s:
            rec["canvas_pass_ms"] = bench_ms(lambda: model.canvas_logits(cache, dev_canvas))
            if DEVICE.type == "cuda":
                model.to(torch.bfloat16)  # codes stay integer; embedding, scales, activations bf16
                bcache = model.encode_context(prefix, suffix)
                rec["bf16_canvas_pass_ms"] = bench_ms(lambda: model.canvas_logits(bcache, dev_canvas))
            for dtype in (torch.float32, torch.bfloat16):
                fp = ref_fp.to(DEVICE, dtype)
                fcache = fp.encode_context(prefix, suffix)
                rec[f"float_{str(dtype).replace('torch.', '')}_canvas_pass_ms"] = bench_ms(lambda: fp.canvas_logits(fcache, dev_canvas))
        out.append(rec)
    return out


def main() -> int:
    if not ARGS.interpret and not torch.cuda.is_available():
        print("gpu_quant_bench: no CUDA device; use --interpret --small for the CPU twin", file=sys.stderr)
        return 2
    results: dict[str, Any] = {
        "device": "cpu (triton interpreter)" if ARGS.interpret else torch.cuda.get_device_name(),
        "torch": torch.__version__, "triton": triton.__version__, "python": platform.python_version(),
        "interpret": ARGS.interpret, "small": ARGS.small, "timed": TIMING, "hbm_tbs": ARGS.hbm_tbs, "cases": [], "sweeps": [],
    }
    cases: list[dict[str, Any]] = results["cases"]
    for dtype in dtypes():
        for M, K, N in matmul_cases():
            cases.append(check_matmul("int8", M, K, N, dtype))
            for group in ((32, 128) if ARGS.small else (64,)):
                cases.append(check_matmul("int4", M, K, N, dtype, group))
        for shape in attention_cases():
            cases.append(check_attention(*shape, dtype))
        print(f"[{elapsed():6.1f}s] {dtype}: {sum(c['passed'] for c in cases)}/{len(cases)} passed so far", flush=True)
    cases.extend(check_model())
    if TIMING:
        for kind in ("int8", "int4"):
            results["sweeps"].extend(sweep(kind, *((16, 256, 192) if ARGS.small else (16, 4096, 14336))))
    results["all_passed"] = all(c["passed"] for c in cases)
    results["elapsed_s"] = round(elapsed(), 1)
    ARGS.out.parent.mkdir(parents=True, exist_ok=True)
    ARGS.out.write_text(json.dumps(results, indent=1) + "\n")
    failed = [c for c in cases if not c["passed"]]
    for c in failed[:10]:
        print("FAILED", json.dumps(c), file=sys.stderr)
    print(f"{len(cases) - len(failed)} passed, {len(failed)} failed; wrote {ARGS.out} in {elapsed():.1f}s")
    return 0 if not failed else 1


if __name__ == "__main__":
    raise SystemExit(main())
