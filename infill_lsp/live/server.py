"""`infill serve`: live rewrite sessions over WebSocket, and the playground page over HTTP.

One port serves both: GET / (and the page's files) over plain HTTP, and the protocol at
/ws. See docs/live-protocol.md for the protocol, its limits and its close codes.
"""
from __future__ import annotations

import argparse
import asyncio
import hmac
import logging
import secrets
import signal
import sys
from dataclasses import dataclass, field, replace
from typing import Any, Optional

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.http11 import Request, Response

from .. import redaction
from . import pages
from .connection import LiveConnection
from .limits import Limits
from .protocol import PROTOCOL_VERSION, WEBSOCKET_PATH
from .scheduler import FairScheduler
from .worker import EngineWorker

log = logging.getLogger("infill.live")


@dataclass(frozen=True)
class LiveConfig:
    host: str = "127.0.0.1"
    port: int = 8765  # 0 picks a free port
    token: Optional[str] = None  # None: a random one is generated
    allowed_origins: tuple[str, ...] = ()  # beyond the server's own
    limits: Limits = field(default_factory=Limits)


class LiveServer:
    def __init__(self, engine: Any, config: LiveConfig = LiveConfig(), *,
                 error_type: Optional[type[BaseException]] = None) -> None:
        self.engine = engine
        self.config = config
        self.limits = config.limits
        self.token = config.token or secrets.token_urlsafe(24)
        self.token_generated = config.token is None
        self.model_name = str(getattr(engine, "model_name", "unknown"))
        self.scheduler = FairScheduler()
        if error_type is None:
            from engine import InfillError
            error_type = InfillError
        self.worker = EngineWorker(engine, self.scheduler, error_type)
        self.sessions_open = 0
        self.connections = 0
        self.origins = pages.OriginPolicy(frozenset())
        self._server: Optional[Server] = None

    # -- the Hub a connection sees ---------------------------------------------------------

    def token_ok(self, token: Optional[str]) -> bool:
        # Constant time (hmac.compare_digest); surrogatepass: a JSON "\udc80" in a guess
        # must be refused like any wrong token, not raise.
        if not isinstance(token, str):
            return False
        return hmac.compare_digest(token.encode("utf-8", "surrogatepass"), self.token.encode("utf-8", "surrogatepass"))

    def reserve_session(self) -> bool:
        if self.sessions_open >= self.limits.max_sessions_total:
            return False
        self.sessions_open += 1
        return True

    def release_session(self) -> None:
        self.sessions_open -= 1

    # -- lifecycle -----------------------------------------------------------------------

    @property
    def port(self) -> int:
        assert self._server is not None, "start() first"
        return int(self._server.sockets[0].getsockname()[1])

    @property
    def host_for_urls(self) -> str:
        host = self.config.host
        if host in ("0.0.0.0", "", "::"):
            return "127.0.0.1"
        return f"[{host}]" if ":" in host else host

    @property
    def websocket_url(self) -> str:
        return f"ws://{self.host_for_urls}:{self.port}{WEBSOCKET_PATH}"

    @property
    def playground_url(self) -> str:
        # The token rides in the fragment, which browsers never send to a server or in a Referer.
        return f"http://{self.host_for_urls}:{self.port}/#token={self.token}"

    async def start(self) -> None:
        self._server = await serve(
            self._handle, self.config.host, self.config.port,
            process_request=self._process_request,
            max_size=self.limits.max_message_bytes,
            compression=None,  # loopback: deflate would only spend CPU the engine needs
            ping_interval=None,  # LiveConnection pings itself and closes non-readers with 4008
        )
        self.origins = pages.OriginPolicy.build(self.config.host, self.port, self.config.allowed_origins)
        self.worker.start()

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()  # closes open connections with 1001 (going away)
            await self._server.wait_closed()
        for job in self.scheduler.close():
            job.cancel.set()
        current = self.worker.current
        if current is not None:
            current.cancel.set()
        if self.worker.is_alive():
            await asyncio.to_thread(self.worker.join, 10.0)

    # -- handshake and connections ------------------------------------------------------------

    def _process_request(self, connection: ServerConnection, request: Request) -> Optional[Response]:
        if not pages.is_websocket_path(request):
            page = pages.static_response(pages.request_path(request))
            return page or pages.text_response(404, "Not Found", "not found\n")
        origin = request.headers.get("Origin")
        if not self.origins.allows(origin):
            log.warning("refused a WebSocket handshake from origin %r", origin)
            return pages.text_response(403, "Forbidden", f"origin {origin!r} is not allowed; "
                                       "start the server with --allow-origin to admit it\n")
        if self.connections >= self.limits.max_connections:
            return pages.text_response(503, "Service Unavailable", "too many connections; try later\n")
        return None  # go on with the WebSocket handshake

    async def _handle(self, ws: ServerConnection) -> None:
        self.connections += 1
        try:
            await LiveConnection(self, ws).serve()
        finally:
            self.connections -= 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="infill serve", description="Live rewrite sessions over WebSocket, "
                                     "with a browser playground on the same port.")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: loopback only)")
    parser.add_argument("--port", type=int, default=8765, help="port for both HTTP and WebSocket (0 = any free)")
    parser.add_argument("--token", help="secret clients must present; default: a random one, printed at start")
    parser.add_argument("--model", metavar="DIR", help="model directory (default: the embedded model)")
    parser.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                        help="also accept WebSocket handshakes from this browser origin (repeatable)")
    parser.add_argument("--max-sessions", type=int, default=Limits.max_sessions_per_connection,
                        help="sessions per connection")
    parser.add_argument("--rate", type=float, default=Limits.messages_per_second,
                        help="messages per second per connection")
    parser.add_argument("--log-level", default="WARNING", help="Python logging level for the server log")
    return parser


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    if not 0 <= args.port <= 65535:
        print(f"infill serve: --port must be in 0..65535, got {args.port}", file=sys.stderr)
        return 2
    if args.token is not None and len(args.token) < 8:
        print("infill serve: --token must be at least 8 characters", file=sys.stderr)
        return 2
    if args.max_sessions < 1 or args.rate <= 0:
        print("infill serve: --max-sessions and --rate must be positive", file=sys.stderr)
        return 2
    if args.token is not None:
        redaction.protect(args.token)
    import engine
    try:
        eng = engine.load(model_dir=args.model)
    except engine.InfillError as exc:
        print(f"infill serve: {exc}", file=sys.stderr)
        return 2
    limits = replace(Limits(), max_sessions_per_connection=args.max_sessions, messages_per_second=args.rate,
                     message_burst=max(1, int(args.rate * 2)))
    config = LiveConfig(host=args.host, port=args.port, token=args.token,
                        allowed_origins=tuple(args.allow_origin), limits=limits)
    server = LiveServer(eng, config, error_type=engine.InfillError)
    redaction.protect(server.token)  # a generated one too: it is printed once, to stdout, never logged
    try:
        return asyncio.run(_serve_until_signal(server))
    except KeyboardInterrupt:
        return 0


async def _serve_until_signal(server: LiveServer) -> int:
    try:
        await server.start()
    except OSError as exc:
        print(f"infill serve: cannot listen on {server.config.host}:{server.config.port}: {exc.strerror or exc}",
              file=sys.stderr)
        return 2
    if not pages.is_loopback(server.config.host):
        print(f"warning: listening on {server.config.host}, not loopback: anyone who can reach it and knows "
              "the token can use the model", file=sys.stderr)
    playground = server.playground_url if server.token_generated else server.playground_url.split("#")[0]
    print(f"infill serve: model {server.model_name}, protocol {PROTOCOL_VERSION}", flush=True)
    print(f"  playground: {playground}", flush=True)
    print(f"  websocket:  {server.websocket_url}", flush=True)
    if server.token_generated:
        print(f"  token:      {server.token}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(signum, stop.set)
        except (NotImplementedError, RuntimeError):
            pass  # not on this platform / not the main thread
    await stop.wait()
    await server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
