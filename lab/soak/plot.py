"""The soak's PNG: both servers' RSS over time, and latency p50/p99 per window."""
from __future__ import annotations

from pathlib import Path
from typing import Any


def plot(figures: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")  # no display: write the file only
    import matplotlib.pyplot as plt

    samples = figures["rss_samples"]
    timeline = figures["timeline"]
    minutes = figures["seconds"] >= 600
    scale, unit = (60.0, "min") if minutes else (1.0, "s")
    fig, (memory, latency) = plt.subplots(2, 1, figsize=(9, 6.5), sharex=True)
    for index, name in ((1, "language server (infill lsp)"), (2, "live server (infill serve)")):
        points = [(t / scale, s[index]) for s in samples if (t := s[0]) is not None and s[index] is not None]
        memory.plot([p[0] for p in points], [p[1] for p in points], label=name)
    memory.set_ylabel("RSS (MB)")
    memory.set_ylim(bottom=0)
    memory.legend(loc="lower right")
    memory.grid(alpha=0.3)
    memory.set_title(f"infill soak, {figures['seconds'] / scale:g} {unit}: "
                     f"{figures['lsp']['answered'] + figures['live']['answered']:,} answers, "
                     f"{figures['unexpected_errors']} unexpected errors, "
                     f"{figures['slow_clients']['closed_4008']} non-reading clients closed with 4008")
    for name, style in (("lsp", "-"), ("live", "--")):
        xs = [row["t"] / scale for row in timeline if row[name]["p50_ms"] is not None]
        for key, width in (("p50_ms", 1.5), ("p99_ms", 0.8)):
            ys = [row[name][key] for row in timeline if row[name]["p50_ms"] is not None]
            latency.plot(xs, ys, style, linewidth=width, label=f"{name} {key[:3]}")
    latency.set_yscale("log")
    latency.set_ylabel("request to answer (ms)")
    latency.set_xlabel(f"time ({unit})")
    latency.legend(loc="upper right", ncol=2)
    latency.grid(alpha=0.3, which="both")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
