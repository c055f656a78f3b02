"""The ways of serving concurrent requests that the sweep compares.

Each is driven the same way by the sweep's closed loop: `submit(key, item)` hands a
request over, `pump()` does one unit of work (a forward pass, or for `sequential` one
whole request) and returns the requests that finished during it. An item with a workspace
(real lines, lab/concurrency/real_lines_speed.py) is sent with it: the diffusion engine's requests
carry its WorkspaceContext and filename, and `autoregressive+workspace` verifies the same
workspace drafts.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Optional, Protocol

from engine.api import Engine
from engine.drafts import VERIFIED_DRAFTS
from engine.job import COPY_SUFFIX_CHARS
from engine.batching import BatchRunner, Ticket
from engine.healing import Healing
from lab.baseline.autoregressive import CopyDrafts, DecodeBatch, GreedyDecode, line_drafts
from lab.concurrency.items import Item

DRAFTED = "autoregressive+drafts"
MODES = ("batched", "sequential", "autoregressive", DRAFTED)
# The left-to-right decode given the workspace's drafts too (real lines with a workspace):
# its first pass verifies the lines the workspace proposes, later passes the copy drafts.
WORKSPACE_DRAFTED = "autoregressive+workspace"
ALL_MODES = MODES + (WORKSPACE_DRAFTED,)
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
        result = self.eng.infill(item.prefix, item.suffix, language=item.language, filename=item.filename, workspace=item.workspace)
        return [Finished(key, result.middle, result.tokens, result.forwards)]


class Batched:
    """The diffusion engine with continuous batching (engine/batching.py)."""

    def __init__(self, eng: Engine, max_batch: int) -> None:
        self.eng = eng
        self.runner = BatchRunner(eng, max_batch=max_batch)
        self.tickets: dict[int, Ticket] = {}

    def submit(self, key: int, item: Item) -> None:
        self.tickets[key] = self.runner.submit(self.eng.job(item.prefix, item.suffix, item.language, filename=item.filename, workspace=item.workspace))

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
    (prompt-lookup decoding): the same text, in fewer passes when the drafts are right.
    With `workspace_drafts` > 0 (mode autoregressive+workspace) the first pass also verifies
    up to that many of the lines the item's workspace proposes for the cursor, the list the
    diffusion engine judges (lab/baseline/autoregressive.py `line_drafts`, `prefill_tree`).

    A prefix ending in spaces or tabs (the cursor after a line's indentation) is healed as
    the diffusion engine heals it (engine/healing.py): the model sees the prefix cut before
    them and writes the indentation itself; the middle is handed back from the real
    cursor. The held-out middles start at a line's start, where this changes nothing."""

    def __init__(self, eng: Engine, draft_tokens: int = 0, workspace_drafts: int = 0) -> None:
        self.eng = eng
        self.draft_tokens = draft_tokens
        self.workspace_drafts = workspace_drafts
        self.batch = DecodeBatch(eng.model)  # type: ignore[arg-type]
        self.joining: deque[tuple[int, Item]] = deque()
        self.keys: dict[int, tuple[int, Healing]] = {}  # id(state) -> (request key, its healing)

    def submit(self, key: int, item: Item) -> None:
        self.joining.append((key, item))

    def drafts(self, item: Item, prefix: str, prefix_ids: list[int]) -> Optional[CopyDrafts]:
        """The diffusion sampler's copy source for this request: the prefix's tokens as the
        engine gives them to rule 6 (a longer stretch than the window with
        copy_context_tokens; the window's ids when the sampler's copying is off), and the
        suffix's first COPY_SUFFIX_CHARS characters where the prefix lacks a run."""
        if self.draft_tokens <= 0:
            return None
        source = self.eng.copy_source(prefix, prefix_ids, self.eng.settings) or prefix_ids
        suffix_ids = self.eng.tokenizer.encode(item.suffix[:COPY_SUFFIX_CHARS]) if item.suffix else []
        return CopyDrafts.of(self.eng.tokenizer, source, suffix_ids, self.draft_tokens)

    def first_drafts(self, item: Item, removed: str) -> list[list[int]]:
        """The workspace's candidate lines for the item's cursor as token drafts (none
        without a workspace or with workspace_drafts 0): `WorkspaceContext.drafts` on the
        user's text, as the diffusion engine asks it (engine/api.py `job`)."""
        if self.workspace_drafts <= 0 or item.workspace is None or not self.eng.settings.workspace_drafts:
            return []
        drafts = item.workspace.drafts(item.prefix, item.suffix, item.filename)
        return line_drafts(self.eng.tokenizer, drafts, removed, self.workspace_drafts, self.eng.settings.max_tokens)

    def pump(self) -> list[Finished]:
        finished = []
        while self.joining:  # join at this pass: encode the prefix (the prefill)
            key, item = self.joining.popleft()
            prefix, healing = Healing.at_cursor(item.prefix, self.eng.tokenizer, whitespace=self.eng.settings.heal_cursor, word=False)
            prefix_ids = self.eng.context_ids(prefix, item.suffix)[0]
            state = GreedyDecode.prefill(self.eng.model, self.eng.tokenizer, prefix_ids, item.suffix, self.eng.settings.max_tokens, drafts=self.drafts(item, prefix, prefix_ids),  # type: ignore[arg-type]
                                         first_drafts=self.first_drafts(item, healing.removed))
            self.keys[id(state)] = (key, healing)
            if state.done:
                finished.append(state)
            self.batch.join(state)
        finished += self.batch.step()
        out = []
        for state in finished:
            assert state.result is not None
            key, healing = self.keys.pop(id(state))
            out.append(Finished(key, healing.user_middle(state.result.middle), state.result.tokens, state.result.forwards, state.drafted, state.accepted))
        return out


def make_server(mode: str, eng: Engine, concurrency: int, draft_tokens: int = DRAFT_TOKENS, workspace_drafts: int = VERIFIED_DRAFTS) -> Server:
    if mode == "batched":
        return Batched(eng, max_batch=concurrency)
    if mode == "sequential":
        return Sequential(eng)
    if mode == "autoregressive":
        return Autoregressive(eng)
    if mode == DRAFTED:
        return Autoregressive(eng, draft_tokens)
    if mode == WORKSPACE_DRAFTED:
        return Autoregressive(eng, draft_tokens, workspace_drafts)
    raise ValueError(f"unknown mode {mode!r}; known: {', '.join(ALL_MODES)}")
