"""Many requests at once: one forward pass per step over every request in flight.

A lone request spends most of a denoising pass on fixed costs (reading every weight for a
handful of canvas rows). With several requests in flight, `BatchRunner.run_pass()` packs
all their canvases into one forward (`InfillTransformer.canvas_logits_many`: shared linear
layers, attention per request against its own cached context) and then advances each
request's sampler on its own rows. Continuous batching: a request joins at the next pass
and leaves as soon as its middle closes, is cancelled or fails; the others go on. A
joining request's context is encoded by its first pass, together with its first canvas,
and that pass too is packed with the other requests' (`encode_with_canvas_many`: new
contexts and canvases over cached ones in one forward; on a CPU in forwards of at most
PACKED_MAX_ROWS_CPU rows). Each request keeps its own settings, syntax constraint, cancel
flag and candidates: the per-request code is exactly the solo path's (api.InfillJob,
sampler.Denoising), only the forward pass is shared. A request's rows of a packed pass
are bit for bit its solo pass's, and so is the context a packed pass encodes for it (each
request's attention is its own call, with the solo call's shapes; the shared matmuls give
a row the same sums from 4 rows on, so tiny canvases run alone: PACKED_MIN_ROWS), and its
deadline counts its own work, so a line's middle does not depend on what else is in the
batch (docs/batching.md, "Same middles as alone").

The runner has no thread: the engine worker (engine/worker.py, the one thread that runs
every model call of a server or of `infill batch`) calls `run_pass()` while `has_work()`,
and the benchmarks drive one directly.
"""
from __future__ import annotations

import logging
import threading
import time
from collections import deque
from typing import Callable, NamedTuple, Optional, TypeVar

import torch

from engine.protocols import BatchingEngine, BatchJob
from engine.context_cache import kept_tokens
from engine.types import DEFAULT_MAX_BATCH, DenoiseStep, InfillError, InfillResult, PackedEncoding, PackedPasses, model_failure

log = logging.getLogger("infill.batching")
T = TypeVar("T")

# A canvas of fewer rows than this has its pass alone, not packed with the others: a
# matmul over 1-3 rows takes another kernel than one over more (MKL, one thread), whose
# sums round differently, so a packed tiny canvas's logits were not its solo ones. From 4
# rows on, a row's result was measured bit for bit the same whatever rows share the
# matmul; 8 (the default block) leaves a margin. Tiny canvases come only from
# max_tokens or block_size below 8.
PACKED_MIN_ROWS = 8


# A packed forward on a CPU holds at most this many rows; the requests beyond go into the
# next forward of the same pass. Past ~2,000 rows the matmuls' inputs and outputs outgrow
# the caches and a row costs more: 48 real lines' first passes (~15,000 rows) took 1.40 s
# of CPU in one forward, 1.18-1.21 s in forwards of at most 1,024-4,096 rows and 1.34 s
# one by one (bf16, one thread, 2026-12-07). A GPU packs every request into one.
PACKED_MAX_ROWS_CPU = 2048


def packed_max_rows(device: object) -> Optional[int]:
    """The most rows a packed forward holds on `device` (None: no bound)."""
    return PACKED_MAX_ROWS_CPU if str(device).startswith("cpu") else None


class _Rows(NamedTuple):
    """A request's part of a packed forward: its canvas and the drafted ones beside it,
    the context it encodes in this pass (None: it has one), and how many rows it adds."""

    index: int  # its place in the pass's tickets
    ticket: "Ticket"
    canvas: torch.Tensor
    drafted: list[torch.Tensor]
    pending: Optional[tuple[list[int], list[int], object]]  # (prefix ids, suffix ids, reused context)
    rows: int


def _groups(items: list[_Rows], max_rows: Optional[int]) -> list[list[_Rows]]:
    """`items` in their order, cut into forwards of at most `max_rows` rows each (an item
    larger than that is a forward of its own)."""
    groups: list[list[_Rows]] = []
    rows = 0
    for item in items:
        if not groups or (max_rows is not None and rows + item.rows > max_rows):
            groups.append([])
            rows = 0
        groups[-1].append(item)
        rows += item.rows
    return groups


