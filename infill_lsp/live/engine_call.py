"""An HTTP request's model call, on the request path (infill_lsp/request_path.py).

Every HTTP route that runs the model (`/v1/completions` in app.py; any other HTTP dialect
the same way) does:

    call = EngineCall(hub, InfillCall(prefix, suffix, language, settings))
    call.start(steps=streaming)
    outcome = await call.outcome_or_hang_up(request)     # None: the client left
    #   or, streaming: kind, payload = await call.next() until kind == "done",
    #   answered with EngineStream(call, body), which ends the call whatever happens
    failure = user_error(outcome)                        # None, or a UserError to render
    call.end()                                           # cancels an unfinished job, forgets its context

and renders results and `UserError`s in its own wire format.
"""
from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator, Optional

from starlette.requests import Request
from starlette.responses import StreamingResponse

from engine.worker import InfillCall, Job, Outcome

from ..request_path import InFlight, Lane
from .hub import Hub

KEY = "completion"  # the worker's key within an HTTP request's own group


class EngineCall:
    """One HTTP request's model call on the hub's engine worker, through the request path
    (infill_lsp/request_path.py): each HTTP request is a group of its own (turns go round
    robin across requests and live connections alike), its steps and outcome handed to
    this event loop."""

    def __init__(self, hub: Hub, call: InfillCall) -> None:
        self.hub = hub
        self.call = call
        self.lane = Lane(hub.worker, ("http", hub.next_http_id()))
        self.flight: Optional[InFlight] = None
        self.ended = False

    def start(self, steps: bool) -> None:
        """Submit the call; `steps`: the answer streams them (a plain answer never reads any)."""
        self.hub.http_in_flight += 1
        self.hub.counters["http_requests"] += 1
        self.flight = self.lane.submit(KEY, self.call, steps=steps)

    @property
    def job(self) -> Job:
        assert self.flight is not None, "start() first"
        return self.flight.job

    async def next(self) -> tuple[str, Any]:
        """The next ("step", DenoiseStep) or ("done", Outcome); steps collapse for a slow reader."""
        assert self.flight is not None, "start() first"
        return await self.flight.next()

    async def outcome_or_hang_up(self, request: Request) -> Optional[Outcome]:
        """The Outcome, or None if the client hangs up first (`end()` then cancels the job)."""
        assert self.flight is not None, "start() first"
        disconnected = asyncio.ensure_future(_disconnect(request))
        try:
            return await self.flight.outcome_or(disconnected)
        finally:
            disconnected.cancel()

    def end(self) -> None:
        """Called when the answer is over, however it ended (more than once is harmless): a
        request that ends early (client gone, server stopping) stops the engine."""
        if self.ended:
            return
        self.ended = True
        self.hub.http_in_flight -= 1
        if self.flight is not None and not self.flight.finished:
            self.lane.cancel(KEY)
            self.hub.counters["http_cancelled"] += 1
        self.lane.forget(KEY)  # a request is a group of its own: nothing reuses its context

    def prompt_tokens(self) -> int:
        """Tokens of the window the model reads (BOS, prefix tail, suffix head)."""
        context_ids = getattr(self.hub.engine, "context_ids", None)
        if context_ids is None:
            return 0
        prefix_ids, suffix_ids = context_ids(self.call.prefix, self.call.suffix, self.call.cross_file)
        return len(prefix_ids) + len(suffix_ids)


async def _disconnect(request: Request) -> None:
    """Returns when the client disconnects (the body has been read, so nothing else arrives)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


class EngineStream(StreamingResponse):
    """A streamed answer that ends its engine call even if the body never starts (the
    client left before the headers went out, so the generator never ran)."""

    def __init__(self, call: EngineCall, content: AsyncIterator[bytes], **kwargs: Any) -> None:
        super().__init__(content, **kwargs)
        self.call = call

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.call.end()
