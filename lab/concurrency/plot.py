"""The sweep's picture: tokens/s per user (and in total) against concurrency, per mode."""
from __future__ import annotations

from pathlib import Path
from typing import Any

STYLE = {  # mode -> (label, colour, marker)
    "batched": ("diffusion, batched", "#1f77b4", "o"),
    "sequential": ("diffusion, one at a time", "#7f7f7f", "s"),
    "autoregressive": ("autoregressive, batched (same weights)", "#d62728", "^"),
    "autoregressive+drafts": ("autoregressive + copy drafts, batched (same weights, same drafts)", "#ff7f0e", "v"),
}


def plot(report: dict[str, Any], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    fig, (per_user, total) = plt.subplots(1, 2, figsize=(11, 4.2))
    for mode, (label, colour, marker) in STYLE.items():
        levels = sorted((l for l in report["levels"] if l["mode"] == mode), key=lambda l: l["concurrency"])
        if not levels:
            continue
        xs = [l["concurrency"] for l in levels]
        per_user.plot(xs, [l["tokens_per_s_per_user"] for l in levels], marker=marker, color=colour, label=label)
        total.plot(xs, [l["tokens_per_s"] for l in levels], marker=marker, color=colour, label=label)
    per_user.set_yscale("log")  # it falls by orders of magnitude as users share the machine
    for ax, title in ((per_user, "tokens/s per user"), (total, "total tokens/s")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("concurrent requests")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
    crossing = report.get("crossover_per_user", {}).get("at")
    if crossing:
        per_user.axvline(crossing, color="#d62728", linestyle=":", alpha=0.7)
    per_user.legend(fontsize=8)
    fig.suptitle(f"{report.get('model')} on {report.get('device')} ({report.get('threads')} thread(s)): {report.get('crossover_per_user', {}).get('text', '')}", fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
