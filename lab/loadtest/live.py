"""Bounded load test of `infill serve` on loopback.

    python -m lab.loadtest.live --seconds 60 --sessions 200 [--model DIR | --tiny-model]

Starts a server in a child process (or targets --url/--token), spreads --sessions sessions
over --connections connections, and has each session loop: type an edit, request an infill
at its own cursor, and now and then supersede its request with a newer one. It checks every
frame: no `error` frames, no frame for a session or request id the connection did not
expect, every result's range and version equal to the ones its session asked for (each
session's cursor is on a different line, so a result routed to the wrong session shows),
and exactly one terminal frame per request. It reports time to first step frame and to
result (p50/p99), throughput, and the server's resident memory over the run.
Exit status 0 only if there were results and no violations.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import secrets
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Optional

from websockets.asyncio.client import ClientConnection, connect

from infill_lsp.live.limits import Limits

TERMINAL = ("result", "cancelled", "error")


@dataclass
class Stats:
    first_frame_ms: list[float] = field(default_factory=list)
    result_ms: list[float] = field(default_factory=list)
    engine_ms: list[float] = field(default_factory=list)
    queue_ms: list[float] = field(default_factory=list)
    requests: int = 0
    results: int = 0
    cancelled: int = 0
    steps: int = 0
    violations: list[str] = field(default_factory=list)

    def violation(self, text: str) -> None:
        if len(self.violations) < 50:
            self.violations.append(text)
        else:
            self.violations[-1] = f"... and more; last: {text}"


@dataclass
class SessionState:
    name: str
    line: int  # the cursor line this session always requests at
    version: int = 0
    open: bool = False
    current: Optional[int] = None  # request id in flight
    sent_at: float = 0.0
    first_seen: bool = False
    finished: set[int] = field(default_factory=set)
    superseded: set[int] = field(default_factory=set)
    highest_queued: int = 0  # the newest request id the server has acknowledged
    done: Optional[asyncio.Event] = None


def percentile(values: list[float], q: float) -> Optional[float]:
    if not values:
        return None
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, int(round(q / 100.0 * (len(ordered) - 1)))))
    return round(ordered[index], 1)


def session_text(line: int) -> str:
    # Filler lines, then a function whose body the session completes at (line, 4), line >= 1.
    # (Not a module-level line indented by 4: no code may start there, and the engine
    # answers such a line at once, without a pass: grammars/python_check.over_indented.)
    return "".join(f"# filler {i}\n" for i in range(line - 1)) + "def body():\n    \n    return 0\n"


class PacedConnection:
    """A connection that keeps under the server's per-connection message rate, as a
    well-behaved client must: when sessions get answers quickly (a tiny model), they would
    otherwise send faster than the limit and be answered `rate_limited`."""

    def __init__(self, ws: ClientConnection, per_second: float) -> None:
        self._ws = ws
        self._interval = 1.0 / per_second
        self._next = 0.0
        self._lock = asyncio.Lock()

    async def send(self, message: str) -> None:
        async with self._lock:
            now = time.monotonic()
            if now < self._next:
                await asyncio.sleep(self._next - now)
            self._next = max(now, self._next) + self._interval
            await self._ws.send(message)


CLIENT_RATE_SHARE = 0.75  # of the server's messages_per_second


async def run_connection(url: str, token: str, names: list[tuple[str, int]], deadline: float, stats: Stats,
                         rng: random.Random, max_tokens: int) -> None:
    sessions = {name: SessionState(name, line, done=asyncio.Event()) for name, line in names}
    async with connect(url, max_size=1 << 22, compression=None) as raw_ws:
        ws = PacedConnection(raw_ws, Limits.messages_per_second * CLIENT_RATE_SHARE)
        reader = asyncio.create_task(read_frames(raw_ws, sessions, stats))
        for state in sessions.values():
            await ws.send(json.dumps({"type": "open", "session": state.name, "token": token, "protocol": 1,
                                      "text": session_text(state.line), "language": "python"}))
        await asyncio.gather(*(drive_session(ws, state, deadline, stats, rng, max_tokens)
                               for state in sessions.values()))
        for state in sessions.values():
            await ws.send(json.dumps({"type": "close", "session": state.name}))
        await asyncio.sleep(0.2)
        reader.cancel()


async def drive_session(ws: PacedConnection, state: SessionState, deadline: float, stats: Stats,
                        rng: random.Random, max_tokens: int) -> None:
    request_id = 0
    while time.monotonic() < deadline:
        if not state.open:
            await asyncio.sleep(0.01)
            continue
        # Type a character just after the cursor, then ask for an infill at the cursor.
        await ws.send(json.dumps({"type": "edit", "session": state.name, "edits": [{
            "range": {"start": {"line": state.line, "character": 4}, "end": {"line": state.line, "character": 4}},
            "text": "x"}]}))
        state.version += 1
        request_id += 1
        state.current, state.sent_at, state.first_seen = request_id, time.monotonic(), False
        assert state.done is not None
        state.done.clear()
        stats.requests += 1
        await ws.send(json.dumps(infill_message(state, request_id, max_tokens)))
        if rng.random() < 0.1:
            # Supersede it: once the newer one is queued, the older may only end with `cancelled`.
            state.superseded.add(request_id)
            request_id += 1
            state.current, state.sent_at, state.first_seen = request_id, time.monotonic(), False
            stats.requests += 1
            await ws.send(json.dumps(infill_message(state, request_id, max_tokens)))
        remaining = deadline - time.monotonic() + 120.0  # let the last requests finish
        try:
            await asyncio.wait_for(state.done.wait(), timeout=max(1.0, remaining))
        except asyncio.TimeoutError:
            stats.violation(f"{state.name}: request {request_id} never finished")
            return


def infill_message(state: SessionState, request_id: int, max_tokens: int) -> dict[str, Any]:
    cursor = {"line": state.line, "character": 4}
    return {"type": "infill", "session": state.name, "id": request_id, "range": {"start": cursor, "end": cursor},
            "settings": {"max_tokens": max_tokens}}


async def read_frames(ws: ClientConnection, sessions: dict[str, SessionState], stats: Stats) -> None:
    async for raw in ws:
        frame = json.loads(raw)
        kind = frame.get("type")
        if kind == "hello":
            continue
        if kind == "error":
            stats.violation(f"error frame: {frame}")
            continue
        state = sessions.get(frame.get("session", ""))
        if state is None:
            stats.violation(f"frame for a session this connection never opened: {frame.get('session')!r}")
            continue
        if kind == "opened":
            state.open = True
            continue
        if kind == "queued":
            state.highest_queued = max(state.highest_queued, int(frame.get("id", 0)))
            continue
        if kind in ("edited", "closed"):
            continue
        request_id = frame.get("id")
        if not isinstance(request_id, int) or request_id in state.finished or request_id > (state.current or 0):
            stats.violation(f"{state.name}: {kind} for unexpected request {request_id!r}")
            continue
        now = time.monotonic()
        if kind == "step":
            stats.steps += 1
            if request_id < state.highest_queued:
                stats.violation(f"{state.name}: step for request {request_id} after a newer one was queued")
            elif request_id == state.current and not state.first_seen:
                state.first_seen = True
                stats.first_frame_ms.append((now - state.sent_at) * 1000.0)
            continue
        state.finished.add(request_id)
        if kind == "cancelled":
            stats.cancelled += 1
            if request_id not in state.superseded:
                stats.violation(f"{state.name}: request {request_id} cancelled without being superseded")
        elif kind == "result":
            stats.results += 1
            expected = {"line": state.line, "character": 4}
            if request_id in state.superseded and state.highest_queued > request_id:
                # It may finish before the server reads its successor, never after acknowledging it.
                stats.violation(f"{state.name}: result for request {request_id} after a newer one was queued")
            if frame.get("range") != {"start": expected, "end": expected} or frame.get("version") != state.version:
                stats.violation(f"{state.name}: result range/version {frame.get('range')}/{frame.get('version')} "
                                f"is not this session's {expected}/{state.version}")
            stats.result_ms.append((now - state.sent_at) * 1000.0)
            stats.engine_ms.append(float(frame["stats"]["ms"]))
            stats.queue_ms.append(float(frame["queue_ms"]))
        if request_id == state.current and state.done is not None:
            state.done.set()


def rss_mib(pid: int) -> Optional[float]:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        return None
    return None


async def sample_memory(pid: int, samples: list[tuple[float, float]], start: float) -> None:
    while True:
        value = rss_mib(pid)
        if value is not None:
            samples.append((time.monotonic() - start, value))
        await asyncio.sleep(1.0)


async def start_server(model: Optional[str], token: str, max_batch: Optional[int] = None) -> tuple[asyncio.subprocess.Process, str]:
    # --token=VALUE: a generated token may start with "-", which argparse would take for an option.
    command = [sys.executable, "-m", "infill_lsp.live.server", "--host", "127.0.0.1", "--port", "0",
               f"--token={token}"]
    if model:
        command += ["--model", model]
    if max_batch:
        command += ["--max-batch", str(max_batch)]
    process = await asyncio.create_subprocess_exec(*command, stdout=asyncio.subprocess.PIPE)
    assert process.stdout is not None
    while True:
        line = (await asyncio.wait_for(process.stdout.readline(), timeout=180)).decode()
        if not line:
            raise RuntimeError(f"the server exited ({await process.wait()}) before listening")
        match = re.search(r"websocket:\s+(ws://\S+)", line)
        if match:
            return process, match.group(1)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m lab.loadtest.live", description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="how long sessions keep requesting")
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--connections", type=int, default=40, help="sessions are spread over this many sockets")
    parser.add_argument("--max-tokens", type=int, default=16, help="max_tokens of each request")
    parser.add_argument("--model", metavar="DIR", help="model directory for the server (default: embedded)")
    parser.add_argument("--tiny-model", action="store_true", help="serve a tiny random model (lab.fixtures.tiny_model)")
    parser.add_argument("--url", help="target a running server instead of starting one")
    parser.add_argument("--token", help="token of the server given with --url")
    parser.add_argument("--pid", type=int, help="pid of the server given with --url, to sample its memory")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-batch", type=int, default=None,
                        help="the started server's --max-batch (1 = one request at a time, as before batching)")
    parser.add_argument("--json", action="store_true", help="print only the JSON summary")
    return parser


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if args.sessions < 1 or args.connections < 1 or args.seconds <= 0:
        print("loadtest: --sessions, --connections and --seconds must be positive", file=sys.stderr)
        return 2
    if args.url and not args.token:
        print("loadtest: --url needs --token", file=sys.stderr)
        return 2
    summary = asyncio.run(_run(args))
    if args.json:
        print(json.dumps(summary))
    else:
        print(json.dumps(summary, indent=2))
    ok = summary["results"] > 0 and not summary["violations"]
    return 0 if ok else 1


async def _run(args: argparse.Namespace) -> dict[str, Any]:
    process = None
    model = args.model
    tmp = None
    if args.tiny_model and not model:
        from lab.fixtures.tiny_model import make_tiny_model_dir
        tmp = tempfile.TemporaryDirectory(prefix="infill-loadtest-")
        model = str(make_tiny_model_dir(os.path.join(tmp.name, "model")))
    if args.url:
        url, token, pid = args.url, args.token, args.pid
    else:
        token = secrets.token_urlsafe(16)
        process, url = await start_server(model, token, args.max_batch)
        pid = process.pid
    stats = Stats()
    memory: list[tuple[float, float]] = []
    rng = random.Random(args.seed)
    start = time.monotonic()
    sampler = asyncio.create_task(sample_memory(pid, memory, start)) if pid else None
    try:
        names = [(f"s{index}", 1 + index % 97) for index in range(args.sessions)]
        groups = [names[i::args.connections] for i in range(min(args.connections, args.sessions))]
        deadline = start + args.seconds
        outcomes = await asyncio.gather(*(run_connection(url, token, group, deadline, stats, rng, args.max_tokens)
                                          for group in groups), return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                stats.violation(f"connection failed: {type(outcome).__name__}: {outcome}")
        wall = time.monotonic() - start
    finally:
        if sampler:
            sampler.cancel()
        if process is not None:
            process.terminate()
            await process.wait()
        if tmp is not None:
            tmp.cleanup()
    return summarize(args, stats, memory, wall)


def summarize(args: argparse.Namespace, stats: Stats, memory: list[tuple[float, float]], wall: float) -> dict[str, Any]:
    # Memory after warm-up (the first fifth of the run: model pages, allocator pools) versus the end.
    warm = [value for t, value in memory if t >= args.seconds * 0.2] or [value for _, value in memory]
    return {
        "sessions": args.sessions, "connections": min(args.connections, args.sessions), "seconds": round(wall, 1),
        "max_batch": args.max_batch,
        "requests": stats.requests, "results": stats.results, "cancelled": stats.cancelled, "steps": stats.steps,
        "results_per_s": round(stats.results / wall, 2) if wall else 0.0,
        "first_frame_ms": {"p50": percentile(stats.first_frame_ms, 50), "p99": percentile(stats.first_frame_ms, 99)},
        "result_ms": {"p50": percentile(stats.result_ms, 50), "p99": percentile(stats.result_ms, 99)},
        "queue_ms": {"p50": percentile(stats.queue_ms, 50), "p99": percentile(stats.queue_ms, 99)},
        "engine_ms": {"p50": percentile(stats.engine_ms, 50), "p99": percentile(stats.engine_ms, 99)},
        "server_rss_mib": {
            "after_warmup": round(warm[0], 1) if warm else None,
            "max": round(max(warm), 1) if warm else None,
            "end": round(warm[-1], 1) if warm else None,
            "samples": len(memory),
        },
        "violations": stats.violations,
    }


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
