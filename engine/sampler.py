"""The denoising sampler: how a canvas of masks becomes a middle.

One request runs `denoise()`, a generator that yields a DenoiseStep per forward pass:

1. The context (prefix, suffix) is encoded once; every pass then computes only the
   canvas rows against the cached keys/values (exact for the embedded model, see
   model.py).
2. Each pass commits, among masked positions, every prediction whose probability is at
   least `confidence_threshold`, and always at least the most confident one
   (Fast-dLLM's threshold rule), so a pass never stalls. With `contiguous` (the default)
   the positions must form a run in text order: the first masked position always
   commits, and the positions right after it join while each is that sure. On the dev
   set this was as good as one token per pass and better than committing sure tokens
   anywhere, which lets a small model fix a far token before the text leading to it
   (docs/sampler.md).
3. Length is found by the model: a canvas position may hold the end-of-middle token
   (EOM). An EOM may only be committed at the *first* masked position, i.e. when every
   position before it already holds text; it then closes the canvas (all later
   positions become EOM). This stops EOM commits from running ahead of the text before
   them, the failure that collapses small models to one-token middles. If the canvas
   fills up with text and no EOM, it grows by another block of masks, up to max_tokens.
4. Token-to-token edits (LLaDA2.1-style): a committed text token whose prediction is now
   a different token with probability >= `edit_threshold` is rewritten, in every pass;
   once no masks are left, up to `max_edit_passes` extra passes look only for edits,
   stopping at the first that changes nothing.
5. A syntax constraint (grammars/) may veto commits: proposals are checked as a batch
   and, if the batch is refused, one at a time in confidence order, each falling back
   to its next-best token (a refused EOM too: it falls back to text); a position whose
   candidates are all refused stays masked. If every proposal of a pass is refused, a
   wider search at the first masked position looks for any allowed token; only if that
   fails too is the most confident proposal committed anyway, so the pass makes
   progress, and the final check (accept_final) judges the result.
6. Copying from the context (`copy_weight` > 0): code repeats itself. At the first masked
   position, whose left side is all text, the longest run of the last 2-4 tokens that also
   occurs in the prefix proposes the token that followed it there; that guess is mixed into
   the model's probabilities with weight `copy_weight` (a pointer-style mixture, computed
   from token ids, no extra forward pass). Not right after a newline of the middle.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Iterator, Optional, Sequence

import torch

from engine.tokenizer import Tokenizer
from engine.types import CanvasChange, DenoiseStep, DenoisingModel, InfillResult, SamplerSettings, SyntaxConstraint

FALLBACK_TOKENS = 3  # next-best tokens tried for a position whose best commit is vetoed
RESCUE_TOKENS = 8  # tokens tried at the first masked position when a whole pass is vetoed
ENDING_TOKENS = 24  # tokens tried as the last one of a middle by the end_when_valid candidate


@dataclass
class Proposal:
    position: int
    token: int
    confidence: float


class CanvasState:
    """The canvas: token ids per position, with the mask id where still unresolved."""

    def __init__(self, size: int, tok: Tokenizer):
        self.tok = tok
        self.ids: list[int] = [tok.mask_id] * size

    def grow(self, extra: int) -> None:
        self.ids.extend([self.tok.mask_id] * extra)

    @property
    def size(self) -> int:
        return len(self.ids)

    def masked_positions(self) -> list[int]:
        return [i for i, t in enumerate(self.ids) if t == self.tok.mask_id]

    def end(self) -> Optional[int]:
        """Index of the first EOM, or None if the middle has not been closed."""
        try:
            return self.ids.index(self.tok.eom_id)
        except ValueError:
            return None

    def middle_ids(self) -> list[int]:
        end = self.end()
        ids = self.ids if end is None else self.ids[:end]
        return [t for t in ids if t != self.tok.mask_id]

    def pieces(self, overrides: dict[int, int] | None = None) -> list[Optional[str]]:
        """Per-position text (None = masked hole), stopping at the first EOM."""
        ids = list(self.ids)
        for pos, token in (overrides or {}).items():
            ids[pos] = token
        out: list[Optional[str]] = []
        for token in ids:
            if token == self.tok.eom_id:
                break
            out.append(None if token == self.tok.mask_id else self.tok.piece(token))
        return out

    def commit(self, pos: int, token: int) -> None:
        if token == self.tok.eom_id:
            for j in range(pos, self.size):
                self.ids[j] = self.tok.eom_id
        else:
            self.ids[pos] = token


def propose(probs: torch.Tensor, canvas: CanvasState, threshold: float, left_to_right: bool = False, contiguous: bool = False, best: Optional[tuple[list[float], list[int]]] = None) -> list[Proposal]:
    """Commits for this pass, most confident first (see module docstring, rules 2-3).

    probs: (N, V) probabilities for every canvas position. With `left_to_right` only the
    first masked position may commit (one token per pass, in text order). With
    `contiguous` the first masked position always commits and the masked positions right
    after it join while each is at least `threshold` sure: text order, several per pass.
    `best`: _best_per_position(probs), when the caller has it already."""
    tok = canvas.tok
    masked = canvas.masked_positions()
    if not masked:
        return []
    first = masked[0]
    if left_to_right:
        masked = [first]
    conf, pred = best or _best_per_position(probs)
    if contiguous and not left_to_right:
        return _contiguous_run(probs, canvas, conf, pred, threshold)
    eligible: list[Proposal] = []
    for pos in masked:
        token = pred[pos]
        if token == tok.eom_id and pos != first:
            continue  # an EOM may not run ahead of unresolved text
        if token == tok.mask_id:
            continue
        eligible.append(Proposal(pos, token, conf[pos]))
    if not eligible:
        eligible = [_best_text(probs, first, tok.mask_id)]  # the first masked position is always eligible
    eligible.sort(key=lambda p: -p.confidence)
    chosen = [p for p in eligible if p.confidence >= threshold]
    return chosen or eligible[:1]


def _best_per_position(probs: torch.Tensor) -> tuple[list[float], list[int]]:
    """Each position's highest probability and its token, as Python lists (indexing a
    tensor element by element costs microseconds per element, every pass)."""
    conf, pred = probs.max(dim=-1)  # (N,), (N,)
    return conf.tolist(), pred.tolist()


def _best_text(probs: torch.Tensor, position: int, mask_id: int) -> Proposal:
    """The position's most likely token other than the mask itself."""
    row = probs[position].clone()
    row[mask_id] = 0
    return Proposal(position, int(row.argmax()), float(row.max()))


