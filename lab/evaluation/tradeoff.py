"""Exact match against tokens per forward pass: the commit rule's trade-off, on the dev set.

    python -m lab.evaluation.tradeoff [--model DIR] [--limit 360] \\
        [--json docs/measurements/tradeoff.json] [--plot docs/img/tradeoff.png]

Every threshold of `--thresholds` with text-order commits (`order` "contiguous", a sure run from
the first masked position) and with commits anywhere (every masked position that sure),
on the same dev-set single-line items (lab/bench_data/dev_lines.jsonl, never the
held-out benchmark), other settings at the engine's defaults. Tokens per forward pass
count the context-encoding pass too, as `python -m lab bench` does. The table says which
setting is the best exact match and which settings stay within one point of it.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from lab.evaluation.items import DEV_FILE, load_items
from lab.evaluation.sweep import measure

THRESHOLDS = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95)


def run(eng, items: list[dict], thresholds: tuple[float, ...]) -> list[dict]:
    rows = []
    for order, setting in (("text order", "contiguous"), ("anywhere", "confidence")):
        for threshold in thresholds:
            row = {"order": order, "confidence_threshold": threshold, **measure(eng, items, order=setting, confidence_threshold=threshold)}
            rows.append(row)
            print(f"{order:>10} threshold {threshold:.2f}: EM {row['exact_match']:5.1f}%  ES {row['edit_similarity']:5.1f}  "
                  f"TPF {row['tpf']:.2f}  p50 {row['p50_ms']:7.1f} ms", flush=True)
    return rows


def markdown(report: dict) -> str:
    best = max(r["exact_match"] for r in report["rows"])
    lines = [f"Model {report['model']}, {report['items']} dev-set single-line items. Best exact match {best}%; "
             "rows marked ✓ are within one point of it.", "",
             "| commits | threshold | exact match | edit similarity | tokens/pass | p50 ms | within 1 pt |",
             "| --- | ---: | ---: | ---: | ---: | ---: | :---: |"]
    for r in report["rows"]:
        ok = "✓" if r["exact_match"] >= best - 1.0 else ""
        lines.append(f"| {r['order']} | {r['confidence_threshold']} | {r['exact_match']}% | {r['edit_similarity']} | {r['tpf']} | {r['p50_ms']} | {ok} |")
    return "\n".join(lines)


def plot(report: dict, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for order, marker in (("text order", "o"), ("anywhere", "s")):
        rows = [r for r in report["rows"] if r["order"] == order]
        ax.plot([r["tpf"] for r in rows], [r["exact_match"] for r in rows], marker=marker, label=f"commits in {order}")
        for r in rows:
            ax.annotate(f"{r['confidence_threshold']}", (r["tpf"], r["exact_match"]), textcoords="offset points", xytext=(4, 4), fontsize=8)
    ax.axvline(1.5, color="grey", linestyle=":", label="1.5 tokens/pass")
    ax.set_xlabel("tokens per forward pass")
    ax.set_ylabel("exact match (%)")
    ax.set_title(f"dev set, {report['items']} single-line middles (labels: threshold)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)


def main(argv: list[str] | None = None) -> int:
    import engine

    p = argparse.ArgumentParser(prog="python -m lab.evaluation.tradeoff", description=__doc__.splitlines()[0])
    p.add_argument("--model", type=Path, default=None)
    p.add_argument("--limit", type=int, default=360, help="first N dev items (the file holds 360)")
    p.add_argument("--thresholds", default=",".join(map(str, THRESHOLDS)))
    p.add_argument("--json", type=Path, default=None)
    p.add_argument("--plot", type=Path, default=None)
    p.add_argument("--markdown", type=Path, default=None, help="print an earlier run's JSON as a table and exit")
    args = p.parse_args(argv)
    if args.markdown:
        print(markdown(json.loads(args.markdown.read_text())))
        return 0
    thresholds = tuple(float(t) for t in args.thresholds.split(","))
    eng = engine.load(args.model)
    items = load_items(args.limit, DEV_FILE)
    report = {"model": eng.model_name, "items": len(items), "rows": run(eng, items, thresholds)}
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    if args.plot:
        plot(report, args.plot)
    print(markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
