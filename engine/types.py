"""The engine's public, typed surface: what a front end sends in and gets back.

Front ends (the CLI, the LSP server, the WebSocket server) only ever see these types;
they never reach into the sampler or the model.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, Collection, Mapping, Optional, Protocol, Sequence, runtime_checkable

if TYPE_CHECKING:
    import torch


# Infill jobs denoised together (docs/batching.md: the live load test gained a third over 32,
# nothing more with 128 or 256). Here, not in engine/worker.py: the worker and the batch
# runner both read it, and the worker imports the runner.
DEFAULT_MAX_BATCH = 64


class InfillError(Exception):
    """A user-facing error: bad input, missing model, corrupt checkpoint.

    Its message is one line that says what is wrong and, where possible, how to fix it.
    Front ends print it without a traceback.
    """


class ModelFailure(Exception):
    """The engine could not finish one request, through no fault of its input: the model
    ran out of memory, a forward pass timed out, or it raised. That request ends with
    this error and the engine goes on serving the others (engine/batching.py,
    engine/worker.py). `kind` is "out_of_memory", "timeout" or "error"; the message is
    one sentence for the user. The original exception is its `__cause__` (for the log)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind

    @property
    def retryable(self) -> bool:
        """Worth retrying as it is (memory or time were short now), unlike a bug."""
        return self.kind != "error"


def model_failure(error: BaseException) -> ModelFailure:
    """What an exception raised inside the model's work means for the request. Recognised
    by name, so the serving core needs no torch import: torch.OutOfMemoryError (CUDA),
    MemoryError and the CPU allocator's "can't allocate memory" RuntimeError; TimeoutError."""
    if isinstance(error, ModelFailure):
        return error
    names = {cls.__name__ for cls in type(error).__mro__}
    text = str(error).lower()
    if names & {"OutOfMemoryError", "MemoryError"} or "out of memory" in text or "can't allocate memory" in text:
        return ModelFailure("out_of_memory", "the model ran out of memory on this request; retry, or ask for "
                            "fewer tokens or a shorter context (other requests go on)")
    if "TimeoutError" in names:
        return ModelFailure("timeout", "a forward pass of the model timed out on this request; retry it")
    return ModelFailure("error", f"the engine failed on this request ({type(error).__name__}); the server log "
                        "has the details")


# The longest middle any request may ask for, on every surface (CLI, batch, LSP, live
# protocol, HTTP API): one bound in the one schema (issue 26 found four). A middle longer
# than this is no completion, and the embedded model's 4096 positions hold it beside its
# default context (1024 prefix + 256 suffix tokens).
MAX_TOKENS = 2048

ORDERS = ("contiguous", "left_to_right", "confidence")  # SamplerSettings.order


def knob(default: Any, low: Optional[float] = None, high: Optional[float] = None, *, client: bool = False, choices: tuple[str, ...] = ()) -> Any:
    """A settings field: its default (whose type is the knob's type), inclusive bounds for
    numbers, the allowed values for text, and whether remote clients may set it (the live
    protocol lets clients set only these; the rest bound the work a request costs)."""
    return field(default=default, metadata={"range": (low, high), "client": client, "choices": choices})


