"""`infill serve`: live rewrite sessions, the playground and an OpenAI-style HTTP API, on one port.

    GET / (the playground), WS /ws (docs/live-protocol.md), POST /v1/completions,
    GET /v1/models, GET /health (docs/http-api.md)

The app is infill_lsp/live/app.py; here it runs under uvicorn in this process. With
--replicas N the same app runs in N Ray Serve replicas instead (infill_lsp/live/cluster.py).
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import secrets
import socket
import sys
from dataclasses import dataclass, field, replace
from typing import Any, Iterator, Optional

import uvicorn

from engine.types import InfillError

from .. import redaction
from . import pages
from .app import build_app
from .banner import print_banner, urls, wait_for_signal
from .hub import Hub
from .limits import Limits
from .protocol import CLOSE_GOING_AWAY
from .ws_protocol import LiveWebSocketProtocol

log = logging.getLogger("infill.live")


@dataclass(frozen=True)
class LiveConfig:
    host: str = "127.0.0.1"
    port: int = 8765  # 0 picks a free port
    token: Optional[str] = None  # None: a random one is generated
    allowed_origins: tuple[str, ...] = ()  # beyond the server's own
    limits: Limits = field(default_factory=Limits)
    max_batch: Optional[int] = None  # requests denoised together (None: the worker's default; 1: one at a time)


class _Uvicorn(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield  # whoever runs the server owns the signals (main() below, or a test's thread)


class LiveServer(Hub):
    """A Hub served by uvicorn on one socket in this process."""

    def __init__(self, engine: Any, config: LiveConfig = LiveConfig()) -> None:
        super().__init__(engine, token=config.token or secrets.token_urlsafe(24), limits=config.limits, max_batch=config.max_batch,
                         token_generated=config.token is None)
        self.config = config
        self._socket: Optional[socket.socket] = None
        self._uvicorn: Optional[_Uvicorn] = None
        self._serving: Optional[asyncio.Task[None]] = None

    @property
    def port(self) -> int:
        assert self._socket is not None, "start() first"
        return int(self._socket.getsockname()[1])

    @property
    def host_for_urls(self) -> str:
        return urls(self.config.host, self.port, None)["base"].split("//", 1)[1].rsplit(":", 1)[0]

    @property
    def websocket_url(self) -> str:
        return urls(self.config.host, self.port, None)["websocket"]

    @property
    def base_url(self) -> str:
        return urls(self.config.host, self.port, None)["base"]

    @property
    def playground_url(self) -> str:
        return urls(self.config.host, self.port, self.token)["playground"]

    async def start(self) -> None:
        """Bind (OSError if the address is taken), then serve in the background."""
        self._socket = bind_socket(self.config.host, self.config.port)
        self.origins = pages.OriginPolicy.build(self.config.host, self.port, self.config.allowed_origins)
        config = uvicorn.Config(
            # A client that answers no ping for keepalive_seconds is closed with 4008 (ws_protocol.py).
            build_app(self), ws=LiveWebSocketProtocol, ws_max_size=self.limits.max_message_bytes,
            ws_ping_interval=self.limits.keepalive_seconds, ws_ping_timeout=self.limits.keepalive_seconds,
            ws_per_message_deflate=False,  # loopback: deflate would only spend CPU the engine needs
            lifespan="off", log_level=logging.WARNING, access_log=False, server_header=False,
            timeout_graceful_shutdown=5, limit_concurrency=self.limits.max_connections + self.limits.max_http_requests)
        self._uvicorn = _Uvicorn(config)
        self._serving = asyncio.ensure_future(self._uvicorn.serve(sockets=[self._socket]))
        while not self._uvicorn.started:
            if self._serving.done():
                self._serving.result()  # raises what stopped it
                raise RuntimeError("the HTTP server stopped while starting")
            await asyncio.sleep(0.01)

    async def stop(self) -> None:
        for channel in list(self.channels):  # live clients learn why: 1001, going away
            await channel.close(CLOSE_GOING_AWAY, "server shutting down")
        await asyncio.to_thread(self.stop_engine)  # ends running streams, so shutdown need not wait for them
        if self._uvicorn is not None and self._serving is not None:
            self._uvicorn.should_exit = True
            await self._serving


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port (IPv4 or IPv6 literal, or a name)."""
    family, kind, proto, _, address = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM,
                                                         flags=socket.AI_PASSIVE)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(512)
        sock.set_inheritable(True)
    except OSError:
        sock.close()
        raise
    return sock


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="infill serve", description="Live rewrite sessions over WebSocket, a "
                                     "browser playground and an OpenAI-style completions API, on one port.")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: loopback only)")
    parser.add_argument("--port", type=int, default=8765, help="port for HTTP and WebSocket (0 = any free)")
    parser.add_argument("--token", help="secret clients must present; default: a random one, printed at start")
    parser.add_argument("--model", metavar="DIR", help="model directory (default: the embedded model)")
    parser.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                        help="also accept requests from this browser origin (repeatable)")
    parser.add_argument("--max-sessions", type=int, default=Limits.max_sessions_per_connection,
                        help="sessions per connection")
    parser.add_argument("--rate", type=float, default=Limits.messages_per_second,
                        help="messages per second per connection")
    parser.add_argument("--max-batch", type=int, default=None,
                        help="requests denoised together, one forward pass for all (default 64; 1 = one at a time)")
    parser.add_argument("--log-level", default="WARNING", help="Python logging level for the server log")
    cluster = parser.add_argument_group("scale-out on Ray Serve (needs the extra: pip install -e '/path/to/infill[cluster]')")
    cluster.add_argument("--replicas", type=int, metavar="N",
                         help="serve with N Ray Serve replicas, each with its own engine (default: one engine "
                         "in this process, no Ray)")
    cluster.add_argument("--ray-address", metavar="ADDR",
                         help="join this Ray cluster (e.g. ray://head:10001 or auto) instead of starting a local one")
    cluster.add_argument("--min-replicas", type=int, metavar="N", help="autoscale: fewest replicas (with --max-replicas)")
    cluster.add_argument("--max-replicas", type=int, metavar="N", help="autoscale: most replicas")
    cluster.add_argument("--target-ongoing-requests", type=float, default=2.0, metavar="R",
                         help="autoscale: requests in flight per replica to aim for (default 2)")
    cluster.add_argument("--replica-cpus", type=float, default=1.0, metavar="C",
                         help="CPUs Ray reserves for each replica (default 1)")
    return parser