def _contiguous_run(probs: torch.Tensor, canvas: CanvasState, conf: list[float], pred: list[int], threshold: float) -> list[Proposal]:
    """The first masked position's best non-mask token, then each next masked position of
    the same unbroken run while its best token is text (an EOM may only come first) and
    at least `threshold` sure."""
    tok = canvas.tok
    masked = canvas.masked_positions()
    run = [_best_text(probs, masked[0], tok.mask_id)]
    if run[0].token == tok.eom_id:
        return run
    for pos in masked[1:]:
        token = pred[pos]
        if pos != run[-1].position + 1 or token in (tok.eom_id, tok.mask_id) or conf[pos] < threshold:
            break
        run.append(Proposal(pos, token, conf[pos]))
    return sorted(run, key=lambda p: -p.confidence)


def propose_edits(probs: torch.Tensor, canvas: CanvasState, threshold: float, frozen: set[int], best: Optional[tuple[list[float], list[int]]] = None) -> list[Proposal]:
    """Committed text tokens the model now wants to rewrite with high confidence."""
    tok = canvas.tok
    end = canvas.end()
    limit = canvas.size if end is None else end
    conf, pred = best or _best_per_position(probs)
    edits = []
    for pos in range(limit):
        current = canvas.ids[pos]
        if current == tok.mask_id or pos in frozen:
            continue
        token = pred[pos]
        if token != current and token not in tok.special_ids and conf[pos] >= threshold:
            edits.append(Proposal(pos, token, conf[pos]))
    return edits


