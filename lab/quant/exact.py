"""Infill exact match, float vs int8 vs int4: what quantization costs in answers.

    python -m lab.quant.exact [--model-dir DIR] [--limit N] [--group-size 64] [--json]

The float directory is quantized with `infill quantize` into a temporary directory per
bit width, each variant is loaded through engine.load (exactly what users run), and all
run the held-out single-line items of `python -m lab bench` (lab/bench_data/) with the
default sampler settings. Reported per variant: exact match, agreement with the float
model's middle (the direct measure of what quantization changed), and ms per infill.
Items run variant after variant, so machine noise hits all alike.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any, Optional

from engine.quant.quantized_dir import quantize_dir
from engine.types import InfillError


def evaluate(model_dir: Path, limit: Optional[int], group_size: int = 64, device: str = "cpu") -> dict[str, Any]:
    import engine
    from lab.evaluation.items import exact_match, load_items

    items = load_items(limit)
    with tempfile.TemporaryDirectory() as tmp:
        dirs = {"float": model_dir}
        for bits in (8, 4):
            dirs[f"int{bits}"] = Path(tmp) / f"int{bits}"
            quantize_dir(model_dir, dirs[f"int{bits}"], bits, group_size)
        engines = {name: engine.load(d, device=device) for name, d in dirs.items()}
        middles: dict[str, list[str]] = {name: [] for name in engines}
        ms: dict[str, list[float]] = {name: [] for name in engines}
        for item in items:
            for name, eng in engines.items():
                out = eng.infill(item["prefix"], item["suffix"], language=item.get("language"))
                middles[name].append(out.middle)
                ms[name].append(out.ms)
    n = len(items)
    rows = []
    for name in engines:
        exact = sum(exact_match(m, it["middle"]) for m, it in zip(middles[name], items))
        same = sum(a == b for a, b in zip(middles[name], middles["float"]))
        rows.append({
            "variant": name, "items": n, "exact": exact, "exact_rate": exact / n if n else 0.0,
            "same_as_float": same, "same_rate": same / n if n else 0.0, "median_ms": statistics.median(ms[name]) if n else 0.0,
        })
    return {"model_dir": str(model_dir), "group_size": group_size, "rows": rows}


def format_table(result: dict[str, Any]) -> str:
    lines = ["| variant | exact match | same middle as float | median ms/infill |", "|---|---|---|---|"]
    for r in result["rows"]:
        lines.append(
            f"| {r['variant']} | {r['exact']}/{r['items']} ({r['exact_rate']:.1%}) | {r['same_as_float']}/{r['items']} "
            f"({r['same_rate']:.1%}) | {r['median_ms']:.1f} |"
        )
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lab.quant.exact", description=__doc__.splitlines()[0])
    p.add_argument("--model-dir", type=Path, help="float infill model directory (default: the embedded model)")
    p.add_argument("--limit", type=int, help="first N items only")
    p.add_argument("--group-size", type=int, default=64, choices=(32, 64, 128))
    p.add_argument("--device", default="cpu")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    try:
        import engine

        result = evaluate(args.model_dir or engine.DEFAULT_MODEL_DIR, args.limit, args.group_size, args.device)
    except InfillError as exc:
        print(f"eval_exact: error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(result, indent=1) if args.json else format_table(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
