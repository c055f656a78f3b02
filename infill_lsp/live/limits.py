"""Resource limits of the live server and the per-connection message rate limiter."""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any, Callable

from engine.types import MAX_TOKENS


@dataclass(frozen=True)
class Limits:
    max_message_bytes: int = 1 << 20  # larger frames close the connection with 1009; larger HTTP bodies get 413
    max_document_chars: int = 500_000
    max_sessions_per_connection: int = 16
    max_sessions_total: int = 1024
    max_connections: int = 256  # further handshakes get HTTP 503
    max_http_requests: int = 256  # completions queued or running at once; further ones get HTTP 429
    max_live_requests: int = 256  # live infills queued or running at once; further ones get `server_busy`
    messages_per_second: float = 40.0  # sustained rate per connection
    message_burst: int = 80  # how many messages may arrive at once before the rate applies
    rate_strikes_before_close: int = 50  # refused messages in a row before closing with 4029
    max_backlog_frames: int = 512  # unsent non-coalescable frames before closing with 4008
    send_stall_seconds: float = 15.0  # a frame that cannot be sent this long (nothing read): 4008, then drop
    keepalive_seconds: float = 20.0  # ping period; no pong within as long: 4008 (the client stopped reading)
    max_request_tokens: int = MAX_TOKENS  # cap on a request's max_tokens: the schema's bound unless a server lowers it

    def public(self) -> dict[str, Any]:
        """What the `hello` frame tells clients."""
        keys = ("max_message_bytes", "max_document_chars", "max_sessions_per_connection",
                "messages_per_second", "message_burst", "max_request_tokens")
        values = asdict(self)
        return {key: values[key] for key in keys}


class TokenBucket:
    """`rate` tokens per second up to `burst`; each message takes one."""

    def __init__(self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = rate
        self.burst = float(burst)
        self.clock = clock
        self.tokens = float(burst)
        self.updated = clock()

    def take(self) -> bool:
        now = self.clock()
        self.tokens = min(self.burst, self.tokens + (now - self.updated) * self.rate)
        self.updated = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False

    def retry_after(self) -> float:
        return max(0.0, (1.0 - self.tokens) / self.rate) if self.rate > 0 else float("inf")
