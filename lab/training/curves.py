"""Learning curves: validation loss against training compute, several runs in one plot.

    python -m lab.training.curves runs/curve_d256 runs/curve_d384 runs/curve_d512 \\
        --out docs/img/learning_curves.png --json docs/measurements/learning_curves.json

Reads each run's log.jsonl (validation lines carry the run clock's seconds: CPU time per
thread by default on CPU, see `python -m lab train --clock`) and draws masked-position CE and
next-token CE against hours, with the parameters in each label. The JSON summary gives,
per run, the loss at the last common time of all runs and the slope over the last third
of that time (loss per hour), which is what a choice of size is made on.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def read_curve(run: Path) -> dict:
    """{'name', 'parameters', 'points': [(hours, masked_ce, ar_ce, tokens)]} from a run's log."""
    points = []
    for line in (run / "log.jsonl").read_text().splitlines():
        entry = json.loads(line).get("validation")
        if entry and "elapsed" in entry:
            hours = entry["elapsed"] / 3600
            # A resumed run repeats the time since its last checkpoint: what the killed
            # process logged after that checkpoint is superseded by the resumed one.
            while points and points[-1][0] >= hours:
                points.pop()
            points.append((hours, entry["masked_ce"], entry["ar_loss"], entry["tokens"]))
    config = json.loads((run / "model" / "config.json").read_text())["model"] if (run / "model" / "config.json").exists() else {}
    d, layers = config.get("d_model"), config.get("n_layers")
    vocab, ffn = config.get("vocab_size", 0), config.get("ffn_hidden", 0)
    params = (vocab * d + layers * (4 * d * d + 3 * d * ffn + 2 * d) + d) if d else None
    return {"name": run.name, "parameters": params, "shape": f"d{d} x {layers} layers" if d else "?", "points": points}


def value_at(points: list[tuple], hours: float, column: int) -> float:
    """Linear interpolation of a column at `hours` (points sorted by hours)."""
    for (h0, *a), (h1, *b) in zip(points, points[1:]):
        if h0 <= hours <= h1:
            f = 0 if h1 == h0 else (hours - h0) / (h1 - h0)
            return a[column - 1] + f * (b[column - 1] - a[column - 1])
    return points[-1][column]


def summarize(curves: list[dict]) -> dict:
    common = min(c["points"][-1][0] for c in curves)
    out = {"common_hours": round(common, 3), "runs": []}
    for c in curves:
        pts = c["points"]
        late = common * 2 / 3
        masked_now, masked_late = value_at(pts, common, 1), value_at(pts, late, 1)
        out["runs"].append({
            "run": c["name"], "shape": c["shape"], "parameters": c["parameters"],
            "masked_ce_at_common": round(masked_now, 4), "ar_ce_at_common": round(value_at(pts, common, 2), 4),
            "masked_ce_slope_per_hour": round((masked_now - masked_late) / max(common - late, 1e-9), 4),
            "tokens_at_end": pts[-1][3], "hours_at_end": round(pts[-1][0], 3),
        })
    return out


def plot(curves: list[dict], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for c in curves:
        hours = [p[0] for p in c["points"]]
        label = f"{c['shape']} ({c['parameters'] / 1e6:.1f}M)" if c["parameters"] else c["name"]
        axes[0].plot(hours, [p[1] for p in c["points"]], label=label)
        axes[1].plot(hours, [p[2] for p in c["points"]], label=label)
    for ax, title in zip(axes, ("masked-position CE (canvas)", "next-token CE (prefix)")):
        ax.set_xlabel("training hours (CPU time per thread, one core)")
        ax.set_ylabel("validation cross-entropy")
        ax.set_title(title)
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lab.training.curves", description=__doc__.splitlines()[0])
    p.add_argument("runs", nargs="+", type=Path)
    p.add_argument("--out", type=Path, default=Path("docs/img/learning_curves.png"))
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args(argv)
    curves = [read_curve(r) for r in args.runs]
    empty = [c["name"] for c in curves if len(c["points"]) < 2]
    if empty:
        print(f"curves: too few timed validation points in {', '.join(empty)}", file=sys.stderr)
        return 2
    summary = summarize(curves)
    plot(curves, args.out)
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2) + "\n")
    for r in summary["runs"]:
        print(f"{r['run']:>14} {r['shape']:>16}: masked CE {r['masked_ce_at_common']:.3f} at {summary['common_hours']:.2f} h "
              f"(slope {r['masked_ce_slope_per_hour']:+.3f}/h), next-token CE {r['ar_ce_at_common']:.3f}")
    print(f"curves: wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