@dataclass(frozen=True)
class SamplerSettings:
    """Knobs of the denoising sampler. Defaults were chosen by measurement (see
    docs/sampler.md for the sweep and the command that reproduces it).

    This dataclass is the one settings schema: every front end (LSP configuration, the
    live protocol, the batch contract) and `Engine.infill` validate through
    `check_knobs(SamplerSettings, ...)`, which reads types, bounds and who may set what
    from the fields below."""

    max_tokens: int = knob(64, 0, MAX_TOKENS, client=True)  # most tokens the middle may have
    block_size: int = knob(8, 1, 256, client=True)  # canvas grows by this many masked positions at a time (a line is ~8 tokens)
    confidence_threshold: float = knob(0.9, 0.0, 1.0, client=True)  # commit every masked position at least this sure (with `contiguous`: each of the run)
    edit_threshold: float = knob(0.9, 0.0, 1.0, client=True)  # rewrite a committed canvas token if the model is this sure of another
    max_edit_passes: int = knob(0, 0, 16, client=True)  # extra passes spent only on token-to-token edits once the middle is closed (edits also happen during every pass)
    temperature: float = knob(0.0, 0.0, 5.0, client=True)  # 0 = greedy (deterministic)
    constrained: bool = knob(True, client=True)  # let the syntax constraint veto commits (when one exists)
    context_tokens: int = knob(1024, 1, 65536)  # most prefix tokens given to the model (infill's own models: the trained window)
    suffix_tokens: int = knob(256, 0, 65536)  # most suffix tokens given to the model
    seed: int = knob(0, 0, 2**31 - 1, client=True)  # used only when temperature > 0
    candidates: int = knob(2, 1, 8)  # model candidates tried when the syntax check refuses a middle (1 = no retry; 2 adds the left-to-right last resort, 3 a middle decoded without vetoes that only the final check judges; more are the same as 3)
    allow_end: bool = knob(True)  # False: the middle fills exactly max_tokens (evaluation with the oracle length)
    # Which masked positions a pass may commit: "contiguous" (text order: the first masked
    # position, then the next while each is sure; docs/sampler.md), "left_to_right" (only
    # the first: one token per pass, the cautious candidate), "confidence" (every position
    # at least `confidence_threshold` sure, anywhere: Fast-dLLM's rule).
    order: str = knob("contiguous", client=True, choices=ORDERS)
    end_in_run: bool = knob(True, client=True)  # a contiguous run may end with a sure end-of-middle (the middle closes in the same pass)
    copy_weight: float = knob(0.3, 0.0, 1.0, client=True)  # mix a copy-from-context guess into the next position's probabilities (see sampler rule 6)
    copy_run_top: int = knob(2, 0, 64, client=True)  # extend a contiguous run with the copy guess while it is among the model's N most likely tokens at the position (0 = off; sampler rule 7)
    end_after_newline: bool = knob(True, client=True)  # a pass whose text ends with a newline also writes the end of middle when it is the model's best guess there (sampler rule 7)
    end_at_closer: bool = knob(True, client=True)  # end the middle where the model would write the closer the suffix already starts with, if the text so far is valid (sampler rule 8)
    copy_context_tokens: int = knob(2048, 0, 65536)  # prefix tokens the copy guess looks in (may exceed context_tokens)
    cross_file_share: float = knob(0.25, 0.0, 1.0)  # at most this share of the prefix window goes to context from other files (engine/context_window.py)
    # Time one request may work, its candidates included: past it no further pass runs and
    # the request answers with what it has (stop reason "deadline"; 0 = after the first
    # pass). A 3000-token request ran 11 minutes on a CPU with nothing to show (issue 26).
    # It counts the request's own work (engine/sampler.py WorkClock), not the passes of the
    # other requests batched with it nor the wait for a turn (issue 35).
    deadline_seconds: float = knob(60.0, 0.0, 3600.0)
    workspace_copy: bool = knob(True, client=True)  # the copy rule also looks in the workspace's other files (engine/workspace/ngrams.py, docs/workspace.md)
    workspace_drafts: bool = knob(True, client=True)  # lines the workspace proposes for the cursor's line are verified by the model in one pass, and the likely one is the middle (engine/drafts.py, docs/workspace.md)
    edit_drafts: bool = knob(False, client=True)  # when no workspace draft is kept, the best one judged starts the canvas and the model edits it into the line that fits (engine/near_edit.py, docs/workspace.md)
    draft_context: bool = knob(False, client=True)  # the best drafts' places (each line with its neighbours) go at the head of the model's window, for a model trained to read them (engine/workspace/snippets.py, docs/workspace.md)
    heal_cursor: bool = knob(True, client=True)  # a prefix ending in spaces/tabs is cut before them and the model writes them (token healing, engine/healing.py, docs/ladder.md)
    heal_word: bool = knob(True, client=True)  # a prefix ending inside a word is cut before its last tokens and the middle's first token must write them again (engine/healing.py heal_word)

    def replace(self, **changes: object) -> "SamplerSettings":
        """A copy with some knobs changed (None keeps a knob); a knob that is unknown or
        out of its bounds is a SettingsError."""
        return replace(self, **check_knobs(SamplerSettings, {k: v for k, v in changes.items() if v is not None}))  # type: ignore[arg-type]


