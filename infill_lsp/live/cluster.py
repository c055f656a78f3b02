"""`infill serve --replicas N`: the same app on N Ray Serve replicas behind one address.

    infill serve --replicas 2                          # a local Ray instance on this machine
    infill serve --replicas 4 --ray-address auto       # an existing cluster (`ray start --head` ...)
    infill serve --min-replicas 1 --max-replicas 4     # autoscaled on requests in flight

Each replica is a Ray actor that loads its own engine and builds the app of app.py over
its own Hub (its own fair queue and engine thread, so batched denoising happens inside
each replica). Ray Serve's HTTP proxy listens on --host/--port and routes each request to
a replica; the token and the Origin policy are the same in every replica, and each answer
names its replica under `infill.replica`.

Ray is an optional extra (`pip install -e '/path/to/infill[cluster]'`, from the checkout):
nothing imports it unless --replicas, --ray-address or an autoscaling bound is given, and
then only here.
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import math
import random
import secrets
import socket
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from . import pages
from .limits import Limits

log = logging.getLogger("infill.live")

APP_NAME = "infill"
MAX_ONGOING_PER_REPLICA = 16  # requests Ray hands one replica at once; its own queue orders them
OBJECT_STORE_BYTES = 128 * 1024 * 1024  # a local instance passes no tensors through the object store
SHUTDOWN_DEADLINE_S = 60.0


@dataclass(frozen=True)
class ClusterOptions:
    replicas: int = 1  # fixed count, or the initial count when autoscaling
    ray_address: Optional[str] = None  # None: start a local Ray instance
    min_replicas: Optional[int] = None  # set (with max_replicas): autoscale between the two
    max_replicas: Optional[int] = None
    target_ongoing_requests: float = 2.0
    replica_cpus: float = 1.0

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> "ClusterOptions":
        """From `infill serve`'s arguments; ValueError says what is inconsistent."""
        autoscale = args.min_replicas is not None or args.max_replicas is not None
        if autoscale and (args.min_replicas is None or args.max_replicas is None):
            raise ValueError("autoscaling needs both --min-replicas and --max-replicas")
        if autoscale and not 0 <= args.min_replicas <= args.max_replicas or autoscale and args.max_replicas < 1:
            raise ValueError("need 0 <= --min-replicas <= --max-replicas and --max-replicas >= 1")
        replicas = args.replicas if args.replicas is not None else (max(1, args.min_replicas) if autoscale else 1)
        if replicas < 1:
            raise ValueError(f"--replicas must be at least 1, got {replicas}")
        if autoscale and not args.min_replicas <= replicas <= args.max_replicas:
            raise ValueError("--replicas (the initial count) must lie between --min-replicas and --max-replicas")
        if args.target_ongoing_requests <= 0 or args.replica_cpus <= 0:
            raise ValueError("--target-ongoing-requests and --replica-cpus must be positive")
        return cls(replicas=replicas, ray_address=args.ray_address, min_replicas=args.min_replicas,
                   max_replicas=args.max_replicas, target_ongoing_requests=args.target_ongoing_requests,
                   replica_cpus=args.replica_cpus)

    @property
    def autoscaling(self) -> bool:
        return self.min_replicas is not None and self.max_replicas is not None

    def deployment_options(self) -> dict[str, Any]:
        """Keyword arguments for `serve.deployment`."""
        threads = str(max(1, int(self.replica_cpus)))
        options: dict[str, Any] = {
            "name": "InfillReplica",
            "max_ongoing_requests": MAX_ONGOING_PER_REPLICA,
            # torch in each replica uses the CPUs Ray reserved for it, not every core of the node.
            "ray_actor_options": {"num_cpus": self.replica_cpus,
                                  "runtime_env": {"env_vars": {"OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}}},
        }
        if self.autoscaling:
            options["autoscaling_config"] = {"min_replicas": self.min_replicas, "max_replicas": self.max_replicas,
                                             "initial_replicas": self.replicas,
                                             "target_ongoing_requests": self.target_ongoing_requests}
        else:
            options["num_replicas"] = self.replicas
        return options

    def local_cpus(self) -> int:
        """CPUs to give a local Ray instance: room for the largest number of replicas."""
        return max(1, math.ceil((self.max_replicas or self.replicas) * self.replica_cpus))


@dataclass(frozen=True)
class ReplicaSettings:
    """What every replica needs to build its app (sent to it by Ray, pickled)."""

    model_dir: Optional[str]
    token: str
    limits: Limits
    allowed_origins: frozenset[str]
    max_batch: Optional[int] = None  # requests each replica denoises together
    token_generated: bool = True  # False: given with --token (the banner printed none)


class InfillReplica:
    """A Ray Serve replica: builds its engine and app when Ray starts it. Ray wraps this
    class with `serve.ingress()`, which calls `__serve_build_asgi_app__` once the
    constructor has run, in the replica's own process."""

    def __init__(self, settings: ReplicaSettings) -> None:
        self.settings = settings

    def __serve_build_asgi_app__(self) -> Any:
        import engine
        from ray import serve

        from .app import build_app
        from .hub import Hub

        eng = engine.load(model_dir=self.settings.model_dir)
        replica = serve.get_replica_context().replica_id.unique_id
        hub = Hub(eng, token=self.settings.token, limits=self.settings.limits,
                  origins=pages.OriginPolicy(self.settings.allowed_origins), replica_id=replica,
                  max_batch=self.settings.max_batch, token_generated=self.settings.token_generated)
        log.info("replica %s serves %s", replica, hub.model_name)
        return build_app(hub)


# Ray's own processes bind ports the OS hands out (its ephemeral range) and its workers'
# ports (10002-19999 by default) while `ray.init` and `serve.start` run, after the proxy's
# port is chosen and before the proxy binds it. A port the OS handed out was once taken by
# one of them in between ("Failed to bind to address '127.0.0.1:44227'": Errno 98), so the
# proxy's port is chosen where neither range reaches.
RAY_WORKER_PORTS = (10002, 19999)
PROXY_PORT_TRIES = 64


def ephemeral_range() -> tuple[int, int]:
    """The OS's range for ports it assigns itself (Linux's file; its default elsewhere)."""
    try:
        low, high = (int(x) for x in Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
        return low, high
    except (OSError, ValueError):
        return 32768, 60999


def _outside(taken: list[tuple[int, int]], low: int, high: int) -> list[tuple[int, int]]:
    """The spans of low..high that no (first, last) range of `taken` covers."""
    spans = [(low, high)]
    for first, last in taken:
        spans = [piece for a, b in spans for piece in ((a, min(b, first - 1)), (max(a, last + 1), b)) if piece[0] <= piece[1]]
    return spans


def free_port(host: str, rng: Optional[random.Random] = None) -> int:
    """A port free on `host` now (Ray Serve's proxy needs a number, not 0), outside the
    ranges Ray's processes take ports from while it starts; an OS-assigned one if none of
    PROXY_PORT_TRIES candidates there is free."""
    rng = rng or random.SystemRandom()
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    spans = _outside([ephemeral_range(), RAY_WORKER_PORTS], 1024, 65535)
    for _ in range(PROXY_PORT_TRIES if spans else 0):
        a, b = rng.choice(spans)
        port = rng.randint(a, b)
        with socket.socket(family) as probe:
            try:
                probe.bind((host, port))
            except OSError:
                continue
            return port
    with socket.socket(family) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def serve_replicas(config: Any, options: ClusterOptions, *, model_dir: Optional[str]) -> int:
    """Deploy on Ray Serve, print where, serve until SIGINT/SIGTERM, then take it down."""
    from .banner import print_banner, urls, wait_for_signal

    try:
        import ray
        from ray import serve
    except ImportError:
        print("infill serve: --replicas needs Ray Serve: pip install -e '/path/to/infill[cluster]' "
              "(the extra, from the checkout)", file=sys.stderr)
        return 2
    if model_dir is not None and not Path(model_dir).expanduser().is_dir():
        print(f"infill serve: {model_dir}: no such model directory", file=sys.stderr)
        return 2
    port = config.port or free_port(config.host)
    token = config.token or secrets.token_urlsafe(24)
    settings = ReplicaSettings(
        model_dir=str(Path(model_dir).expanduser().resolve()) if model_dir else None, token=token,
        limits=config.limits,
        allowed_origins=pages.OriginPolicy.build(config.host, port, config.allowed_origins).allowed,
        max_batch=config.max_batch, token_generated=config.token is None)
    started_ray = options.ray_address is None
    try:
        if started_ray:
            ray.init(address="local", num_cpus=options.local_cpus(), include_dashboard=False,
                     object_store_memory=OBJECT_STORE_BYTES, logging_level=logging.WARNING, log_to_driver=False,
                     configure_logging=False)
        else:
            ray.init(address=options.ray_address, logging_level=logging.WARNING, log_to_driver=False,
                     configure_logging=False)
        serve.start(http_options={"host": config.host, "port": port},
                    logging_config={"log_level": "WARNING", "enable_access_log": False})
        deployment = serve.deployment(serve.ingress()(InfillReplica), **options.deployment_options())
        serve.run(deployment.bind(settings), name=APP_NAME, route_prefix="/", blocking=False)
    except Exception as exc:  # Ray's own errors: a cluster that cannot be reached, a replica that cannot start
        print(f"infill serve: Ray Serve deployment failed: {type(exc).__name__}: {str(exc).splitlines()[0]}",
              file=sys.stderr)
        _take_down(ray, serve, started_ray)
        return 2
    where = "a local Ray instance" if started_ray else f"Ray at {options.ray_address}"
    scale = (f"{options.min_replicas}-{options.max_replicas} replicas (autoscaled)" if options.autoscaling
             else f"{options.replicas} replica{'s' if options.replicas != 1 else ''}")
    print_banner(config, port, token, _model_name(model_dir), extra=f", {scale} on {where}")
    log.info("serving at %s", urls(config.host, port, None)["base"])
    try:
        asyncio.run(wait_for_signal())
    except KeyboardInterrupt:
        pass
    _take_down(ray, serve, started_ray)
    return 0


def _take_down(ray: Any, serve: Any, started_ray: bool) -> None:
    """Remove what we deployed. A local Ray instance simply goes (ray.shutdown stops its
    processes, replicas and proxy included; serve.shutdown would wait on a raylet that the
    terminal's Ctrl+C may already have killed). On another cluster only our app is deleted,
    with a deadline, and the cluster keeps running."""
    if not started_ray:
        remover = threading.Thread(target=_delete_app, args=(serve,), daemon=True)
        remover.start()
        remover.join(SHUTDOWN_DEADLINE_S)
    if ray.is_initialized():
        ray.shutdown()


def _delete_app(serve: Any) -> None:
    try:
        serve.delete(APP_NAME)
    except Exception as exc:  # Serve never started, or the cluster is gone: nothing to remove
        log.warning("could not delete the Ray Serve app %r: %s", APP_NAME, exc)


def _model_name(model_dir: Optional[str]) -> str:
    """The model's name for the banner, read from its config without loading it."""
    try:
        from engine.api import DEFAULT_MODEL_DIR
        from engine.modeldir import read_config

        path = Path(model_dir).expanduser() if model_dir else DEFAULT_MODEL_DIR
        name = read_config(path).get("name")
        return str(name or ("infill-default" if path == DEFAULT_MODEL_DIR else path.name))
    except Exception:
        return "the model"
