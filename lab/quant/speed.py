"""CPU figures for docs/quantization.md: file sizes and canvas-pass time, float vs quantized.

    python -m lab.quant.speed [--model-dir DIR] [--threads 2] [--repeats 30] [--json]

Without --model-dir a random model of the default ModelConfig is written to a temporary
directory (sizes and speed do not depend on the weights' values). Each variant is made
the way users make it: `infill quantize` (engine.quant.quantized_dir) for int8/int4, and
engine.quant.bnb for the bitsandbytes modes. Timed: one canvas pass
(model.canvas_logits) over a cached context of --prefix/--suffix tokens, for canvases
of 16 and 64 tokens, --repeats interleaved rounds after a warm-up (minimum reported).
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Optional

import torch

from engine.model import InfillTransformer, ModelConfig
from engine.modeldir import WEIGHTS_FILE, load_infill_model, read_config, save_model_dir
from engine.quant.quantized_dir import quantize_dir


def _random_model_dir(root: Path) -> Path:
    torch.manual_seed(0)
    model = InfillTransformer(ModelConfig())
    tok = root / "tokenizer.json"
    tok.write_text("{}")  # not read by this benchmark
    save_model_dir(model, tok, root / "fp32")
    return root / "fp32"


def _bnb_variant(model_dir: Path, mode: str) -> Optional[InfillTransformer]:
    try:
        from engine.quant.bnb import quantize_linears
    except ImportError:
        return None
    model = load_infill_model(model_dir, read_config(model_dir))
    try:
        quantize_linears(model, mode)  # type: ignore[arg-type]
    except ImportError:
        return None
    return model


@torch.no_grad()
def run(model_dir: Optional[Path], threads: int, repeats: int, prefix_len: int, suffix_len: int) -> dict[str, Any]:
    torch.set_num_threads(threads)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        src = model_dir or _random_model_dir(root)
        dirs = {"float": src}
        for bits in (8, 4):
            dirs[f"int{bits}"] = root / f"int{bits}"
            quantize_dir(src, dirs[f"int{bits}"], bits)
        models = {name: load_infill_model(d, read_config(d)) for name, d in dirs.items()}
        sizes = {name: (d / WEIGHTS_FILE).stat().st_size for name, d in dirs.items()}
        for mode in ("int8", "nf4"):
            m = _bnb_variant(src, mode)
            if m is not None:
                models[f"bnb-{mode}"] = m
        cfg = models["float"].cfg
        g = torch.Generator().manual_seed(0)
        prefix = torch.randint(0, cfg.vocab_size, (prefix_len,), generator=g).tolist()
        suffix = torch.randint(0, cfg.vocab_size, (suffix_len,), generator=g).tolist()
        # Variants are timed in interleaved rounds, so load from other processes on a
        # shared machine hits all of them alike; the table reports the minimum (the
        # least disturbed run) and the JSON also keeps the median.
        calls: dict[tuple[str, int], Callable[[], Any]] = {}
        for name, model in models.items():
            model.eval()
            cache = model.encode_context(prefix, suffix)
            for n in (16, 64):
                canvas = torch.randint(0, cfg.vocab_size, (1, n), generator=g)
                calls[(name, n)] = (lambda m=model, c=cache, x=canvas: m.canvas_logits(c, x))
        times: dict[tuple[str, int], list[float]] = {key: [] for key in calls}
        for fn in calls.values():
            fn()  # warm-up
        for _ in range(repeats):
            for key, fn in calls.items():
                t = time.perf_counter()
                fn()
                times[key].append((time.perf_counter() - t) * 1e3)
        rows: list[dict[str, Any]] = []
        for name in models:
            row: dict[str, Any] = {"variant": name, "weights_mb": round(sizes[name] / 1e6, 2) if name in sizes else None}
            for n in (16, 64):
                row[f"canvas{n}_ms"] = round(min(times[(name, n)]), 2)
                row[f"canvas{n}_median_ms"] = round(statistics.median(times[(name, n)]), 2)
            rows.append(row)
    return {
        "model": cfg.to_dict(), "threads": threads, "repeats": repeats, "prefix": prefix_len, "suffix": suffix_len,
        "torch": torch.__version__, "rows": rows,
    }


def format_table(result: dict[str, Any]) -> str:
    base = next(r for r in result["rows"] if r["variant"] == "float")
    lines = ["| variant | model.safetensors | canvas 16 tok (min) | vs float | canvas 64 tok (min) | vs float |", "|---|---|---|---|---|---|"]
    for r in result["rows"]:
        size = f"{r['weights_mb']:.2f} MB" if r["weights_mb"] is not None else "(in memory)"
        lines.append(
            f"| {r['variant']} | {size} | {r['canvas16_ms']:.2f} ms | {r['canvas16_ms'] / base['canvas16_ms']:.2f}x "
            f"| {r['canvas64_ms']:.2f} ms | {r['canvas64_ms'] / base['canvas64_ms']:.2f}x |"
        )
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lab.quant.speed", description=__doc__.splitlines()[0])
    p.add_argument("--model-dir", type=Path, help="float model directory (default: a random default-size model)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=30)
    p.add_argument("--prefix", type=int, default=1024)
    p.add_argument("--suffix", type=int, default=256)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    result = run(args.model_dir, args.threads, args.repeats, args.prefix, args.suffix)
    print(json.dumps(result, indent=1) if args.json else format_table(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