class SettingsError(InfillError):
    """A setting that is unknown, of the wrong type or out of bounds; `name` says which."""

    def __init__(self, message: str, name: Optional[str] = None) -> None:
        super().__init__(message)
        self.name = name


def brief(value: object, limit: int = 40) -> str:
    """repr() of client input, cut short: errors must not echo megabytes back."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def client_knobs(schema: type) -> frozenset[str]:
    """The knobs of `schema` that remote clients may set."""
    return frozenset(f.name for f in fields(schema) if f.metadata.get("client"))


def check_knob(schema: type, name: object, value: object, *, allowed: Optional[Collection[str]] = None, upper: Optional[Mapping[str, float]] = None) -> object:
    """One knob of `schema` checked against its field: the value to use (ints given for a
    float knob become floats), or SettingsError. `allowed` narrows which knobs may be
    set; `upper` lowers some upper bounds (a server's own caps)."""
    spec = {f.name: f for f in fields(schema)}
    if not isinstance(name, str) or name not in spec or (allowed is not None and name not in allowed):
        choices = sorted(spec if allowed is None else set(allowed) & set(spec))
        raise SettingsError(f"unknown setting {brief(name)}; known: {', '.join(choices)}", name if isinstance(name, str) else None)
    meta = spec[name].metadata
    default = spec[name].default
    low, high = meta.get("range", (None, None))
    if upper and name in upper:
        high = upper[name] if high is None else min(high, upper[name])
    if isinstance(default, bool):
        ok, want = isinstance(value, bool), "true or false"
    elif isinstance(default, str):
        ok, want = value in meta.get("choices", ()), "one of " + ", ".join(meta.get("choices", ()))
    else:
        kind = "an integer" if isinstance(default, int) else "a number"
        number = isinstance(value, int) if isinstance(default, int) else isinstance(value, (int, float))
        ok = number and not isinstance(value, bool) and (low is None or value >= low) and (high is None or value <= high)  # type: ignore[operator]
        want = f"{kind} in [{low}, {high}]" if high is not None else f"{kind} >= {low}" if low is not None else kind
        if ok and isinstance(default, float):
            value = float(value)  # type: ignore[arg-type]
    if not ok:
        raise SettingsError(f"setting {name!r} must be {want}; got {brief(value)}", name)
    return value


def check_knobs(schema: type, raw: Mapping[str, object], *, allowed: Optional[Collection[str]] = None, upper: Optional[Mapping[str, float]] = None) -> dict[str, object]:
    """Every knob of `raw` checked (check_knob); the first bad one is a SettingsError."""
    return {name: check_knob(schema, name, value, allowed=allowed, upper=upper) for name, value in raw.items()}


@dataclass(frozen=True)
class InfillRequest:
    prefix: str
    suffix: str
    language: Optional[str] = None
    settings: SamplerSettings = field(default_factory=SamplerSettings)


@dataclass
class InfillResult:
    """A finished middle and the figures that describe how it was made."""

    middle: str
    tokens: int  # tokens in the middle
    forwards: int  # model forward passes spent: canvas passes (a new context is encoded in the first: encode_with_canvas), plus one for a context encoded on a pass of its own
    ms: float  # wall time in milliseconds, model loading excluded
    stop_reason: str  # "end_of_middle" | "max_tokens" | "cancelled" | "empty" | "stalled" (a pass could write nothing: a bug) | "vetoed" (closed where the constraint refused every token) | "rejected" | "deadline" (deadline_seconds ran out: the text written so far) | "bounded" (the work bound, engine/stopping.py WASTE_BOUND: the best accepted text so far; "rejected" when there was none); every reason and its meaning: engine/stopping.py STOP_REASONS | "indentation" (the cursor's line is indented where no code may start: answered empty with no pass) | "degenerate" (the middle repeated itself, engine/degenerate.py: answered empty)
    edits: int = 0  # token-to-token rewrites applied
    vetoed: int = 0  # commits refused by the syntax constraint
    cached_context_tokens: int = 0  # context tokens whose keys/values came from the cache
    candidates_tried: int = 1
    language: Optional[str] = None  # the request's language (engine/language.py); it picks the syntax constraint
    language_source: str = "none"  # where it came from: "request" | "filename" | "detected" | "none"
    written: int = 0  # tokens the sampler wrote, all candidates: commits, ends, edits (forwards <= written + 2)
    draft: str = ""  # where the middle came from when it is a workspace line: "workspace" (a verified draft kept as is, engine/drafts.py), "edited" (a draft the model edited, engine/near_edit.py), else ""
    draft_origin: str = ""  # the workspace place that draft came from, "path:line" (relative path, 1-based line; engine/workspace/retrieve.py Draft.origin), else ""
    drafts_verified: int = 0  # drafts the model read in the request's verification pass (0: none offered)
    replayed: int = 0  # passes of a later candidate replayed from an earlier one's logits, no forward spent (engine/request.py, REPLAY_BYTES)
    end_rule: str = ""  # which rule ended the middle (engine/ending.py END_RULES: "model", "closer", "newline", "valid", "veto", "line_end", "draft"), "" when none did (max_tokens, deadline, cancelled)
    lookahead: dict[str, int] = field(default_factory=dict)  # tokens committed by passes replayed from drafted canvases, by draft source (engine/lookahead.py)
    lookahead_passes: int = 0  # passes replayed from drafted canvases: no forward spent
    work_ms: float = 0.0  # the request's own work in milliseconds (engine/sampler.py WorkClock: its share of shared passes, not the other requests'): what deadline_seconds counts

    @property
    def tokens_per_forward(self) -> float:
        return self.tokens / self.forwards if self.forwards else 0.0

    @property
    def source(self) -> str:
        """Where the middle came from, as every surface reports it: "workspace" (a line of
        the user's workspace, kept as is; `draft_origin` says where, when known), "edited"
        (such a line, edited by the model) or "model"."""
        return self.draft if self.draft in ("workspace", "edited") else "model"

    def to_dict(self) -> dict:
        """The result as the JSON surfaces give it (`infill batch`, `infill complete --json`,
        the live `result` frame's stats): its fields, `tokens_per_forward`, `source`, and
        `origin` ("path:line") in place of `draft_origin`, only when there is one."""
        out = asdict(self)
        origin = out.pop("draft_origin")
        out["source"] = self.source
        if origin:
            out["origin"] = origin
        out["tokens_per_forward"] = round(self.tokens_per_forward, 3)
        out["ms"] = round(self.ms, 3)
        out["work_ms"] = round(self.work_ms, 3)
        return out


@dataclass
class CanvasChange:
    position: int  # index in the canvas
    text: str  # the token's text now ("" for an end-of-middle token)
    confidence: float
    kind: str  # "commit" | "edit" | "end"


@dataclass
class DenoiseStep:
    """One denoising pass, as streamed to live clients.

    `canvas` has one entry per canvas position: the token text, or None while masked.
    The last step of a stream has `result` set.
    """

    step: int
    canvas: list[Optional[str]]
    changes: list[CanvasChange]
    forwards: int
    ms: float  # since the request started
    result: Optional[InfillResult] = None

    @property
    def masked(self) -> int:
        return sum(1 for piece in self.canvas if piece is None)


class SyntaxConstraint(Protocol):
    """What the sampler asks of a language's grammar (implemented in `grammars`).

    `pieces` are the canvas tokens' texts in order; None marks a still-masked position,
    a hole that later tokens may fill with any text (including nothing).
    """

    def allows(self, prefix: str, pieces: Sequence[Optional[str]], suffix: str) -> bool:
        """False when the text is broken in a way no filling of the holes can repair."""
        ...

    def accept_final(self, prefix: str, middle: str, suffix: str) -> bool:
        """False when splicing `middle` adds syntax errors in the region it touches."""
        ...

    def polish(self, prefix: str, middle: str, suffix: str) -> str:
        """The middle trimmed at a syntactic boundary, with closers the suffix already
        has removed and indentation made consistent with the enclosing block."""
        ...


class DenoisingModel(Protocol):
    """What the sampler needs from a model (the embedded InfillTransformer, or an adapter
    over an open checkpoint family). The context cache is opaque to the sampler."""

    def encode_context(self, prefix_ids: list[int], suffix_ids: list[int], reuse: object = None) -> object:
        """Encode prefix and suffix once per request, reusing `reuse` where it is still valid."""
        ...

    def canvas_logits(self, cache: object, canvas_ids: "torch.Tensor") -> "torch.Tensor":
        """(B, N) canvas ids (masks included) -> (B, N, V) float logits, one row per canvas position."""
        ...


# Optional capabilities, declared here so that the engine asks `isinstance` of a protocol
# rather than probing for attributes: a model, a context or a constraint that lacks one is
# served without it.


class HeldWindow(Protocol):
    """The window a request holds while it runs (grammars/window.py `Window`)."""

    @property
    def size(self) -> int:
        """Bytes of text the window's checks parse."""
        ...


@runtime_checkable
class WindowedConstraint(Protocol):
    """A constraint that keeps a window per request (grammars.constraint.TreeSitterConstraint)."""

    def hold(self, prefix: str, suffix: str) -> HeldWindow:
        """The request's window, for the request to keep while it runs."""
        ...

    def in_string(self, prefix: str, suffix: str) -> bool:
        """Whether the cursor is inside a multi-line string (a docstring being written)."""
        ...


@runtime_checkable
class BlockAwareConstraint(Protocol):
    """A constraint that knows, before any pass, where no code fits and where the cursor's
    line must open a block (grammars.constraint.TreeSitterConstraint; engine/job.py)."""

    @property
    def language(self) -> str:
        """The language's name: the key of its block headers (grammars/headers.py)."""
        ...

    def no_code_fits(self, prefix: str, suffix: str) -> bool:
        """Whether no middle that starts with code can pass the final check here."""
        ...

    def opens_block(self, prefix: str, suffix: str) -> Optional[str]:
        """The indentation a block header on the cursor's line starts with, else None."""
        ...


@runtime_checkable
class ModuleKindConstraint(Protocol):
    """A constraint that judges a JavaScript file as Node loads it, an ES module or a
    CommonJS file, where the request's file name or package says which
    (grammars.constraint.TreeSitterConstraint; engine/api.py `file_constraint`)."""

    def for_module_kind(self, kind: str) -> "SyntaxConstraint":
        """The same constraint judging every text as `kind` ("module" or "commonjs")."""
        ...


@runtime_checkable
class MergedEncoding(Protocol):
    """A model that encodes a new context in the same forward as the first canvas pass
    (engine.model.InfillTransformer)."""

    def encode_with_canvas(self, prefix_ids: list[int], suffix_ids: list[int], canvas_ids: "torch.Tensor", reuse: object = None) -> tuple[object, "torch.Tensor"]: ...


@runtime_checkable
class PackedPasses(Protocol):
    """A model that runs several requests' canvases in one forward (engine/batching.py)."""

    def canvas_logits_many(self, contexts: Sequence[object], canvases: Sequence["torch.Tensor"]) -> list["torch.Tensor"]: ...


@runtime_checkable
class PackedEncoding(Protocol):
    """A model that encodes several requests' new contexts, each with its first canvases,
    in one forward, beside other requests' canvases over their cached contexts
    (engine/batching.py): encodes[i] is (prefix ids, suffix ids, (B, N) canvases, the
    reused context) -> (its context, (B, N, V) logits); canvases[j] -> (N_j, V)."""

    def encode_with_canvas_many(self, encodes: Sequence[tuple[list[int], list[int], "torch.Tensor", object]], contexts: Sequence[object] = (), canvases: Sequence["torch.Tensor"] = ()) -> tuple[list[tuple[object, "torch.Tensor"]], list["torch.Tensor"]]: ...


@runtime_checkable
class SeveralCanvases(Protocol):
    """A model whose canvas_logits reads a (B, N) batch of canvases over one context, each
    row's logits what a lone canvas gets (engine/lookahead.py computes drafted canvases
    beside the asked one)."""

    several_canvases: bool


@runtime_checkable
class OwnPromptLayout(Protocol):
    """A model that lays out its own prompt's special tokens (a checkpoint family's
    adapter): the engine adds no BOS of its own."""

    lays_out_prompt: bool


@runtime_checkable
class ReusableContext(Protocol):
    """An encoded context a later request can build on (engine.model's): the ids it
    encoded, the memory it holds, and scratch buffers it can drop between requests."""

    prefix_ids: list[int]
    suffix_ids: list[int]

    @property
    def nbytes(self) -> int: ...

    def release_scratch(self) -> None: ...

