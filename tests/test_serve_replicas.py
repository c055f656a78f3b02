"""`infill serve --replicas 2` on a local Ray instance: the same HTTP API (token, Origin,
streaming) from two replicas, each with its own engine, both serving a bounded load with
no errors; and `infill serve` without --replicas never imports Ray.

The Ray test starts a real local Ray cluster (num_cpus limited, no dashboard), so it is
slow on a 2-core machine: its timeouts are generous."""
from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from infill_lsp.live.cluster import ClusterOptions
from infill_lsp.live.server import build_parser
from lab.loadtest import http as loadtest

TOKEN = "replicas-test-token"


def test_without_replicas_serving_never_imports_ray(tiny_model_dir: Path) -> None:
    code = (
        "import sys, httpx, engine\n"
        "from infill_lsp.live.server import LiveConfig\n"
        "from lab.fixtures.live_server import ServerThread\n"
        f"eng = engine.load({str(tiny_model_dir)!r})\n"
        "with ServerThread(eng, LiveConfig(port=0, token='no-ray-token')) as s:\n"
        "    r = httpx.post(s.base_url + '/v1/completions', json={'prompt': 'x = ', 'max_tokens': 2},\n"
        "                   headers={'Authorization': 'Bearer no-ray-token'}, timeout=60)\n"
        "    assert r.status_code == 200, r.text\n"
        "print(sorted(m for m in sys.modules if m == 'ray' or m.startswith('ray.')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          cwd=Path(__file__).resolve().parents[1])  # lab/ is imported from the checkout
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_cluster_options_follow_the_command_line() -> None:
    parse = build_parser().parse_args
    fixed = ClusterOptions.from_args(parse(["--replicas", "3", "--replica-cpus", "2"]))
    assert fixed.deployment_options()["num_replicas"] == 3 and "autoscaling_config" not in fixed.deployment_options()
    assert fixed.deployment_options()["ray_actor_options"]["runtime_env"]["env_vars"]["OMP_NUM_THREADS"] == "2"
    assert fixed.local_cpus() == 6
    scaled = ClusterOptions.from_args(parse(["--min-replicas", "1", "--max-replicas", "4"]))
    assert scaled.deployment_options()["autoscaling_config"] == {
        "min_replicas": 1, "max_replicas": 4, "initial_replicas": 1, "target_ongoing_requests": 2.0}
    assert scaled.local_cpus() == 4
    for bad in (["--replicas", "0"], ["--max-replicas", "2"], ["--min-replicas", "3", "--max-replicas", "2"],
                ["--min-replicas", "1", "--max-replicas", "2", "--replicas", "5"]):
        with pytest.raises(ValueError):
            ClusterOptions.from_args(parse(bad))


@pytest.mark.slow
def test_the_proxy_port_is_chosen_where_ray_takes_none(monkeypatch) -> None:
    """Ray's processes bind OS-assigned ports and its worker range while it starts, after
    the proxy's port is chosen: that port must lie outside both (one was once taken in
    between), be free when chosen, and a taken candidate is passed over."""
    import random
    import socket

    from infill_lsp.live import cluster

    monkeypatch.setattr(cluster, "ephemeral_range", lambda: (32768, 60999))
    ports = [cluster.free_port("127.0.0.1", random.Random(seed)) for seed in range(40)]
    for port in ports:
        assert not 32768 <= port <= 60999 and not cluster.RAY_WORKER_PORTS[0] <= port <= cluster.RAY_WORKER_PORTS[1]
        assert 1024 <= port <= 65535
    first = cluster.free_port("127.0.0.1", random.Random(7))
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", first))  # the first candidate of seed 7 is taken now
        second = cluster.free_port("127.0.0.1", random.Random(7))
    assert second != first
    assert cluster._outside([(32768, 60999), (10002, 19999)], 1024, 65535) == [(1024, 10001), (20000, 32767), (61000, 65535)]
    # nothing outside the ranges at all: the OS's own choice, rather than no port
    monkeypatch.setattr(cluster, "ephemeral_range", lambda: (1024, 65535))
    assert cluster._outside([(1024, 65535), cluster.RAY_WORKER_PORTS], 1024, 65535) == []
    port = cluster.free_port("127.0.0.1", random.Random(1))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", port))  # free when handed out


def test_two_ray_serve_replicas_behind_one_address(tiny_model_dir: Path) -> None:
    pytest.importorskip("ray.serve", reason="the cluster extra (ray[serve]) is part of the test install")

    async def scenario() -> dict[str, Any]:
        process, base = await loadtest.start_server(2, str(tiny_model_dir), TOKEN)
        try:
            async with httpx.AsyncClient(base_url=base, timeout=120, trust_env=False) as client:
                body = {"prompt": "def add(a, b):\n    return ", "suffix": "\n", "max_tokens": 4}
                assert (await client.post("/v1/completions", json=body)).status_code == 401
                auth = {"Authorization": f"Bearer {TOKEN}"}
                foreign = await client.get("/v1/models", headers={**auth, "Origin": "http://evil.example"})
                assert foreign.status_code == 403 and foreign.json()["error"]["code"] == "origin_not_allowed"
                bad = await client.post("/v1/completions", content=b"{oops", headers=auth)
                assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_json"
                models = (await client.get("/v1/models", headers=auth)).json()
                assert models["data"][0]["id"] == "tiny-random"
                async with client.stream("POST", "/v1/completions", json={**body, "stream": True}, headers=auth) as r:
                    events = [line async for line in r.aiter_lines() if line.startswith("data: ")]
                assert events[-1] == "data: [DONE]" and json.loads(events[-2][6:])["infill"]["replica"]
            run = await loadtest.drive(base, TOKEN, requests=60, clients=10, max_tokens=4, expect_replicas=2)
        finally:
            await loadtest.stop_server(process)
        return {"run": loadtest.summarize("2 replicas", run, 60, 10), "exit": process.returncode}

    outcome = asyncio.run(asyncio.wait_for(scenario(), timeout=900))
    summary = outcome["run"]
    assert summary["errors"] == 0 and summary["answered"] == 60, summary
    assert len(summary["replicas"]) == 2 and all(count > 0 for count in summary["replicas"].values()), summary
    assert outcome["exit"] == 0  # SIGTERM: the app and the local Ray instance are taken down cleanly
