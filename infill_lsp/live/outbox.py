"""A connection's outgoing frames, with step frames coalesced for clients that read slowly.

The engine produces steps at its own pace; a client that reads slower than that should see
fewer, fuller step frames rather than make the server buffer without bound. A step frame
still waiting to be sent absorbs the next one for the same request: its changes are merged
(later wins per position) and the canvas snapshot is the newer one, so nothing a client
needs to render the canvas is lost. Other frames are never dropped; if they pile up past
`max_backlog` the client is not reading at all and the connection is closed.
"""
from __future__ import annotations

import asyncio
from collections import deque
from typing import Any, Hashable, Optional


class BacklogOverflow(Exception):
    pass


class Outbox:
    def __init__(self, max_backlog: int) -> None:
        self.max_backlog = max_backlog
        self._frames: deque[dict[str, Any]] = deque()
        self._unsent_steps: dict[Hashable, dict[str, Any]] = {}
        self._ready = asyncio.Event()
        self.coalesced = 0

    def __len__(self) -> int:
        return len(self._frames)

    def put(self, frame: dict[str, Any]) -> None:
        if frame.get("type") == "step":
            key = (frame.get("session"), frame.get("id"))
            waiting = self._unsent_steps.get(key)
            if waiting is not None:
                merge_step(waiting, frame)
                self.coalesced += 1
                return
            self._unsent_steps[key] = frame
        if len(self._frames) >= self.max_backlog:
            raise BacklogOverflow(f"{len(self._frames)} frames waiting for the client")
        self._frames.append(frame)
        self._ready.set()

    def put_control(self, frame: dict[str, Any]) -> None:
        """Queue a frame past the backlog limit (the close marker that ends a connection)."""
        self._frames.append(frame)
        self._ready.set()

    async def get(self) -> dict[str, Any]:
        while not self._frames:
            self._ready.clear()
            await self._ready.wait()
        frame = self._frames.popleft()
        if frame.get("type") == "step":
            self._unsent_steps.pop((frame.get("session"), frame.get("id")), None)
        return frame

    def drop_request(self, session: str, request_id: Optional[Any]) -> None:
        """Forget unsent step frames of a request that was cancelled (its `cancelled` frame follows)."""
        key = (session, request_id)
        waiting = self._unsent_steps.pop(key, None)
        if waiting is not None:
            # By identity: another frame may compare equal to it.
            self._frames = deque(frame for frame in self._frames if frame is not waiting)


def merge_step(older: dict[str, Any], newer: dict[str, Any]) -> None:
    by_position = {change["position"]: change for change in older["changes"]}
    for change in newer["changes"]:
        by_position[change["position"]] = change
    merged_changes = sorted(by_position.values(), key=lambda change: change["position"])
    coalesced = older.get("coalesced", 0) + 1 + newer.get("coalesced", 0)
    older.update(newer)
    older["changes"] = merged_changes
    older["coalesced"] = coalesced
