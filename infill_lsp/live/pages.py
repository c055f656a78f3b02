"""The playground's static files and the Origin policy of every request to the port.

Browsers always send `Origin` on WebSocket handshakes and on cross-origin `fetch` (every
POST from another page), so checking it stops any web page
the user happens to visit from driving the local server. The allowed origins are the
server's own (derived from the address it binds, never from the request's Host header,
which a DNS-rebinding page controls) plus those configured with --allow-origin.
Clients that are not browsers send no Origin; they are let through to the token check.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from importlib import resources
from typing import Iterable, Optional

from starlette.responses import PlainTextResponse, Response

STATIC_FILES = {
    "/": ("playground.html", "text/html; charset=utf-8"),
    "/playground.html": ("playground.html", "text/html; charset=utf-8"),
    "/playground.js": ("playground.js", "text/javascript; charset=utf-8"),
    "/playground.css": ("playground.css", "text/css; charset=utf-8"),
}

SECURITY_HEADERS = [
    # The page needs nothing from elsewhere; 'self' also admits ws:// to this host:port.
    ("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; "
     "connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
    ("Cache-Control", "no-store"),
]


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def own_origins(host: str, port: int) -> set[str]:
    """The origins the playground page has when loaded from this server."""
    names = {host}
    if is_loopback(host) or host in ("0.0.0.0", "::", ""):
        names |= {"127.0.0.1", "localhost", "[::1]"}
    out = set()
    for name in names:
        if ":" in name and not name.startswith("["):
            name = f"[{name}]"  # an IPv6 literal in a URL
        out.add(f"http://{name}:{port}")
    return out


@dataclass(frozen=True)
class OriginPolicy:
    allowed: frozenset[str]

    @classmethod
    def build(cls, host: str, port: int, extra: Iterable[str] = ()) -> "OriginPolicy":
        return cls(frozenset(own_origins(host, port) | {origin.rstrip("/") for origin in extra}))

    def allows(self, origin: Optional[str]) -> bool:
        return origin is None or origin in self.allowed


def static_response(path: str) -> Optional[Response]:
    if path == "/favicon.ico":
        return Response(b"", 204, headers=dict(SECURITY_HEADERS), media_type="image/x-icon")  # spares browsers a logged 404
    entry = STATIC_FILES.get(path)
    if entry is None:
        return None
    name, content_type = entry
    body = resources.files("infill_lsp").joinpath("static", name).read_bytes()
    return Response(body, 200, headers=dict(SECURITY_HEADERS), media_type=content_type)


def text_response(status: int, text: str) -> Response:
    return PlainTextResponse(text, status, headers=dict(SECURITY_HEADERS))
