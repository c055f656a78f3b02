"""A checked request, ready to run alone or in a batch: its context, its forward passes.

`InfillJob` owns what the model computes for one request: the window of text it reads
(tokenized once, its encoded context reused from the cache where the text is unchanged),
the first pass that encodes that context together with the first canvas, and every pass
after it with the drafted canvases riding along (engine/lookahead.py). What each pass
decides is its `InfillRun`'s (engine/request.py). `Engine.stream` drives a job alone;
the batching worker drives many with one forward per step (engine/batching.py).
"""
from __future__ import annotations

import threading
import time
from typing import Hashable, Optional, Sequence

import torch

from engine.batching import PACKED_MIN_ROWS
from engine.drafts import candidates
from engine.healing import Healing
from engine.language import LanguageChoice
from engine.lookahead import Guess
from engine.protocols import JobEngine
from engine.request import InfillRun, Request
from engine.runs import NgramTable
from engine.sampler import Surroundings, WorkClock
from engine.types import BlockAwareConstraint, DenoiseStep, HeldWindow, MergedEncoding, PackedPasses, ReusableContext, SamplerSettings, SyntaxConstraint, WindowedConstraint
from engine.workspace.retrieve import Draft

# How much of the suffix the copy rule also looks in (sampler rule 6): ~500 tokens. The
# model's own suffix window (256 tokens) gave fewer dev gains for more passes (docs/measurements/2026-12-01-sampler.md).
COPY_SUFFIX_CHARS = 2000


