"""The typed seams between the engine worker, the engine and the front ends' model hosts.

    EngineWorker(engine: StreamingEngine)      engine/worker.py: one thread, a fair queue
        └─ BatchRunner(engine: BatchingEngine)  engine/batching.py: one pass for all jobs
    ModelHost                                   what the language server runs its calls on:
        EngineHost (infill_lsp/engine_host.py: a local engine on an EngineWorker) or
        RemoteEngineHost (infill_lsp/remote.py: an HTTP client of `infill serve`)

engine.api.Engine is a BatchingEngine; an object with only `stream` and `next_edit` (a
test's scripted engine) is a StreamingEngine, whose requests the worker runs one by one.
Protocols, not base classes: each side keeps its own implementation and a type checker
(or a reader) follows a request across the hand-off. This module imports no torch.
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable, ContextManager, Hashable, Iterator, Optional, Protocol, Union, runtime_checkable

if TYPE_CHECKING:  # annotations only: engine.worker imports this module
    from engine.context_cache import ContextCache
    from engine.tokenizer import Tokenizer
    from engine.types import DenoiseStep, SamplerSettings
    from engine.worker import InfillCall, NextEditCall, Outcome


class StreamingEngine(Protocol):
    """What the engine worker needs of any engine: one request streamed pass by pass, and
    next-edit suggestions (engine.api.Engine.stream / next_edit)."""

    def stream(self, prefix: str, suffix: str, language: Optional[str] = None, cancel: Optional[threading.Event] = None, *, cross_file: str = "", filename: Optional[str] = None, detect_language: bool = False, **settings: Any) -> Iterator["DenoiseStep"]: ...

    def next_edit(self, document: str, cursor: Any, history: Any = None, language: Optional[str] = None, cancel: Optional[threading.Event] = None, **limits: Any) -> Any: ...


class JobEngine(Protocol):
    """What a request's job reads of its engine (engine.api.Engine; engine/job.py): the
    tokenizer and model, the cache of encoded contexts, how many drafted canvases ride in
    a pass, and the window of text the model reads."""

    tokenizer: "Tokenizer"
    model: Any
    contexts: "ContextCache"
    lookahead_width: int

    def context_ids(self, prefix: str, suffix: str, cross_file: str = "", settings: Optional["SamplerSettings"] = None) -> tuple[list[int], list[int]]: ...

    def copy_source(self, prefix: str, prefix_ids: list[int], settings: "SamplerSettings") -> list[int]: ...


class BatchJob(Protocol):
    """A checked request that joins a batch (engine.job.InfillJob): `prepare` readies its
    context, then `canvas_ids` / `advance(logits)` once per pass until `canvas_ids` is
    None, and `final_step` carries the result. A pass's logits come from a packed
    forward over several jobs' `context`s, or from the job's own `forward(canvas)`,
    which a job that `encodes_on_first_pass` needs for its first pass (its context is
    encoded in that same forward) unless the model packs several jobs' encodings into one
    (`pending_context` in, `encoded` out: engine.types.PackedEncoding)."""

    cancel: Optional[threading.Event]
    run: Any  # None until prepared: a job cancelled while it waited never ran

    def prepare(self) -> None: ...

    @property
    def context(self) -> object: ...

    @property
    def encodes_on_first_pass(self) -> bool: ...

    @property
    def pending_context(self) -> Optional[tuple[list[int], list[int], object]]: ...  # (prefix ids, suffix ids, reused context) its first pass encodes

    def encoded(self, context: object) -> None: ...  # the context a packed first pass encoded for it

    def forward(self, canvas: Any) -> Any: ...

    def canvas_ids(self) -> Optional[list[int]]: ...

    def advance(self, logits: Any) -> "DenoiseStep": ...

    def final_step(self) -> "DenoiseStep": ...

    def charge(self, seconds: float) -> None: ...  # count seconds of a packed forward as this job's own work

    def drafted_canvases(self, canvas: list[int]) -> list[list[int]]: ...  # canvases worth computing beside `canvas` (engine/lookahead.py)

    def computed_ahead(self, logits: list[Any]) -> None: ...  # their logits, in that order, from the same forward


@runtime_checkable
class BatchingEngine(StreamingEngine, Protocol):
    """An engine whose requests can share forward passes (engine.api.Engine): BatchRunner
    builds its jobs with `job`, runs `model` on `device` under `lock` (the engine's one
    lock: one forward at a time), and the worker drops a finished key's cached context."""

    model: Any
    device: Any
    lock: ContextManager[Any]

    def job(self, prefix: str, suffix: str, language: Optional[str] = None, cancel: Optional[threading.Event] = None, *, cross_file: str = "", cache_key: Optional[Hashable] = None, filename: Optional[str] = None, detect_language: bool = False, **settings: Any) -> BatchJob: ...

    def drop_context(self, key: Hashable) -> None: ...


class ModelHost(Protocol):
    """What the language server runs its model calls on, local or remote: both hosts take
    a call for a key (a document), supersede and cancel per key, and report readiness."""

    @property
    def model_name(self) -> Optional[str]: ...

    @property
    def requested_dir(self) -> Optional[str]: ...

    @property
    def loaded(self) -> bool: ...

    def expect_load(self) -> None: ...  # a load is coming: requests wait for it instead of being refused

    async def load(self, model_dir: Optional[str]) -> str: ...

    async def wait_ready(self) -> Any: ...

    def model_dir_notice(self) -> Optional[str]: ...

    def supersede(self, key: Hashable) -> threading.Event: ...

    def cancel(self, key: Hashable) -> None: ...

    def forget(self, key: Hashable) -> None: ...

    async def run(self, key: Hashable, call: Union["InfillCall", "NextEditCall"], cancel: threading.Event, on_outcome: Optional[Callable[["Outcome"], None]] = None) -> "Outcome": ...

    def close(self) -> None: ...
