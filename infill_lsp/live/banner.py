"""What `infill serve` prints and waits on, whether it serves in this process (server.py)
or on a Ray cluster (cluster.py): its own module, so those two never import each other."""
from __future__ import annotations

import asyncio
import signal
import sys
from typing import Optional, Protocol

from . import pages
from .protocol import PROTOCOL_VERSION, WEBSOCKET_PATH


class Listening(Protocol):
    """What the banner reads of a server's configuration (server.LiveConfig has it)."""

    @property
    def host(self) -> str: ...

    @property
    def token(self) -> Optional[str]: ...


def urls(host: str, port: int, token: Optional[str]) -> dict[str, str]:
    """The addresses `infill serve` prints. The token rides in the playground URL's
    fragment, which browsers never send to a server or in a Referer."""
    if host in ("0.0.0.0", "", "::"):
        host = "127.0.0.1"
    elif ":" in host:
        host = f"[{host}]"
    base = f"http://{host}:{port}"
    return {"base": base, "playground": f"{base}/" + (f"#token={token}" if token else ""),
            "websocket": f"ws://{host}:{port}{WEBSOCKET_PATH}", "api": f"{base}/v1"}


def print_banner(config: Listening, port: int, token: str, model: str, extra: str = "") -> None:
    """What `infill serve` prints at start: where to connect, and the token if it made one."""
    if not pages.is_loopback(config.host):
        print(f"warning: listening on {config.host}, not loopback: anyone who can reach it and knows "
              "the token can use the model", file=sys.stderr)
    generated = config.token is None
    where = urls(config.host, port, token if generated else None)
    print(f"infill serve: model {model}, protocol {PROTOCOL_VERSION}{extra}", flush=True)
    print(f"  playground: {where['playground']}", flush=True)
    print(f"  websocket:  {where['websocket']}", flush=True)
    print(f"  api:        {where['api']}  (OpenAI-style: POST /completions, GET /models)", flush=True)
    root = where["api"][: -len("/v1")]
    print(f"  also:       {root}/api/generate (Ollama), {root}/infill (llama.cpp server)", flush=True)
    if generated:
        print(f"  token:      {token}", flush=True)


async def wait_for_signal() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(signum, stop.set)
        except (NotImplementedError, RuntimeError):
            pass  # not on this platform / not the main thread
    await stop.wait()
