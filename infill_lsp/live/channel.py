"""The WebSocket as a live connection sees it: messages in, text frames out, a close code.

`LiveConnection` needs only these three operations, so the protocol does not depend on
which server carries it: uvicorn in-process, or Ray Serve's proxy in front of a replica.
`StarletteChannel` adapts Starlette's ASGI WebSocket to them, and enforces the message
size cap itself (1009) because a proxy in front of the app may allow larger frames.
"""
from __future__ import annotations

from typing import AsyncIterator, Protocol, Union

from starlette.websockets import WebSocket, WebSocketDisconnect

CLOSE_TOO_BIG = 1009


class ChannelClosed(Exception):
    """The peer is gone: sending is pointless (receiving simply ends)."""


class Channel(Protocol):
    def __aiter__(self) -> AsyncIterator[Union[str, bytes]]: ...
    async def send(self, text: str) -> None: ...
    async def close(self, code: int, reason: str = "") -> None: ...


class StarletteChannel:
    def __init__(self, ws: WebSocket, max_message_bytes: int) -> None:
        self.ws = ws
        self.max_message_bytes = max_message_bytes
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[Union[str, bytes]]:
        while True:
            try:
                message = await self.ws.receive()
            except (WebSocketDisconnect, RuntimeError):  # RuntimeError: receive after the disconnect
                return
            if message["type"] == "websocket.disconnect":
                self.closed = True
                return
            data: Union[str, bytes, None] = message.get("text")
            if data is None:
                data = message.get("bytes") or b""
            # Text is counted in characters here; a UTF-8 frame is at least that many bytes.
            if len(data) > self.max_message_bytes:
                await self.close(CLOSE_TOO_BIG, "message too big")
                continue  # drain until the peer answers the close
            yield data

    async def send(self, text: str) -> None:
        if self.closed:
            raise ChannelClosed()
        try:
            await self.ws.send_text(text)
        except (WebSocketDisconnect, RuntimeError, OSError) as exc:
            self.closed = True
            raise ChannelClosed() from exc
        except Exception as exc:  # uvicorn's ClientDisconnected and its kin
            if type(exc).__name__ != "ClientDisconnected":
                raise
            self.closed = True
            raise ChannelClosed() from exc

    async def close(self, code: int, reason: str = "") -> None:
        if self.closed:
            return
        self.closed = True
        try:
            await self.ws.close(code, reason)
        except Exception:  # already gone: nothing left to tell it
            pass
