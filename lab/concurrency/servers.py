"""The four ways of serving concurrent requests that the sweep compares.

Each is driven the same way by the sweep's closed loop: `submit(key, item)` hands a
request over, `pump()` does one unit of work (a forward pass, or for `sequential` one
whole request) and returns the requests that finished during it.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Optional, Protocol

from engine.api import Engine
from engine.job import COPY_SUFFIX_CHARS
from engine.batching import BatchRunner, Ticket
from lab.baseline.autoregressive import CopyDrafts, DecodeBatch, GreedyDecode
from lab.concurrency.items import Item

DRAFTED = "autoregressive+drafts"
MODES = ("batched", "sequential", "autoregressive", DRAFTED)
DRAFT_TOKENS = 6  # the drafted baseline's longest draft (--draft-tokens)


@dataclass(frozen=True)
class Finished:
    key: int
    middle: str
    tokens: int
    forwards: int  # the request's own passes, its context encoding counted as one
    drafted: int = 0  # draft tokens fed (autoregressive+drafts)
    accepted: int = 0  # draft tokens kept


class Server(Protocol):
    def submit(self, key: int, item: Item) -> None: ...

    def pump(self) -> list[Finished]: ...


class Sequential:
    """The diffusion engine one request at a time, in arrival order (as served before
    batching: one engine worker, one request)."""

    def __init__(self, eng: Engine) -> None:
        self.eng = eng
        self.queue: deque[tuple[int, Item]] = deque()

    def submit(self, key: int, item: Item) -> None:
        self.queue.append((key, item))

    def pump(self) -> list[Finished]:
        key, item = self.queue.popleft()
        result = self.eng.infill(item.prefix, item.suffix, language=item.language)
        return [Finished(key, result.middle, result.tokens, result.forwards)]


class Batched:
    """The diffusion engine with continuous batching (engine/batching.py)."""

    def __init__(self, eng: Engine, max_batch: int) -> None:
        self.eng = eng
        self.runner = BatchRunner(eng, max_batch=max_batch)
        self.tickets: dict[int, Ticket] = {}

    def submit(self, key: int, item: Item) -> None:
        self.tickets[key] = self.runner.submit(self.eng.job(item.prefix, item.suffix, item.language))

    def pump(self) -> list[Finished]:
        self.runner.run_pass()
        done = [key for key, ticket in self.tickets.items() if ticket.done]
        finished = []
        for key in done:
            result = self.tickets.pop(key).wait()
            finished.append(Finished(key, result.middle, result.tokens, result.forwards))
        return finished


class Autoregressive:
    """The same weights decoding the middle left to right, one token per pass, batched the
    same way (lab/baseline/autoregressive.py). Its context is the same prefix window; it does not
    see the suffix. With `draft_tokens` > 0 (mode autoregressive+drafts) every pass also
    verifies a draft of up to that many tokens guessed by the diffusion sampler's copy rule
    (prompt-lookup decoding): the same text, in fewer passes when the drafts are right."""

    def __init__(self, eng: Engine, draft_tokens: int = 0) -> None:
        self.eng = eng
        self.draft_tokens = draft_tokens
        self.batch = DecodeBatch(eng.model)  # type: ignore[arg-type]
        self.joining: deque[tuple[int, Item]] = deque()
        self.keys: dict[int, int] = {}  # id(state) -> request key

    def submit(self, key: int, item: Item) -> None:
        self.joining.append((key, item))

    def drafts(self, item: Item, prefix_ids: list[int]) -> Optional[CopyDrafts]:
        """The diffusion sampler's copy source for this request: the prefix's tokens as the
        engine gives them to rule 6 (a longer stretch than the window with
        copy_context_tokens; the window's ids when the sampler's copying is off), and the
        suffix's first COPY_SUFFIX_CHARS characters where the prefix lacks a run."""
        if self.draft_tokens <= 0:
            return None
        source = self.eng.copy_source(item.prefix, prefix_ids, self.eng.settings) or prefix_ids
        suffix_ids = self.eng.tokenizer.encode(item.suffix[:COPY_SUFFIX_CHARS]) if item.suffix else []
        return CopyDrafts.of(self.eng.tokenizer, source, suffix_ids, self.draft_tokens)

    def pump(self) -> list[Finished]:
        finished = []
        while self.joining:  # join at this pass: encode the prefix (the prefill)
            key, item = self.joining.popleft()
            prefix_ids = self.eng.context_ids(item.prefix, item.suffix)[0]
            state = GreedyDecode.prefill(self.eng.model, self.eng.tokenizer, prefix_ids, item.suffix, self.eng.settings.max_tokens, drafts=self.drafts(item, prefix_ids))  # type: ignore[arg-type]
            self.keys[id(state)] = key
            if state.done:
                finished.append(state)
            self.batch.join(state)
        finished += self.batch.step()
        out = []
        for state in finished:
            assert state.result is not None
            out.append(Finished(self.keys.pop(id(state)), state.result.middle, state.result.tokens, state.result.forwards, state.drafted, state.accepted))
        return out


def make_server(mode: str, eng: Engine, concurrency: int, draft_tokens: int = DRAFT_TOKENS) -> Server:
    if mode == "batched":
        return Batched(eng, max_batch=concurrency)
    if mode == "sequential":
        return Sequential(eng)
    if mode == "autoregressive":
        return Autoregressive(eng)
    if mode == DRAFTED:
        return Autoregressive(eng, draft_tokens)
    raise ValueError(f"unknown mode {mode!r}; known: {', '.join(MODES)}")