def _constrained(
    proposals: list[Proposal], probs: torch.Tensor, canvas: CanvasState, constraint: SyntaxConstraint, prefix: str, suffix: str
) -> tuple[list[Proposal], int]:
    """Filter proposals through the constraint. Returns (accepted, number vetoed).

    A refused text token falls back to its next-best tokens; so does a refused EOM (an
    end that would leave e.g. `if :` must become text instead, not stay an end)."""
    if constraint.allows(prefix, canvas.pieces({p.position: p.token for p in proposals}), suffix):
        return proposals, 0
    accepted: list[Proposal] = []
    vetoed = 0
    for p in proposals:
        base = {a.position: a.token for a in accepted}
        token, refused = _first_allowed(probs, canvas, constraint, prefix, suffix, p.position, p.token, base, FALLBACK_TOKENS)
        vetoed += refused
        if token is not None:
            accepted.append(Proposal(p.position, token, float(probs[p.position, token])))
    return accepted, vetoed


def _first_allowed(
    probs: torch.Tensor,
    canvas: CanvasState,
    constraint: SyntaxConstraint,
    prefix: str,
    suffix: str,
    position: int,
    best: int,
    base: dict[int, int],
    fallbacks: int,
) -> tuple[Optional[int], int]:
    """The first of `best` and the position's next `fallbacks` most likely tokens that the
    constraint allows (None if none is), and how many were refused on the way."""
    tok = canvas.tok
    first_masked = min(canvas.masked_positions(), default=position)
    def committable(t: int) -> bool:
        # Never the mask (it would commit nothing) nor another special token; an EOM only
        # at the first masked position (module docstring, rule 3).
        return t == tok.eom_id and position == first_masked or t not in tok.special_ids

    candidates = [best] if committable(best) else []
    for t in probs[position].topk(min(probs.shape[-1], fallbacks + 3)).indices.tolist():
        if t != best and committable(t):
            candidates.append(int(t))
    refused = 0
    for token in candidates[: fallbacks + 1]:
        if constraint.allows(prefix, canvas.pieces({**base, position: token}), suffix):
            return token, refused
        refused += 1
    return None, refused


def _rescue(probs: torch.Tensor, canvas: CanvasState, constraint: SyntaxConstraint, prefix: str, suffix: str) -> tuple[Optional[Proposal], int]:
    """Every proposal of a pass was refused: search wider (RESCUE_TOKENS) at the first
    masked position, the one position whose commit the model may always make."""
    masked = canvas.masked_positions()
    if not masked:
        return None, 0
    first = masked[0]
    row = probs[first]
    best = int(row.argmax())  # may be a special token: _first_allowed skips what it cannot commit
    token, refused = _first_allowed(probs, canvas, constraint, prefix, suffix, first, best, {}, RESCUE_TOKENS)
    if token is None:
        return None, refused
    return Proposal(first, token, float(row[token])), refused


def _valid_ending(probs: torch.Tensor, canvas: CanvasState, constraint: SyntaxConstraint, prefix: str, suffix: str) -> Optional[Proposal]:
    """The most likely of the first masked position's top ENDING_TOKENS tokens after which
    the middle, closed right there, is complete and valid (`accept_complete`); None if
    none is. Used by the last-resort candidate (settings.end_when_valid): the shortest
    valid middle the model itself proposes, instead of no suggestion at all."""
    tok = canvas.tok
    masked = canvas.masked_positions()
    first = masked[0]
    if first != len(canvas.middle_ids()):
        return None  # only for text written left to right, with nothing masked before it
    written = canvas.middle_ids()
    top = probs[first].topk(min(probs.shape[-1], ENDING_TOKENS))
    for p, t in zip(top.values.tolist(), top.indices.tolist()):
        if t in tok.special_ids:
            continue
        middle = tok.decode(written + [t])
        if middle.strip() and constraint.accept_complete(prefix, middle, suffix):
            return Proposal(first, int(t), float(p))
    return None


