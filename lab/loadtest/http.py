"""Bounded load test of the HTTP API: `infill serve` in-process and on 1, 2, ... Ray Serve replicas.

    python -m lab.loadtest.http --requests 200 --clients 20 --replicas 1 2 [--in-process]
                                [--model DIR | --tiny-model] [--max-tokens 16] [--json]
    python -m lab.loadtest.http --url http://127.0.0.1:8765 --token T    # a server already running

For each setup it starts `infill serve` as a child process on a free loopback port (with
`--replicas N`, or without it for --in-process), warms it up until every replica has
answered, then has --clients concurrent clients send --requests completions between them
(POST /v1/completions, cursors taken from examples/sample.py) and reports requests/s,
p50/p99 latency, errors, and how many answers each replica served (from the `infill`
key of the answers). Traffic goes to 127.0.0.1 only, and every run is bounded in count
and time. Exit status 0 only if every setup answered every request without an error.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import secrets
import signal
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import httpx

from lab.loadtest.live import percentile

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "examples" / "sample.py"
START_TIMEOUT_S = 600.0  # a local Ray instance plus replicas on a busy 2-core machine
REQUEST_TIMEOUT_S = 120.0
WARMUP_LIMIT = 200  # requests at most to see every replica answer once


def cursors(text: str) -> list[tuple[str, str]]:
    """(prefix, suffix) pairs: the cursor after the indentation of each non-blank line, the
    rest of the line being the middle the model is asked to write."""
    pairs, offset = [], 0
    for line in text.splitlines(keepends=True):
        body = line.strip()
        if body and not body.startswith("#"):
            at = offset + len(line) - len(line.lstrip())
            pairs.append((text[:at], text[offset + len(line.rstrip("\n")):]))
        offset += len(line)
    return pairs


@dataclass
class Run:
    latencies_ms: list[float] = field(default_factory=list)
    engine_ms: list[float] = field(default_factory=list)
    replicas: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    wall_s: float = 0.0


async def one_request(client: httpx.AsyncClient, body: dict[str, Any], run: Optional[Run]) -> Optional[str]:
    """POST one completion; records it in `run`; returns the replica that served it."""
    started = time.perf_counter()
    try:
        response = await client.post("/v1/completions", json=body)
    except httpx.HTTPError as error:
        if run is not None:
            run.errors[type(error).__name__] += 1
        return None
    elapsed = (time.perf_counter() - started) * 1000
    if response.status_code != 200:
        if run is not None:
            run.errors[f"HTTP {response.status_code}"] += 1
        return None
    figures = response.json().get("infill", {})
    replica = str(figures.get("replica"))
    if run is not None:
        run.latencies_ms.append(elapsed)
        run.engine_ms.append(float(figures.get("ms") or 0.0))
        run.replicas[replica] += 1
    return replica


async def drive(base_url: str, token: str, *, requests: int, clients: int, max_tokens: int,
                expect_replicas: int) -> Run:
    pairs = cursors(SAMPLE.read_text())
    bodies = [{"prompt": prefix, "suffix": suffix, "max_tokens": max_tokens, "infill": {"language": "python"}}
              for prefix, suffix in pairs]
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=base_url, headers={"Authorization": f"Bearer {token}"}, limits=limits,
                                 timeout=REQUEST_TIMEOUT_S, trust_env=False) as client:
        seen: set[str] = set()
        for index in range(WARMUP_LIMIT):  # first requests load lazily initialised parts of each replica
            replica = await one_request(client, bodies[index % len(bodies)], None)
            if replica:
                seen.add(replica)
            if len(seen) >= expect_replicas and index >= 2 * expect_replicas:
                break
        run = Run()
        counter = iter(range(requests))

        async def worker() -> None:
            for index in counter:  # shared: the clients take requests until all are sent
                await one_request(client, bodies[index % len(bodies)], run)

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(clients)))
        run.wall_s = time.perf_counter() - started
    return run


async def start_server(replicas: Optional[int], model: Optional[str], token: str) -> tuple[Any, str]:
    command = [sys.executable, "-m", "infill_lsp.live.server", "--host", "127.0.0.1", "--port", "0",
               f"--token={token}"]
    if replicas is not None:
        command += ["--replicas", str(replicas)]
    if model:
        command += ["--model", model]
    # A session of its own: stopping it (and a local Ray instance under it) never signals us.
    process = await asyncio.create_subprocess_exec(*command, stdout=asyncio.subprocess.PIPE, start_new_session=True)
    assert process.stdout is not None
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        line = (await asyncio.wait_for(process.stdout.readline(), timeout=max(1.0, deadline - time.monotonic()))).decode()
        if not line:
            raise RuntimeError(f"`infill serve` exited ({await process.wait()}) before listening")
        match = re.search(r"api:\s+(http://\S+)/v1", line)
        if match:
            return process, match.group(1)


async def stop_server(process: Any) -> None:
    if process.returncode is None:
        process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), timeout=120)
        except asyncio.TimeoutError:
            os.killpg(process.pid, signal.SIGKILL)
            await process.wait()


def summarize(label: str, run: Run, requests: int, clients: int) -> dict[str, Any]:
    answered = len(run.latencies_ms)
    return {
        "setup": label, "requests": requests, "clients": clients, "answered": answered,
        "errors": sum(run.errors.values()), "error_kinds": dict(run.errors),
        "requests_per_s": round(answered / run.wall_s, 2) if run.wall_s else 0.0,
        "latency_ms": {"p50": percentile(run.latencies_ms, 50), "p99": percentile(run.latencies_ms, 99)},
        "engine_ms": {"p50": percentile(run.engine_ms, 50), "p99": percentile(run.engine_ms, 99)},
        "replicas": dict(run.replicas), "wall_s": round(run.wall_s, 2),
    }


async def _run(args: argparse.Namespace) -> list[dict[str, Any]]:
    if args.url:
        run = await drive(args.url.rstrip("/"), args.token, requests=args.requests, clients=args.clients,
                          max_tokens=args.max_tokens, expect_replicas=1)
        return [summarize(args.url, run, args.requests, args.clients)]
    model, tmp = args.model, None
    if args.tiny_model and not model:
        from lab.fixtures.tiny_model import make_tiny_model_dir
        tmp = tempfile.TemporaryDirectory(prefix="infill-http-loadtest-")
        model = str(make_tiny_model_dir(os.path.join(tmp.name, "model")))
    setups: list[Optional[int]] = ([None] if args.in_process else []) + list(args.replicas)
    summaries = []
    try:
        for replicas in setups:
            token = secrets.token_urlsafe(16)
            process, url = await start_server(replicas, model, token)
            try:
                run = await drive(url, token, requests=args.requests, clients=args.clients,
                                  max_tokens=args.max_tokens, expect_replicas=replicas or 1)
            finally:
                await stop_server(process)
            label = "in-process" if replicas is None else f"{replicas} replica{'s' if replicas > 1 else ''}"
            summaries.append(summarize(label, run, args.requests, args.clients))
            if not args.json:
                print(json.dumps(summaries[-1]), flush=True)
    finally:
        if tmp is not None:
            tmp.cleanup()
    return summaries


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m lab.loadtest.http", description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=200, help="completions per setup (after warm-up)")
    parser.add_argument("--clients", type=int, default=20, help="concurrent clients")
    parser.add_argument("--replicas", type=int, nargs="*", default=[1, 2], help="Ray Serve replica counts to run")
    parser.add_argument("--in-process", action="store_true", help="also run `infill serve` without Ray")
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--model", metavar="DIR", help="model directory (default: the embedded model)")
    parser.add_argument("--tiny-model", action="store_true", help="serve a tiny random model (lab.fixtures.tiny_model)")
    parser.add_argument("--url", help="load a running server instead (with --token)")
    parser.add_argument("--token")
    parser.add_argument("--json", action="store_true", help="print one JSON list at the end only")
    return parser


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if args.requests < 1 or args.clients < 1 or args.max_tokens < 1 or any(n < 1 for n in args.replicas):
        print("loadtest: --requests, --clients, --max-tokens and --replicas must be positive", file=sys.stderr)
        return 2
    if args.url and not args.token:
        print("loadtest: --url needs --token", file=sys.stderr)
        return 2
    summaries = asyncio.run(_run(args))
    if args.json:
        print(json.dumps(summaries))
    ok = bool(summaries) and all(s["errors"] == 0 and s["answered"] == s["requests"] for s in summaries)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
