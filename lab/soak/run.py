"""Soak `infill lsp` and `infill serve` together for a given time, then print the figures.

    python -m lab.soak.run --seconds 3600 --out runs/soak          # the hour of docs/reliability.md
    python -m lab.soak.run --seconds 60 --out /tmp/soak            # what CI runs

Under load at the same time:
  * the language server (stdio, as editors start it): typing replayed one key every
    --key-ms into stretches of real files, an inline completion per key (a completion
    list every 25th), the request a key overtakes cancelled with $/cancelRequest;
  * the live server over real TCP: a typist (an edit and an infill per key, now and then
    a cancel); a client that connects, asks once and leaves, politely or by dropping the
    connection, every --reconnect-s; and every --slow-every-s a client that stops reading
    (tiny receive buffer, requests flooding in under the rate limit) until the server
    closes it, which must be with 4008 while the server's memory stays bounded.

Prints (and writes to OUT/soak.json) requests answered and unexpected errors per client,
latency p50/p99 (request to answer; cancelled requests excluded), both servers' RSS over
time, and writes OUT/soak.png: RSS and latency per minute (per 5 s in short runs).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import re
import signal
import sys
import time
from pathlib import Path
from typing import Any, Optional

from ..proc_stats import rss_mb
from .clients import AsyncLspClient, Recorder, live_typist, lsp_typist, reconnector, slow_reader

REPO = Path(__file__).resolve().parents[2]
TOKEN = "soak-token-not-a-secret-0001"
LSP_SETTINGS = {"debounceMs": 15, "maxTokens": 16}
SLOW_CLIENT_MIN_S = 45.0  # the server's keepalive (2 x 20 s) and a margin


def _typing_files() -> list[Path]:
    candidates = sorted((REPO / "engine").glob("*.py")) + sorted((REPO / "infill_lsp").glob("*.py"))
    return [path for path in candidates if path.stat().st_size > 2000][:6]


def percentile(values: list[float], fraction: float) -> Optional[float]:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[max(0, math.ceil(fraction * len(ordered)) - 1)], 1)


async def _start_live(model: Optional[str], out: Path, env: dict) -> tuple[asyncio.subprocess.Process, str]:
    argv = [sys.executable, "-m", "infill_lsp.cli", "serve", "--port", "0", "--token", TOKEN]
    argv += ["--model", model] if model else []
    log = open(out / "live-server.log", "wb")
    stdout = out / "live-server.out"
    process = await asyncio.create_subprocess_exec(*argv, stdout=open(stdout, "wb"), stderr=log, env=env)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        match = re.search(r"websocket:\s+(ws://\S+)", stdout.read_text())
        if match:
            return process, match.group(1)
        if process.returncode is not None:
            raise RuntimeError(f"infill serve exited: {(out / 'live-server.log').read_text()[-2000:]}")
        await asyncio.sleep(0.1)
    raise TimeoutError("infill serve did not start")


async def soak(seconds: float, out: Path, model: Optional[str], key_ms: float, reconnect_s: float,
               slow_every_s: float, sample_s: float) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), str(REPO)) if p)
    env.setdefault("OMP_NUM_THREADS", "1")
    files = _typing_files()

    live_process, url = await _start_live(model, out, env)
    lsp_argv = [sys.executable, "-m", "infill_lsp"] + (["--model", model] if model else [])
    lsp_process = await asyncio.create_subprocess_exec(
        *lsp_argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=open(out / "lsp-server.log", "wb"), env=env, limit=64 * 1024 * 1024)
    lsp = AsyncLspClient(lsp_process, LSP_SETTINGS)
    await lsp.initialize()

    recorder = Recorder()
    until = seconds
    samples: list[tuple[float, Optional[float], Optional[float]]] = []

    async def sample() -> None:
        while recorder.now() < until:
            samples.append((round(recorder.now(), 1), rss_mb(lsp_process.pid), rss_mb(live_process.pid)))
            await asyncio.sleep(sample_s)

    async def slow_clients() -> None:
        await asyncio.sleep(min(10.0, seconds / 6))
        # A slow client needs time to be noticed (a ping every 20 s, 20 s for its pong):
        # one started later would read again, and so answer pings, before the server could
        # tell; none is started with less than SLOW_CLIENT_MIN_S left.
        while until - recorder.now() >= SLOW_CLIENT_MIN_S:
            await slow_reader(url, TOKEN, recorder, out / "live-server.log", deadline_s=min(90.0, until - recorder.now()))
            await asyncio.sleep(min(slow_every_s, max(0.0, until - recorder.now())))

    tasks = [
        sample(),
        lsp_typist(lsp, files, recorder, until, key_ms / 1000, seed=1),
        live_typist(url, TOKEN, files, recorder, until, key_ms / 1000, seed=2),
        reconnector(url, TOKEN, recorder, until, reconnect_s, seed=3),
        slow_clients(),
    ]
    ended: dict[str, float] = {}

    async def timed(name: str, work: Any) -> Any:
        try:
            return await work
        finally:
            ended[name] = round(recorder.now(), 1)

    names = ("sampler", "lsp typist", "live typist", "reconnector", "slow clients")
    results = await asyncio.gather(*(timed(n, t) for n, t in zip(names, tasks)), return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            recorder.error("soak", f"a client failed: {type(result).__name__}: {result}")
    await asyncio.sleep(2)  # the last answers
    samples.append((round(recorder.now(), 1), rss_mb(lsp_process.pid), rss_mb(live_process.pid)))
    _, stats_answer = lsp.request("infill/stats", None)
    lsp_stats = (await asyncio.wait_for(stats_answer, 30)).get("result", {})
    lsp_code = await lsp.shutdown()
    live_process.send_signal(signal.SIGINT)
    try:
        live_code = await asyncio.wait_for(live_process.wait(), 60)
    except asyncio.TimeoutError:
        live_process.kill()
        live_code = None
    figures = _figures(recorder, samples, seconds, out, lsp_stats, lsp_code, live_code, lsp.log_messages)
    figures["clients_ended_s"] = ended
    return figures


def _figures(recorder: Recorder, samples: list, seconds: float, out: Path, lsp_stats: dict,
             lsp_code: Optional[int], live_code: Optional[int], lsp_logs: list[str]) -> dict[str, Any]:
    def channel(name: str) -> dict[str, Any]:
        values = [ms for _, ch, ms in recorder.latencies if ch == name]
        return {"answered": len(values), "p50_ms": percentile(values, 0.5), "p99_ms": percentile(values, 0.99)}

    logs = {name: (out / f"{name}-server.log").read_text(errors="replace") for name in ("lsp", "live")}
    unexpected = list(recorder.unexpected)
    for name, text in logs.items():
        for _ in range(text.count("Traceback")):
            unexpected.append((seconds, name, "a traceback in the server log"))
    internal = [line for line in lsp_logs if "internal error" in line]
    unexpected += [(seconds, "lsp", line) for line in internal]
    if lsp_stats.get("counts", {}).get("errors"):
        unexpected.append((seconds, "lsp", f"server counted {lsp_stats['counts']['errors']} errors"))
    if lsp_code != 0 or live_code not in (0, -2):
        unexpected.append((seconds, "exit", f"exit codes lsp {lsp_code}, live {live_code}"))
    warm = [s for s in samples if s[0] >= min(60.0, seconds * 0.2)] or samples
    figures = {
        "command": f"python -m lab.soak.run --seconds {seconds:g}",
        "seconds": seconds,
        "lsp": {**channel("lsp"), "requests": recorder.counts.get("lsp requests", 0),
                "cancelled": recorder.counts.get("lsp cancelled", 0)},
        "live": {**channel("live"), "requests": recorder.counts.get("live requests", 0),
                 "cancelled": recorder.counts.get("live cancelled", 0)},
        "reconnects": {**channel("reconnect"), "rounds": recorder.counts.get("reconnects", 0),
                       "dropped_without_close": recorder.counts.get("reconnect dropped", 0)},
        "slow_clients": {"started": recorder.counts.get("slow clients", 0),
                         "closed_4008": recorder.counts.get("slow clients closed 4008", 0),
                         "requests_sent": recorder.counts.get("slow requests", 0)},
        "unexpected_errors": len(unexpected),
        "unexpected_examples": [f"{t:.0f}s {ch}: {what}" for t, ch, what in unexpected[:10]],
        "rss_mb": {name: _memory([s[index] for s in warm if s[index] is not None])
                   for index, name in ((1, "lsp"), (2, "live"))},
        "lsp_server_counts": lsp_stats.get("counts", {}),
        "timeline": _timeline(recorder, seconds, window_s=60.0 if seconds >= 600 else 5.0),
        "rss_samples": samples,
    }
    return figures


def _timeline(recorder: Recorder, seconds: float, window_s: float) -> list[dict[str, Any]]:
    """Per window: answers and latency percentiles per client, unexpected errors."""
    rows = []
    for index in range(int(math.ceil(seconds / window_s))):
        low, high = index * window_s, (index + 1) * window_s
        row: dict[str, Any] = {"t": high}
        for name in ("lsp", "live"):
            values = [ms for t, ch, ms in recorder.latencies if ch == name and low <= t < high]
            row[name] = {"answered": len(values), "p50_ms": percentile(values, 0.5), "p99_ms": percentile(values, 0.99)}
        row["unexpected_errors"] = sum(1 for t, _, _ in recorder.unexpected if low <= t < high)
        rows.append(row)
    return rows


def _memory(values: list[float]) -> dict[str, Optional[float]]:
    """RSS after warm-up: first, last, max, and the growth between the mean of the first and
    the last tenth (robust to one sample's noise)."""
    if not values:
        return {"after_warmup": None, "final": None, "max": None, "growth": None}
    tenth = max(1, len(values) // 10)
    first, last = sum(values[:tenth]) / tenth, sum(values[-tenth:]) / tenth
    return {"after_warmup": round(values[0], 1), "final": round(values[-1], 1), "max": round(max(values), 1),
            "growth": round(last - first, 1)}


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.soak.run", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=3600)
    parser.add_argument("--out", type=Path, default=Path("runs/soak"))
    parser.add_argument("--model", default=None, help="model directory (default: the embedded model)")
    parser.add_argument("--key-ms", type=float, default=100, help="time between keystrokes")
    parser.add_argument("--reconnect-s", type=float, default=3)
    parser.add_argument("--slow-every-s", type=float, default=120, help="pause between clients that stop reading")
    parser.add_argument("--sample-s", type=float, default=None, help="RSS sampling period (default: seconds/120)")
    args = parser.parse_args(argv)
    sample_s = args.sample_s or max(1.0, args.seconds / 120)
    figures = asyncio.run(soak(args.seconds, args.out, args.model, args.key_ms, args.reconnect_s, args.slow_every_s,
                               sample_s))
    (args.out / "soak.json").write_text(json.dumps(figures, indent=2) + "\n")
    from .plot import plot

    plot(figures, args.out / "soak.png")
    printed = {k: v for k, v in figures.items() if k not in ("rss_samples", "timeline")}
    print(json.dumps(printed, indent=2))
    return 1 if figures["unexpected_errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
