"""The engine's public, typed surface: what a front end sends in and gets back.

Front ends (the CLI, the LSP server, the WebSocket server) only ever see these types;
they never reach into the sampler or the model.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Optional, Protocol, Sequence

if TYPE_CHECKING:
    import torch


class InfillError(Exception):
    """A user-facing error: bad input, missing model, corrupt checkpoint.

    Its message is one line that says what is wrong and, where possible, how to fix it.
    Front ends print it without a traceback.
    """


@dataclass(frozen=True)
class SamplerSettings:
    """Knobs of the denoising sampler. Defaults were chosen by measurement (see
    docs/sampler.md for the sweep and the command that reproduces it)."""

    max_tokens: int = 64  # most tokens the middle may have
    block_size: int = 8  # canvas grows by this many masked positions at a time (a line is ~8 tokens)
    confidence_threshold: float = 0.9  # commit every masked position at least this sure (with `contiguous`: each of the run)
    edit_threshold: float = 0.9  # rewrite a committed canvas token if the model is this sure of another
    max_edit_passes: int = 0  # extra passes spent only on token-to-token edits once the middle is closed (edits also happen during every pass)
    temperature: float = 0.0  # 0 = greedy (deterministic)
    constrained: bool = True  # let the syntax constraint veto commits (when one exists)
    context_tokens: int = 1024  # most prefix tokens given to the model (infill's own models: the trained window)
    suffix_tokens: int = 256  # most suffix tokens given to the model
    seed: int = 0  # used only when temperature > 0
    candidates: int = 2  # model candidates tried when the syntax check refuses a middle (1 = no retry)
    allow_end: bool = True  # False: the middle fills exactly max_tokens (evaluation with the oracle length)
    left_to_right: bool = False  # commit only the first masked position each pass (the cautious candidate)
    contiguous: bool = True  # commit in text order: the first masked position, then the next while sure (docs/sampler.md)
    copy_weight: float = 0.3  # mix a copy-from-context guess into the next position's probabilities (see sampler rule 6)
    copy_context_tokens: int = 2048  # prefix tokens the copy guess looks in (may exceed context_tokens)
    end_when_valid: bool = False  # with left_to_right and a constraint: stop at the first complete, valid middle

    def replace(self, **changes: object) -> "SamplerSettings":
        """A copy with some knobs changed; unknown knobs are an InfillError."""
        known = set(self.__dataclass_fields__)
        unknown = sorted(set(changes) - known)
        if unknown:
            raise InfillError(f"unknown sampler setting(s): {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        return replace(self, **{k: v for k, v in changes.items() if v is not None})  # type: ignore[arg-type]


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
    forwards: int  # model forward passes spent (canvas passes; the context pass counts as one)
    ms: float  # wall time in milliseconds, model loading excluded
    stop_reason: str  # "end_of_middle" | "max_tokens" | "cancelled" | "empty"
    edits: int = 0  # token-to-token rewrites applied
    vetoed: int = 0  # commits refused by the syntax constraint
    cached_context_tokens: int = 0  # context tokens whose keys/values came from the cache
    candidates_tried: int = 1

    @property
    def tokens_per_forward(self) -> float:
        return self.tokens / self.forwards if self.forwards else 0.0

    def to_dict(self) -> dict:
        out = asdict(self)
        out["tokens_per_forward"] = round(self.tokens_per_forward, 3)
        out["ms"] = round(self.ms, 3)
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

    def accept_complete(self, prefix: str, middle: str, suffix: str) -> bool:
        """Like accept_final, and the splice also fills the hole's own error (`while :`)."""
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