def _close_with(canvas: CanvasState, last: Proposal, max_tokens: int) -> list[CanvasChange]:
    """Commit `last` and an end of middle right after it (growing the canvas by one if full)."""
    canvas.commit(last.position, last.token)
    changes = [CanvasChange(last.position, canvas.tok.piece(last.token), last.confidence, "commit")]
    end = last.position + 1
    if end >= canvas.size and canvas.size < max_tokens:
        canvas.grow(1)
    if end < canvas.size:
        canvas.commit(end, canvas.tok.eom_id)
        changes.append(CanvasChange(end, "", 1.0, "end"))
    return changes


COPY_NGRAMS = (4, 3, 2)  # context lengths tried by the copy guess, longest first


class CopyIndex:
    """For each 2-4 token run of the prefix, the token that followed its latest occurrence."""

    def __init__(self, source: Sequence[int], special: frozenset[int]) -> None:
        self.source = list(source)
        self.next: dict[tuple[int, ...], int] = {}
        for n in COPY_NGRAMS:  # later occurrences overwrite earlier ones
            runs = zip(*(self.source[i : len(self.source) - n + i] for i in range(n)))
            self.next.update({run: following for run, following in zip(runs, self.source[n:]) if following not in special})

    def guess(self, left: Sequence[int]) -> Optional[int]:
        for n in COPY_NGRAMS:
            if len(left) >= n:
                token = self.next.get(tuple(left[-n:]))
                if token is not None:
                    return token
        return None


def _copy_mix(probs: torch.Tensor, canvas: CanvasState, index: CopyIndex, weight: float) -> None:
    masked = canvas.masked_positions()
    if not masked:
        return
    first = masked[0]
    if first > 0 and "\n" in canvas.tok.piece(canvas.ids[first - 1]):
        # A middle's new line is where it most often should end or turn; copying there
        # measurably ran middles on into the context's next line (docs/sampler.md).
        return
    token = index.guess((index.source[-COPY_NGRAMS[0]:] + canvas.ids[:first])[-COPY_NGRAMS[0]:])
    if token is not None:
        probs[first] *= 1.0 - weight
        probs[first, token] += weight


def _probabilities(logits: torch.Tensor, settings: SamplerSettings, generator: Optional[torch.Generator]) -> torch.Tensor:
    """(N, V) probabilities; with temperature > 0 the confidence ranking is taken from a
    Gumbel-perturbed distribution so commits are sampled, not greedy."""
    if settings.temperature <= 0:
        return torch.softmax(logits.float(), dim=-1)
    scaled = logits.float() / settings.temperature
    gumbel = -torch.log(-torch.log(torch.rand(scaled.shape, generator=generator).clamp_min(1e-20)))
    return torch.softmax(scaled + gumbel, dim=-1)