class Ticket:
    """A submitted request: its steps go to `on_step` and its end to `on_done` (both called
    on the thread running the passes: they must not block); `wait()` blocks for the end."""

    def __init__(self, job: BatchJob, on_step: Optional[Callable[[DenoiseStep], None]] = None, on_done: Optional[Callable[["Ticket"], None]] = None):
        self.job = job
        self.on_step = on_step
        self.on_done = on_done  # called once, on the worker thread, when it ends (result or error)
        self.final: Optional[DenoiseStep] = None
        self.canvas: Optional[list[int]] = None  # the canvas of the pass being run
        self.error: Optional[BaseException] = None
        self._done = threading.Event()

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: Optional[float] = None) -> InfillResult:
        """The result; raises the request's error (an InfillError for bad input)."""
        if not self._done.wait(timeout):
            raise TimeoutError("the request did not finish in time")
        if self.error is not None:
            raise self.error
        assert self.final is not None and self.final.result is not None
        return self.final.result

    def _deliver(self, step: DenoiseStep) -> None:
        if self.on_step is not None:
            self.on_step(step)
        if step.result is not None:
            self.final = step
            self._end()

    def _fail(self, error: BaseException) -> None:
        self.error = error
        self._end()

    def _end(self) -> None:
        self._done.set()
        if self.on_done is not None:
            self.on_done(self)


def _release_cached_memory() -> None:
    """After an out-of-memory error: hand the blocks torch's CUDA allocator keeps cached
    back to the device, so the requests after the failed one find room."""
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def cancelled_before_start() -> DenoiseStep:
    """The final step of a request cancelled while it waited to join: no pass was spent."""
    return DenoiseStep(0, [], [], 0, 0.0, result=InfillResult("", 0, 0, 0.0, "cancelled"))


