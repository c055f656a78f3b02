"""uvicorn's WebSocket protocol with one change: a client that answers no ping has
stopped reading, and is closed with 4008 (docs/live-protocol.md) and then dropped.

A WebSocket client answers pings from its read loop, so a missing pong is the one sign
of a client that reads nothing that the server can see even when the kernel's socket
buffers (megabytes on loopback) swallow every frame it is sent. uvicorn closes such a
connection with 1011 and `transport.close()`, which waits for the unread data to drain,
i.e. forever, keeping the connection and its task. Here the close says 4008, and if the
client still reads nothing the TCP connection is aborted `abort_after_s` later, which
releases its buffers and ends the app's pending send (ChannelClosed). A client that
starts reading again in that window sees its frames, then the 4008 close.
"""
from __future__ import annotations

import logging

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

from .protocol import CLOSE_TOO_SLOW

log = logging.getLogger("infill.live")


class LiveWebSocketProtocol(WebSocketsSansIOProtocol):
    abort_after_s = 10.0

    def keepalive_timeout(self) -> None:
        self.pong_timer = None
        self.pending_ping_payload = None
        if self.close_sent or self.transport.is_closing():
            return
        log.warning("closing a live connection that stopped reading: no answer to a ping for %g s", self.ping_timeout)
        self.conn.fail(CLOSE_TOO_SLOW, "client too slow: no answer to pings")
        self.transport.write(b"".join(self.conn.data_to_send()))
        self.close_sent = True
        if self.read_paused:
            self.read_paused = False
            self.transport.resume_reading()
        # Not transport.close(): the socket must go on reading (the client's pongs and its
        # answering close frame), or closing it with unread input sends a reset that
        # destroys the close frame still on its way. The client's close ends the
        # connection (handle_close, which cancels this timer); silence aborts it.
        self.close_timer = self.loop.call_later(self.abort_after_s, self._abort_if_still_open)

    def _abort_if_still_open(self) -> None:
        self.close_timer = None
        if not self.disconnected:
            self.transport.abort()