def _usage_error(message: str) -> int:
    print(f"infill serve: {message}", file=sys.stderr)
    return 2


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    if not 0 <= args.port <= 65535:
        return _usage_error(f"--port must be in 0..65535, got {args.port}")
    if args.token is not None and len(args.token) < 8:
        return _usage_error("--token must be at least 8 characters")
    if args.max_sessions < 1 or args.rate <= 0 or (args.max_batch is not None and args.max_batch < 1):
        return _usage_error("--max-sessions, --rate and --max-batch must be positive")
    limits = replace(Limits(), max_sessions_per_connection=args.max_sessions, messages_per_second=args.rate,
                     message_burst=max(1, int(args.rate * 2)))
    config = LiveConfig(host=args.host, port=args.port, token=args.token,
                        allowed_origins=tuple(args.allow_origin), limits=limits, max_batch=args.max_batch)
    if args.token is not None:
        redaction.protect(args.token)
    scale_out = (args.replicas, args.ray_address, args.min_replicas, args.max_replicas)
    if any(value is not None for value in scale_out):
        from .cluster import ClusterOptions  # no Ray import here: cluster.py imports it when it deploys

        try:
            options = ClusterOptions.from_args(args)
        except ValueError as exc:
            return _usage_error(str(exc))
        from .cluster import serve_replicas

        return serve_replicas(config, options, model_dir=args.model)
    import engine
    try:
        eng = engine.load(model_dir=args.model)
    except InfillError as exc:
        return _usage_error(str(exc))
    server = LiveServer(eng, config)
    redaction.protect(server.token)  # a generated one too: it is printed once, in the banner, never logged
    try:
        return asyncio.run(_serve_until_signal(server))
    except KeyboardInterrupt:
        return 0


async def _serve_until_signal(server: LiveServer) -> int:
    try:
        await server.start()
    except OSError as exc:
        return _usage_error(f"cannot listen on {server.config.host}:{server.config.port}: {exc.strerror or exc}")
    print_banner(server.config, server.port, server.token, server.model_name)
    await wait_for_signal()
    await server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