class InfillJob:
    """A checked request, not started yet, so that it can run alone (Engine.stream) or
    join others in a batch (engine/batching.py): `prepare()` readies its context (the
    prefill runs in its first `forward`) and starts its InfillRun; `canvas_ids()` /
    `advance(logits)` are the run's; `final_step()` carries the InfillResult once
    `canvas_ids()` says None."""

    def __init__(self, engine: JobEngine, prefix: str, suffix: str, cfg: SamplerSettings, constraint: Optional[SyntaxConstraint], cancel: Optional[threading.Event], cross_file: str = "", cache_key: Optional[Hashable] = None, language: LanguageChoice = LanguageChoice(None, "none"), drafts: Sequence[Draft] = (), copy_table: Optional[NgramTable] = None) -> None:
        self.engine, self.suffix, self.cfg, self.constraint = engine, suffix, cfg, constraint
        # Token healing: the model sees the prefix cut before its trailing spaces/tabs or
        # inside a word's last tokens (engine/healing.py), and the answer is handed back
        # relative to the real cursor (InfillRun).
        self.prefix, self.healing = Healing.at_cursor(prefix, engine.tokenizer, whitespace=cfg.heal_cursor, word=cfg.heal_word and cfg.max_tokens > 0)
        self.cancel, self.cross_file, self.cache_key, self.language = cancel, cross_file, cache_key, language
        self.drafts = tuple(drafts)  # lines the workspace proposes, judged by the first pass (engine/drafts.py)
        self.copy_table = copy_table  # the workspace's token runs, where the copy rule looks first (engine/workspace/ngrams.py)
        self.run: Optional[InfillRun] = None
        self.reused = 0
        self.work = WorkClock()  # this request's own work: its calls below, and its share of passes shared with others (`charge`)
        self._context: object = None  # the encoded context (the model's cache), once encoded
        self._window: Optional[HeldWindow] = None  # its syntax checks' window, held while it runs (grammars/window.py WindowCache)
        self._pending: Optional[tuple[list[int], list[int], object]] = None  # (prefix ids, suffix ids, reusable cache) until the first pass encodes them
        self._drafted: list[Guess] = []  # the canvases computed beside this pass's (drafted_canvases)

    def prepare(self) -> None:
        """Tokenize the window, decide what of the context cache (of `cache_key`'s last
        request, or the engine's last) is reused, and start the first candidate. The
        context's new rows are encoded by the first pass (`forward`) when the model can
        do both in one forward (`encode_with_canvas`), else here. Call with the engine's
        lock held."""
        with self.work:
            self._prepare()

    def _prepare(self) -> None:
        engine, cfg, start = self.engine, self.cfg, time.perf_counter()
        prefix_ids, suffix_ids = engine.context_ids(self.prefix, self.suffix, self.cross_file, cfg)
        old, self.reused = engine.contexts.reusable(prefix_ids, suffix_ids, self.cache_key)
        fresh = self.reused < len(prefix_ids) + len(suffix_ids)
        if fresh and isinstance(engine.model, MergedEncoding):
            self._pending = (prefix_ids, suffix_ids, old)  # encoded by the first pass
        else:
            self._context = engine.model.encode_context(prefix_ids, suffix_ids, reuse=old)
            engine.contexts.remember(self._context, self.cache_key)
        user_prefix = self.healing.user_prefix(self.prefix)
        line_end = False
        if isinstance(self.constraint, WindowedConstraint):
            self._window = self.constraint.hold(user_prefix, self.suffix)
            # Inside a docstring being written: prose has no end the model is sure of, and a
            # middle that stays in the string is judged inert (grammars/window.py), so the
            # suggestion is the rest of the line.
            line_end = cfg.constrained and self.constraint.in_string(user_prefix, self.suffix)
        blocks = self.constraint if isinstance(self.constraint, BlockAwareConstraint) else None
        no_code_fits = blocks is not None and blocks.no_code_fits(user_prefix, self.suffix)
        opener = blocks.opens_block(user_prefix, self.suffix) if blocks is not None and cfg.constrained and not line_end and not no_code_fits else None
        copy_suffix = tuple(engine.tokenizer.encode(self.suffix[:COPY_SUFFIX_CHARS])) if cfg.copy_weight > 0 and self.suffix else ()
        # A healed request's partial checks judge the text the user gets (HealedConstraint).
        checks = self.healing.judging(self.constraint) if self.constraint is not None else None
        around = Surroundings(self.prefix, self.suffix, checks, engine.copy_source(self.prefix, prefix_ids, cfg), copy_suffix, self.copy_table, self.healing.first_text)
        window_bytes = self._window.size if self._window is not None else 0
        request = Request(around, self.constraint, self.healing, self.cancel, start, self.work, line_end, no_code_fits, opener, window_bytes,
                          blocks.language if blocks is not None else None)
        found = candidates(engine.tokenizer, self.drafts, self.healing.removed, cfg.block_size, cfg.max_tokens) if self.drafts else None
        # A separate encoding pass counts one forward; one merged into the first canvas pass counts none.
        self.run = InfillRun(engine.tokenizer, request, cfg, forwards=1 if fresh and self._pending is None else 0, drafts=found)

    @property
    def encodes_on_first_pass(self) -> bool:
        """The context is still to be encoded, by this job's next pass: its own `forward`,
        or a packed forward that encodes several jobs' contexts (`pending_context`)."""
        return self._pending is not None

    @property
    def pending_context(self) -> Optional[tuple[list[int], list[int], object]]:
        """What the next pass encodes with the first canvas: (prefix ids, suffix ids, the
        cached context it builds on); None once encoded."""
        return self._pending

    def encoded(self, context: object) -> None:
        """The context this job's first pass encoded (its own `forward`, or the batch
        runner's packed one): kept for the passes after it, and remembered for reuse."""
        self._context, self._pending = context, None
        self.engine.contexts.remember(context, self.cache_key)

    def forward(self, canvas: torch.Tensor) -> torch.Tensor:
        """This job's logits for one canvas of its own, (N,) ids -> (N, V): the model's
        pass over the cached context, or, the first time, the context's encoding and the
        canvas in one forward (`encode_with_canvas`)."""
        assert self.run is not None, "prepare() first"
        model = self.engine.model
        with self.work:
            drafted = self.drafted_canvases(canvas.tolist())
            if any(len(ids) != len(canvas) for ids in drafted):  # a grown canvas: one packed pass over canvases of two lengths
                outs = model.canvas_logits_many([self._context] * (1 + len(drafted)), [canvas] + [torch.tensor(ids, dtype=canvas.dtype, device=canvas.device) for ids in drafted])  # type: ignore[attr-defined]
                self.computed_ahead(outs[1:])
                return outs[0]
            rows = torch.stack([canvas] + [torch.tensor(ids, dtype=canvas.dtype, device=canvas.device) for ids in drafted])
            if self._pending is None:
                logits = model.canvas_logits(self._context, rows)
            else:
                assert isinstance(model, MergedEncoding)
                prefix_ids, suffix_ids, old = self._pending
                context, logits = model.encode_with_canvas(prefix_ids, suffix_ids, rows, reuse=old)
                self.encoded(context)
            self.computed_ahead(list(logits[1:]))
        return logits[0]

    def drafted_canvases(self, canvas: list[int]) -> list[list[int]]:
        """The canvases worth computing beside `canvas` in the same forward: the drafts'
        guesses of the next pass's canvas (engine/lookahead.py), `Engine.lookahead_width`
        at most. Their logits go to `computed_ahead`, in the same order."""
        assert self.run is not None, "prepare() first"
        # A grown canvas (one block longer) needs a packed pass: not the first, which encodes
        # the context with (B, N) canvases, and only with a model that packs.
        grown = self._pending is None and isinstance(self.engine.model, PackedPasses) and len(canvas) >= PACKED_MIN_ROWS
        self._drafted = self.run.guesses(canvas, self.engine.lookahead_width, grown)
        return [list(g.canvas) for g in self._drafted]

    def computed_ahead(self, logits: list[torch.Tensor]) -> None:
        assert self.run is not None, "prepare() first"
        self.run.computed_ahead(self._drafted, logits)
        self._drafted = []

    def charge(self, seconds: float) -> None:
        """Count `seconds` of a forward this job shared with others as its own work (the
        batch runner charges each job its rows' share of a packed pass)."""
        self.work.charge(seconds)

    @property
    def context(self) -> object:
        assert self.run is not None, "prepare() first"
        return self._context

    def canvas_ids(self) -> Optional[list[int]]:
        assert self.run is not None, "prepare() first"
        with self.work:  # the final checks of a candidate that ended run here
            return self.run.canvas_ids()

    def advance(self, logits: torch.Tensor) -> DenoiseStep:
        assert self.run is not None, "prepare() first"
        with self.work:
            return self.run.advance(logits)

    def final_step(self) -> DenoiseStep:
        """The answer: the last step, with the whole request's figures."""
        run = self.run
        assert run is not None and run.final is not None and run.final.result is not None, "final_step() before the answer"
        final, result = run.final, run.final.result
        result.cached_context_tokens = self.reused
        result.language, result.language_source = self.language.name, self.language.source
        result.ms = (time.perf_counter() - run.request.start) * 1000
        result.work_ms = self.work() * 1000
        self._window = None  # answered: its window may leave the cache
        if isinstance(self._context, ReusableContext):  # a context kept for reuse should not hold a batched pass's buffers
            self._context.release_scratch()
        return DenoiseStep(final.step, final.canvas, [], result.forwards, result.ms, result=result)