class Denoiser:
    """One request's denoising, a pass at a time, with the forward pass left to the caller.

    `canvas_ids()` is what the model must see next (None once finished), `advance(logits)`
    turns that pass's (N, V) logits into commits, edits and growth and returns its
    DenoiseStep, and `final_step()` carries the InfillResult. `denoise()` drives one
    request this way; the engine's batch worker drives many, with one forward pass over
    all their canvases (engine/batching.py). Rules 1-6 of the module docstring.
    """

    def __init__(
        self,
        tok: Tokenizer,
        settings: SamplerSettings,
        *,
        constraint: Optional[SyntaxConstraint] = None,
        prefix_text: str = "",
        suffix_text: str = "",
        cancel: Optional[threading.Event] = None,
        start_time: Optional[float] = None,
        forwards_before: int = 0,
        copy_source: Optional[Sequence[int]] = None,
    ) -> None:
        self.tok, self.settings, self.cancel = tok, settings, cancel
        self.constraint = constraint if settings.constrained else None
        self.prefix_text, self.suffix_text = prefix_text, suffix_text
        self.start = start_time if start_time is not None else time.perf_counter()
        self.generator = torch.Generator().manual_seed(settings.seed) if settings.temperature > 0 else None
        self.max_tokens = max(0, settings.max_tokens)
        self.canvas = CanvasState(min(settings.block_size, self.max_tokens), tok)
        self.forwards = forwards_before
        self.edits_total = self.vetoed_total = self.step = self.edit_passes = 0
        self.stop_reason = "end_of_middle"
        self.finished = False
        self.copy_index = CopyIndex(copy_source, tok.special_ids) if copy_source and settings.copy_weight > 0 else None
        # The end_when_valid check needs a constraint even when commits are not constrained.
        self._ending_constraint = constraint

    def canvas_ids(self) -> Optional[list[int]]:
        """The canvas the next forward pass must see, or None when the denoising is over."""
        if not self.finished and self.canvas.size == 0:
            self._stop("empty" if self.max_tokens == 0 else self.stop_reason)
        if not self.finished and self.cancel is not None and self.cancel.is_set():
            self._stop("cancelled")
        return None if self.finished else self.canvas.ids

    def advance(self, logits: torch.Tensor) -> DenoiseStep:
        """One pass: propose -> constrain -> commit -> edit, then grow or stop."""
        self.forwards += 1
        self.step += 1
        probs = self._probabilities(logits)
        masked_before = self.canvas.masked_positions()
        ending = self._valid_ending(probs) if masked_before else None
        if ending is not None:
            changes = _close_with(self.canvas, ending, self.max_tokens)
            self._stop("end_of_middle")
            return self._step_now(changes)
        best = _best_per_position(probs)  # shared by propose and the edits (same probabilities)
        proposals = self._constrain(probs, propose(probs, self.canvas, self.settings.confidence_threshold, self.settings.left_to_right, self.settings.contiguous, best)) if masked_before else []
        changes = self._commit(proposals)
        edits = self._edit(probs, frozen={p.position for p in proposals}, best=best)
        changes += edits
        if not masked_before:
            self.edit_passes += 1
        self._grow_or_stop(bool(edits))
        return self._step_now(changes)

    def final_step(self) -> DenoiseStep:
        """The last step: the middle and the figures of how it was made."""
        middle_ids = self.canvas.middle_ids()
        ms = (time.perf_counter() - self.start) * 1000
        result = InfillResult(
            middle=self.tok.decode(middle_ids),
            tokens=len(middle_ids),
            forwards=self.forwards,
            ms=ms,
            stop_reason=self.stop_reason,
            edits=self.edits_total,
            vetoed=self.vetoed_total,
        )
        return DenoiseStep(self.step, self.canvas.pieces(), [], self.forwards, ms, result=result)

    # ------------------------------------------------------------------ the steps
    def _probabilities(self, logits: torch.Tensor) -> torch.Tensor:
        if not self.settings.allow_end:
            logits[:, self.tok.eom_id] = float("-inf")
        probs = _probabilities(logits, self.settings, self.generator).cpu()
        if self.copy_index is not None:
            _copy_mix(probs, self.canvas, self.copy_index, self.settings.copy_weight)
        return probs

    def _valid_ending(self, probs: torch.Tensor) -> Optional[Proposal]:
        if not (self.settings.end_when_valid and self._ending_constraint is not None):
            return None
        return _valid_ending(probs, self.canvas, self._ending_constraint, self.prefix_text, self.suffix_text)

    def _constrain(self, probs: torch.Tensor, proposals: list[Proposal]) -> list[Proposal]:
        """The proposals the syntax constraint lets stand (rule 5), never none of them."""
        if not proposals or self.constraint is None:
            return proposals
        accepted, vetoed = _constrained(proposals, probs, self.canvas, self.constraint, self.prefix_text, self.suffix_text)
        self.vetoed_total += vetoed
        if not accepted:  # progress guarantee (module docstring, rule 5)
            rescued, vetoed = _rescue(probs, self.canvas, self.constraint, self.prefix_text, self.suffix_text)
            self.vetoed_total += vetoed
            accepted = [rescued] if rescued is not None else proposals[:1]
        return accepted

    def _commit(self, proposals: list[Proposal]) -> list[CanvasChange]:
        changes = []
        for p in proposals:
            self.canvas.commit(p.position, p.token)
            kind = "end" if p.token == self.tok.eom_id else "commit"
            changes.append(CanvasChange(p.position, self.tok.piece(p.token), p.confidence, kind))
        return changes

    def _edit(self, probs: torch.Tensor, frozen: set[int], best: Optional[tuple[list[float], list[int]]] = None) -> list[CanvasChange]:
        """Token-to-token edits (rule 4); never on tokens committed in this very pass (their
        evidence is this pass)."""
        edits = propose_edits(probs, self.canvas, self.settings.edit_threshold, frozen=frozen, best=best)
        if edits and self.constraint is not None:
            edits, vetoed = _constrained(edits, probs, self.canvas, self.constraint, self.prefix_text, self.suffix_text)
            self.vetoed_total += vetoed
        for e in edits:
            self.canvas.commit(e.position, e.token)
        self.edits_total += len(edits)
        return [CanvasChange(e.position, self.tok.piece(e.token), e.confidence, "edit") for e in edits]

    def _grow_or_stop(self, edited: bool) -> None:
        """More masks to resolve, a canvas to grow, edit-only passes (up to max_edit_passes,
        until one changes nothing), or the end."""
        if self.canvas.masked_positions():
            return
        if self.canvas.end() is None and self.canvas.size < self.max_tokens:
            self.canvas.grow(min(self.settings.block_size, self.max_tokens - self.canvas.size))
            return
        if self.edit_passes < self.settings.max_edit_passes and (self.edit_passes == 0 or edited):
            return
        self._stop("end_of_middle" if self.canvas.end() is not None else "max_tokens")

    def _stop(self, reason: str) -> None:
        self.stop_reason, self.finished = reason, True

    def _step_now(self, changes: list[CanvasChange]) -> DenoiseStep:
        return DenoiseStep(self.step, self.canvas.pieces(), changes, self.forwards, (time.perf_counter() - self.start) * 1000)


def denoise(
    model: DenoisingModel,
    tok: Tokenizer,
    context: object,
    settings: SamplerSettings,
    *,
    device: str | torch.device = "cpu",
    **options: object,
) -> Iterator[DenoiseStep]:
    """Denoise one canvas against an encoded context; yields a step per forward pass.

    `options` are Denoiser's: constraint, prefix_text, suffix_text, cancel, start_time,
    forwards_before (passes already spent, e.g. encoding the context) and copy_source (the
    prefix's token ids, for rule 6). The last yielded step carries `result`."""
    state = Denoiser(tok, settings, **options)  # type: ignore[arg-type]
    while (ids := state.canvas_ids()) is not None:
        logits = model.canvas_logits(context, torch.tensor([ids], dtype=torch.long, device=device))[0]  # (N, V)
        yield state.advance(logits)
    yield state.final_step()


def run_to_end(steps: Iterator[DenoiseStep]) -> InfillResult:
    last: Optional[DenoiseStep] = None
    for last in steps:
        pass
    assert last is not None and last.result is not None
    return last.result


def middle_pieces(canvas: Sequence[Optional[str]]) -> str:
    return "".join(p for p in canvas if p)