class BatchRunner:
    """Continuous batching over one engine (see the module docstring)."""

    def __init__(self, engine: BatchingEngine, max_batch: int = DEFAULT_MAX_BATCH):
        if max_batch < 1:
            raise ValueError("max_batch must be at least 1")
        self.engine = engine
        self.max_batch = max_batch
        self.passes = 0
        self._joining: deque[Ticket] = deque()
        self._active: list[Ticket] = []
        self._guard = threading.Lock()  # submit() may come from any thread

    def submit(self, job: BatchJob, on_step: Optional[Callable[[DenoiseStep], None]] = None, on_done: Optional[Callable[[Ticket], None]] = None) -> Ticket:
        ticket = Ticket(job, on_step, on_done)
        with self._guard:
            self._joining.append(ticket)
        return ticket

    def has_work(self) -> bool:
        with self._guard:
            return bool(self._joining or self._active)

    @property
    def in_flight(self) -> int:
        with self._guard:
            return len(self._joining) + len(self._active)

    def run_pass(self) -> int:
        """Admit joiners, run one forward over every unfinished canvas, advance each request.
        Returns the number of canvases in the pass."""
        with self.engine.lock:
            self._admit()
            ready = self._collect()
            for ticket, logits in zip(ready, self._forward(ready)):
                if logits is not None and self._guarded(ticket, lambda t=ticket, l=logits: t._deliver(t.job.advance(l)))[0]:
                    self._finish_if_done(ticket)  # a middle that closed now is delivered now
            self.passes += bool(ready)
            return len(ready)

    def _admit(self) -> None:
        while len(self._active) < self.max_batch:
            with self._guard:
                if not self._joining:
                    return
                ticket = self._joining.popleft()
            cancel = ticket.job.cancel
            if cancel is not None and cancel.is_set():
                self._guarded(ticket, lambda t=ticket: t._deliver(cancelled_before_start()))
            elif self._guarded(ticket, ticket.job.prepare)[0]:  # the context encoding (prefill)
                with self._guard:
                    self._active.append(ticket)

    def _collect(self) -> list[Ticket]:
        """Tickets with a canvas for this pass; finished ones deliver their result and leave."""
        return [ticket for ticket in list(self._active) if not self._finish_if_done(ticket)]

    def _finish_if_done(self, ticket: Ticket) -> bool:
        """Deliver the result and leave if the request has no next canvas (its middle
        closed, it was cancelled, it failed); else note the canvas for the next pass."""
        ok, ids = self._guarded(ticket, ticket.job.canvas_ids)
        if ok and ids is None:
            self._leave(ticket)
            self._guarded(ticket, lambda: ticket._deliver(ticket.job.final_step()))
        ticket.canvas = ids
        return ids is None

    def _forward(self, ready: list[Ticket]) -> list[Optional[torch.Tensor]]:
        """The pass's logits for every ticket: its canvases packed into one forward (a few
        on a CPU: PACKED_MAX_ROWS_CPU); if a packed forward fails, its requests run each alone,
        so one bad request (a position past the model's table, say) fails alone. A
        request whose context is still to be encoded (just admitted) has it encoded in
        the same forward as its first canvas: packed with the others' rows where the
        model can (`encode_with_canvas_many`), else alone (InfillJob.forward). A tiny
        canvas runs alone (PACKED_MIN_ROWS). Each packed request is charged its rows'
        share of the forward's time as its own work (the clock its deadline reads:
        sampler.WorkClock)."""
        model, device = self.engine.model, self.engine.device
        canvases = [torch.tensor(t.canvas, dtype=torch.long, device=device) for t in ready]
        logits: list[Optional[torch.Tensor]] = [None] * len(ready)
        encodes = isinstance(model, PackedEncoding)
        packable = [i for i, t in enumerate(ready) if len(t.canvas) >= PACKED_MIN_ROWS and (encodes or not t.job.encodes_on_first_pass)]
        if isinstance(model, PackedPasses) and len(packable) > 1:
            try:
                # Each request's drafted canvases (engine/lookahead.py) ride along, against
                # the same context: attention runs canvas by canvas, so they share its slots.
                items = [self._rows(i, ready[i], canvases[i], [torch.tensor(ids, dtype=torch.long, device=device) for ids in ready[i].job.drafted_canvases(ready[i].canvas)]) for i in packable]
            except Exception:
                log.exception("batched pass failed; running its requests one by one")
                items = []
            for group in _groups(items, packed_max_rows(device)):
                if len(group) > 1:  # a group of one runs alone, below: the same bits
                    try:
                        self._packed(group, logits)
                    except Exception:
                        log.exception("batched pass failed; running its requests one by one")
        for i, (ticket, canvas) in enumerate(zip(ready, canvases)):
            if logits[i] is None:
                logits[i] = self._guarded(ticket, lambda t=ticket, c=canvas: t.job.forward(c))[1]
        return logits

    @staticmethod
    def _rows(index: int, ticket: Ticket, canvas: torch.Tensor, drafted: list[torch.Tensor]) -> "_Rows":
        """What a ticket brings to a packed forward, and how many rows: its canvases, and
        the new rows of a context it encodes in this pass."""
        canvas_rows = len(canvas) * (1 + len(drafted))
        pending = ticket.job.pending_context if ticket.job.encodes_on_first_pass else None
        if pending is None:
            return _Rows(index, ticket, canvas, drafted, None, canvas_rows)
        prefix_ids, suffix_ids, old = pending
        new = len(prefix_ids) + len(suffix_ids) - kept_tokens(old, prefix_ids, suffix_ids)
        return _Rows(index, ticket, canvas, drafted, pending, canvas_rows + new)

    def _packed(self, group: list["_Rows"], logits: list[Optional[torch.Tensor]]) -> None:
        """One forward over `group`'s requests: new contexts encoded with their first
        canvases, the others' canvases over their cached contexts."""
        model = self.engine.model
        encodes = [(*item.pending[:2], torch.stack([item.canvas, *item.drafted]), item.pending[2]) for item in group if item.pending is not None]
        others = [item for item in group if item.pending is None]
        contexts = [item.ticket.job.context for item in others for _ in range(1 + len(item.drafted))]
        canvases = [c for item in others for c in (item.canvas, *item.drafted)]
        started = time.perf_counter()
        if encodes:
            firsts, outs = model.encode_with_canvas_many(encodes, contexts, canvases)
        else:
            firsts, outs = [], model.canvas_logits_many(contexts, canvases)
        seconds, total = time.perf_counter() - started, sum(item.rows for item in group)
        new, ahead = iter(firsts), 0
        for item in group:
            job = item.ticket.job
            if item.pending is not None:
                context, out = next(new)
                job.encoded(context)
                first, later = out[0], list(out[1:])
            else:
                first, later = outs[ahead], outs[ahead + 1 : ahead + 1 + len(item.drafted)]
                ahead += 1 + len(item.drafted)
            logits[item.index] = first
            job.computed_ahead(later)
            job.charge(seconds * item.rows / max(1, total))

    def _guarded(self, ticket: Ticket, action: Callable[[], T]) -> tuple[bool, Optional[T]]:
        """Run one request's part of a pass; an error ends that request only (its ticket
        carries the exception: an InfillError's message is for the user, anything else
        is a bug, logged here)."""
        try:
            return True, action()
        except Exception as exc:  # a bug in one request must not take the others down
            if not isinstance(exc, InfillError):
                log.exception("a batched request failed")
                if model_failure(exc).kind == "out_of_memory":
                    _release_cached_memory()
            self._fail(ticket, exc)
        return False, None

    def _leave(self, ticket: Ticket) -> None:
        with self._guard:
            if ticket in self._active:
                self._active.remove(ticket)

    def _fail(self, ticket: Ticket, error: BaseException) -> None:
        self._leave(ticket)
        ticket._fail(error)
