"""The denoising sampler: how a canvas of masks becomes a middle.

One request runs `denoise()`, a generator that yields a DenoiseStep per forward pass. It
is a driver over small steps, one function each (the way gpt-fast splits prefill /
decode-one / decode-n): the model's forward pass over the canvas, then `predict` (its
logits as the pass's probabilities), the pass's decisions in `denoise_pass` —
end? -> `propose` -> `constrain` -> `commit` -> copy run -> end? -> `edit` — and `grow` (a
new block of masks, or the reason to stop). The running state of one request is a
`Denoising`: it hands out the canvas (`canvas_ids`) and takes the model's logits for it
(`advance`), so the forward pass stays with the caller, which may run one forward for
several requests. Where the middle ends is decided in engine/ending.py (`decide_end`, at
the two "end?" points of every pass); the copy rules live in engine/copying.py; the
table of every decision and its one function is docs/sampler.md ("Where each decision is
made"). The rules:

1. The context (prefix, suffix) is encoded once; every pass then computes only the
   canvas rows against the cached keys/values (exact for the embedded model, see
   model.py).
2. Each pass commits, among masked positions, by `SamplerSettings.order`: "contiguous"
   (the default) the first masked position always, and the positions right after it
   while each is at least `confidence_threshold` sure (text order, several per pass; on
   the dev set as good as one token per pass and better than committing sure tokens
   anywhere, which lets a small model fix a far token before the text leading to it,
   docs/sampler.md); "confidence" every prediction at least that sure, anywhere, and
   always the most confident one (Fast-dLLM's threshold rule); "left_to_right" only the
   first masked position. So a pass never stalls.
3. Length is found by the model: a canvas position may hold the end-of-middle token
   (EOM). An EOM may only be committed at the *first* masked position, i.e. when every
   position before it already holds text; it then closes the canvas (all later
   positions become EOM). This stops EOM commits from running ahead of the text before
   them, the failure that collapses small models to one-token middles. The rule is
   decided in one place, `CanvasState.end_allowed`; every step asks it. If the canvas
   fills up with text and no EOM, it grows by another block of masks, up to max_tokens.
4. Token-to-token edits (LLaDA2.1-style): a committed text token whose prediction is now
   a different token with probability >= `edit_threshold` is rewritten, in every pass;
   once no masks are left, up to `max_edit_passes` extra passes look only for edits,
   stopping at the first that changes nothing.
5. A syntax constraint (grammars/) may veto commits: proposals are checked as a batch
   and, if the batch is refused, one at a time in confidence order, each falling back
   to its next-best token (a refused EOM too: it falls back to text); a position whose
   candidates are all refused stays masked. Candidates are enumerated from the pass's
   probabilities and a token of probability 0 is never one (a healed word's first
   position may hold only tokens that write the word: `first_allowed`). If every
   proposal of a pass is refused, the same pass's probabilities are searched in text
   order (the first masked position's top tokens, then the next positions') before
   another forward pass is spent; only if that fails too is the most confident proposal
   committed anyway, and (the engine's candidates, `Modes.close_on_veto`) after one such
   forced token the middle closes instead, for the final check (accept_final) to judge.
   So every pass that reads a masked position commits at least one token (an end of
   middle counts), by construction, and a request's forward passes stay within the
   tokens it wrote + 2 (docs/sampler.md).
6. Copying from the context (`copy_weight` > 0, engine/copying.py): code repeats itself.
   At the first masked position, whose left side is all text, the longest run of the last
   2-4 tokens that also occurs in the workspace's files or the prefix and suffix proposes
   the token that followed it there (where its continuations agree, else the latest);
   that guess is mixed into the model's probabilities with weight `copy_weight` (a
   pointer-style mixture, computed from token ids, no extra forward pass). Not right
   after a newline of the middle.
7. Runs extended by copies (`copy_run_top` > 0, contiguous order): after a pass's
   commits, the masked positions right after them take the copy guess (rule 6, continued
   token by token) while it is among the model's `copy_run_top` most likely tokens at
   that position in this pass's probabilities and the constraint allows it. Two
   independent guesses agreeing stand in for the confidence a small model rarely has
   beyond the first masked position: on the dev set the same exact match in 12% fewer
   forwards (docs/sampler.md). And when the pass's text then ends with a newline
   (`end_after_newline`), an end of middle that is the model's best guess at the next
   position closes the middle in the same pass (engine/ending.py, `newline`): a line's
   end is where a completion most often stops, and waiting a pass for the end to be 0.9
   sure cost a forward per middle (8% of the dev set's, the same exact match).
8. The suffix's closer (`end_at_closer`, engine/ending.py `closer`): when the suffix goes
   on with a closing bracket or quote and the model's best token at the first masked
   position starts with that same character, the model is about to write what the file
   already has (`read_lines(path` + `)` before the suffix's `)`); if the text so far
   passes the final check, the middle ends there instead. Mid-line, inside a call's
   brackets, this cut the passes by a quarter with the same exact match (docs/sampler.md).
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Collection, Iterator, Optional, Sequence

import torch

from engine import stopping
from engine.copying import CopyIndex, copy_mix, extend_by_copy
from engine.ending import ENDING_TOKENS, JUDGED_WHOLE, End, close, decide_end, first_line
from engine.tokenizer import Tokenizer
from engine.types import CanvasChange, DenoiseStep, DenoisingModel, InfillResult, SamplerSettings, SyntaxConstraint

if TYPE_CHECKING:
    from engine.runs import NgramTable

FALLBACK_TOKENS = 3  # next-best tokens tried for a position whose best commit is vetoed
SEARCH_TOKENS = 8  # tokens tried per masked position when a whole pass is vetoed (rule 5)
FORCED_BEFORE_CLOSING = 1  # with Modes.close_on_veto: refused tokens forced (per candidate) before the middle closes instead (tuned on dev, docs/sampler.md)


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
        """`extra` more masked positions at the end."""
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

    def end_allowed(self, position: int, filled: Collection[int] = ()) -> bool:
        """The ordering rule (module docstring, rule 3), the one place it is decided: an
        end of middle may be written at `position` only when no position before it stays
        unresolved, i.e. each holds text already or is in `filled` (positions this pass
        writes text to). An end that ran ahead of unresolved text would close the canvas
        over a hole: the failure that collapses small models to one-token middles."""
        mask = self.tok.mask_id
        return all(i in filled for i, t in enumerate(self.ids[:position]) if t == mask)

    def commit(self, pos: int, token: int) -> None:
        """Write one token; an end-of-middle closes the canvas (every later position too)."""
        if token == self.tok.eom_id:
            for j in range(pos, self.size):
                self.ids[j] = self.tok.eom_id
        else:
            self.ids[pos] = token


def propose(probs: torch.Tensor, canvas: CanvasState, threshold: float, order: str = "confidence", end_in_run: bool = False, best: Optional[tuple[list[float], list[int]]] = None) -> list[Proposal]:
    """Commits for this pass, most confident first (see module docstring, rules 2-3).

    probs: (N, V) probabilities for every canvas position. `order` (SamplerSettings.order):
    "left_to_right": only the first masked position commits (one token per pass, in text
    order); "contiguous": the first masked position always commits and the masked
    positions right after it join while each is at least `threshold` sure (text order,
    several per pass; with `end_in_run` the run may end with an end-of-middle that is that
    sure); "confidence": every masked position at least `threshold` sure, anywhere.
    `best`: _best_per_position(probs), when the caller has it already."""
    tok = canvas.tok
    masked = canvas.masked_positions()
    if not masked:
        return []
    first = masked[0]
    if order == "left_to_right":
        masked = [first]
    conf, pred = best or _best_per_position(probs)
    if order == "contiguous":
        return _contiguous_run(probs, canvas, conf, pred, threshold, end_in_run)
    eligible: list[Proposal] = []
    for pos in masked:
        token = pred[pos]
        if token == tok.eom_id and not canvas.end_allowed(pos):
            continue
        if token in tok.special_ids and token != tok.eom_id:
            continue  # the mask would commit nothing, padding or a BOS would write nothing
        eligible.append(Proposal(pos, token, conf[pos]))
    if not eligible:
        eligible = [_best_text(probs, first, tok)]  # the first masked position is always eligible
    eligible.sort(key=lambda p: -p.confidence)
    chosen = [p for p in eligible if p.confidence >= threshold]
    return chosen or eligible[:1]


def _best_per_position(probs: torch.Tensor) -> tuple[list[float], list[int]]:
    """Each position's highest probability and its token, as Python lists (indexing a
    tensor element by element costs microseconds per element, every pass)."""
    conf, pred = probs.max(dim=-1)  # (N,), (N,)
    return conf.tolist(), pred.tolist()


def _best_text(probs: torch.Tensor, position: int, tok: Tokenizer) -> Proposal:
    """The position's most likely token other than a special one (the mask, padding, BOS:
    they would write nothing); the end of the middle may be it."""
    row = probs[position].clone()
    row[[t for t in tok.special_ids if t != tok.eom_id]] = 0
    return Proposal(position, int(row.argmax()), float(row.max()))


def _contiguous_run(probs: torch.Tensor, canvas: CanvasState, conf: list[float], pred: list[int], threshold: float, end_in_run: bool) -> list[Proposal]:
    """The first masked position's best non-mask token, then each next masked position of
    the same unbroken run while its best token is text and at least `threshold` sure.
    An EOM may come first, or (`end_in_run`) close the run: every position before it then
    holds text, so it does not run ahead of unresolved text (rule 3), and the middle ends
    in this pass instead of spending one more on its end (docs/sampler.md)."""
    tok = canvas.tok
    masked = canvas.masked_positions()
    run = [_best_text(probs, masked[0], tok)]
    if run[0].token == tok.eom_id:
        return run
    for pos in masked[1:]:
        token = pred[pos]
        ends = token == tok.eom_id
        if ends and not (end_in_run and canvas.end_allowed(pos, {p.position for p in run})):
            break
        if pos != run[-1].position + 1 or (token in tok.special_ids and not ends) or conf[pos] < threshold:
            break
        run.append(Proposal(pos, token, conf[pos]))
        if ends:
            break
    return sorted(run, key=lambda p: -p.confidence)


def rewrites(probs: torch.Tensor, ids: Sequence[int], threshold: float, special_ids: frozenset[int], frozen: Collection[int] = (), best: Optional[tuple[list[float], list[int]]] = None) -> list[Proposal]:
    """The token-to-token edit rule (rule 4), shared with next-edit's model mode: every
    position holding a text token whose prediction is now a different text token with
    probability >= `threshold`, except the `frozen` positions. probs: (>= len(ids), V)."""
    conf, pred = best or _best_per_position(probs)
    found = []
    for pos, current in enumerate(ids):
        if current in special_ids or pos in frozen:
            continue
        token = pred[pos]
        if token != current and token not in special_ids and conf[pos] >= threshold:
            found.append(Proposal(pos, token, conf[pos]))
    return found


def propose_edits(probs: torch.Tensor, canvas: CanvasState, threshold: float, frozen: Collection[int], best: Optional[tuple[list[float], list[int]]] = None) -> list[Proposal]:
    """Committed text tokens of the middle the model now wants to rewrite with high confidence."""
    end = canvas.end()
    return rewrites(probs, canvas.ids if end is None else canvas.ids[:end], threshold, canvas.tok.special_ids, frozen, best)


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
    ends_here = canvas.end_allowed(position)
    row = probs[position]
    def writable(t: int) -> bool:
        # Never the mask (it would commit nothing) nor another special token; an end only
        # where the ordering rule allows it; never a token of probability 0 (barred: a
        # healed word's first position, an end when `allow_end` is off), whatever the
        # constraint says of the others.
        return (t == tok.eom_id and ends_here or t not in tok.special_ids) and float(row[t]) > 0

    candidates = [best] if writable(best) else []
    for t in row.topk(min(probs.shape[-1], fallbacks + 3)).indices.tolist():
        if t != best and writable(t):
            candidates.append(int(t))
    refused = 0
    for token in candidates[: fallbacks + 1]:
        if constraint.allows(prefix, canvas.pieces({**base, position: token}), suffix):
            return token, refused
        refused += 1
    return None, refused


def _search(probs: torch.Tensor, canvas: CanvasState, constraint: SyntaxConstraint, prefix: str, suffix: str) -> tuple[Optional[Proposal], int]:
    """Every proposal of a pass was refused: before another forward pass is spent, the
    same pass's probabilities at the first masked position are searched, its top
    SEARCH_TOKENS tokens in turn, for one the constraint allows. Returns it (None if none
    is) and how many were refused on the way. (Searching the next 3 masked positions too
    changed 2 of 560 tuning middles, none right or wrong, and cost forwards: 1,592 vs 1,633
    on the dev lines, `python -m lab.evaluation.prune`.)"""
    position = canvas.masked_positions()[0]
    row = probs[position]
    best = int(row.argmax())  # may be a special token: _first_allowed skips what it cannot commit
    token, refused = _first_allowed(probs, canvas, constraint, prefix, suffix, position, best, {}, SEARCH_TOKENS)
    return (Proposal(position, token, float(row[token])) if token is not None else None), refused


def _forced(proposals: list[Proposal], probs: torch.Tensor, canvas: CanvasState) -> Proposal:
    """The pass's last resort when the constraint refused everything searched: the most
    confident proposal that can be written alone, else the first masked position's best
    text token (always writable). Written anyway, so the pass makes progress; the final
    check (accept_final) judges the result."""
    alone = next((p for p in proposals if without_early_ends([p], canvas)), None)
    return alone if alone is not None else _best_text(probs, canvas.masked_positions()[0], canvas.tok)


def _probabilities(logits: torch.Tensor, settings: SamplerSettings, generator: Optional[torch.Generator]) -> torch.Tensor:
    """(N, V) probabilities; with temperature > 0 the confidence ranking is taken from a
    Gumbel-perturbed distribution so commits are sampled, not greedy."""
    if settings.temperature <= 0:
        return torch.softmax(logits.float(), dim=-1)
    scaled = logits.float() / settings.temperature
    gumbel = -torch.log(-torch.log(torch.rand(scaled.shape, generator=generator).clamp_min(1e-20)))
    return torch.softmax(scaled + gumbel, dim=-1)


@dataclass(frozen=True)
class Modes:
    """The engine's plan for one candidate (engine/request.py, InfillRun): modes that no client
    sets, unlike SamplerSettings."""

    end_when_valid: bool = False  # the last resort: end at the first complete, valid middle (engine/ending.py, `valid`)
    end_at_line_end: bool = False  # inside a docstring: the middle is its first line (ending.py, `newline`, `first_line`)
    close_on_veto: bool = False  # a pass whose every token is refused closes the middle once one was forced (rule 5)
    header: bool = False  # the candidate's canvas starts with a block header's keyword (engine/request.py, InfillRun._header_seed)
    ending_tokens: int = ENDING_TOKENS  # tokens the `valid` end tries per pass (engine/ending.py `ending_tokens`: fewer in a wide syntax window)


@dataclass(frozen=True)
class Surroundings:
    """What a request's sampler reads besides the model: the text around the canvas, the
    syntax check, the copy rule's tokens and a healed word's first text."""

    prefix: str
    suffix: str
    constraint: Optional[SyntaxConstraint] = None  # None when the request is not constrained
    copy_source: Sequence[int] = ()  # the prefix's token ids, for rule 6
    copy_suffix: Sequence[int] = ()  # the suffix's, where rule 6 also looks
    copy_workspace: Optional["NgramTable"] = None  # the workspace's token runs (engine/workspace/ngrams.py NgramTable), looked in last
    first_text: str = ""  # text the middle's first token must start with (a healed word, engine/healing.py)


@dataclass
class Denoising:
    """One request's running state: the canvas and the counts its result reports. The
    steps below read and update it; the driver (`denoise`) keeps no bookkeeping."""

    canvas: CanvasState
    settings: SamplerSettings
    modes: Modes
    constraint: Optional[SyntaxConstraint]  # None when the request is not constrained
    prefix: str
    suffix: str
    copy_index: Optional[CopyIndex]
    generator: Optional[torch.Generator]
    start: float  # perf_counter() when the request started
    forwards: int  # model passes so far (encoding the context counts one)
    written: int = 0  # tokens written into the canvas so far: commits, ends, edits (see `advance`)
    closed_by_veto: bool = False  # rule 5's last resort wrote the end (Modes.close_on_veto): the stop reason says "vetoed"
    forced: int = 0  # refused tokens written anyway (constrain's last resort)
    step: int = 0
    edits: int = 0  # token-to-token rewrites applied
    edits_last_pass: int = 0
    vetoed: int = 0  # commits the constraint refused
    edit_passes: int = 0  # passes run with no mask left (only edits possible)
    stop: Optional[str] = None  # why it stopped, once it has
    end: Optional[End] = None  # where and why the middle ended (engine/ending.py), once it has
    first_allowed: Optional[torch.Tensor] = None  # (V,) bool: the tokens the middle's first position may hold (a healed word), None: any
    work: Optional[Callable[[], float]] = None  # seconds of the request's own work so far (a WorkClock); None: wall time since `start`

    @classmethod
    def begin(cls, tok: Tokenizer, settings: SamplerSettings, around: Surroundings, start: float, forwards: int, modes: Modes = Modes(), first_width: int = 0,
              copy_index: Optional[CopyIndex] = None) -> "Denoising":
        """The state before the first pass: a first block of masks (none for max_tokens 0),
        or `first_width` masks (room for the drafts the first pass judges, engine/drafts.py).
        `copy_index`: one built from the same `around` by an earlier candidate (it is only
        read), instead of building it again."""
        first_allowed = None
        if around.first_text:
            first_allowed = torch.zeros(tok.vocab_size, dtype=torch.bool)
            first_allowed[tok.starting_with(around.first_text)] = True
        copies = around.copy_source and settings.copy_weight > 0
        return cls(
            canvas=CanvasState(min(max(settings.block_size, first_width), max(0, settings.max_tokens)), tok),
            settings=settings,
            modes=modes,
            constraint=around.constraint if settings.constrained else None,
            prefix=around.prefix,
            suffix=around.suffix,
            copy_index=(copy_index or CopyIndex(around.copy_source, tok.special_ids, around.copy_suffix, around.copy_workspace)) if copies else None,
            generator=torch.Generator().manual_seed(settings.seed) if settings.temperature > 0 else None,
            start=start,
            forwards=forwards,
            first_allowed=first_allowed,
        )

    @property
    def max_tokens(self) -> int:
        return max(0, self.settings.max_tokens)

    def ms(self) -> float:
        return (time.perf_counter() - self.start) * 1000

    def work_seconds(self) -> float:
        """What the deadline counts: the request's own work (`work`), else its wall time."""
        return self.work() if self.work is not None else time.perf_counter() - self.start

    def record(self, changes: list[CanvasChange]) -> DenoiseStep:
        """This pass as a DenoiseStep."""
        return DenoiseStep(self.step, self.canvas.pieces(), changes, self.forwards, self.ms())

    def canvas_ids(self, cancel: Optional[threading.Event] = None) -> Optional[list[int]]:
        """The canvas the next forward pass must read, or None when denoising is over."""
        if self.stop is None:
            self.stop = stopping.before_pass(self, cancel)
        return None if self.stop is not None else list(self.canvas.ids)

    def advance(self, logits: torch.Tensor, *, replayed: bool = False) -> DenoiseStep:
        """One pass, given the model's (N, V) logits for `canvas_ids()`: predict ->
        propose -> constrain -> commit -> edit -> grow. Returns the pass's step.
        `replayed`: the logits were computed for this very canvas by an earlier candidate
        of the request (engine/request.py, InfillRun): a pass, but no forward."""
        masked_before = bool(self.canvas.masked_positions())
        changes = denoise_pass(predict(logits, self, forward=not replayed), self)
        # Every change is one token written: a commit, an end of middle (one, however many
        # positions it closes), an edit (a rewrite costs a write like a commit does). The
        # bound `forwards <= written + 2` rests on this count (docs/sampler.md).
        self.written += len(changes)
        step = self.record(changes)
        # Nothing committed with masks left: not possible by construction (constrain never
        # returns nothing); the final check judges the text so far.
        stalled = masked_before and not any(c.kind != "edit" for c in changes)
        self.stop = stopping.after_pass(self, stalled, done=not stalled and grow(self))
        return step

    def adopt(self, ids: Sequence[int], confidences: Sequence[float]) -> DenoiseStep:
        """This pass writes a kept draft (engine/drafts.py) as the whole middle: its tokens,
        then the end of middle; the pass's logits judged it. The final check judges it like
        any middle."""
        tok = self.canvas.tok
        self.canvas = CanvasState(len(ids) + 1, tok)
        changes = []
        for position, (token, confidence) in enumerate(zip(list(ids) + [tok.eom_id], confidences)):
            self.canvas.commit(position, token)
            changes.append(CanvasChange(position, "" if token == tok.eom_id else tok.piece(token), confidence, "end" if token == tok.eom_id else "commit"))
        self.written += len(changes)
        self.forwards += 1
        self.step += 1
        self.stop = stopping.after_pass(self, stalled=False, done=True)
        self.end = End(len(ids), "draft", confidences[-1] if len(confidences) > len(ids) else 1.0)
        return self.record(changes)

    def start_from(self, ids: Sequence[int], confidences: Sequence[float], width: int) -> DenoiseStep:
        """This pass writes a workspace line to edit (engine/near_edit.py) as the canvas's
        start: its tokens committed, masks after them up to `width`. The passes that follow
        read it and rewrite it (rule 4, at the settings' `edit_threshold`), fill the masks
        or end early; the final check judges the result like any middle."""
        tok = self.canvas.tok
        self.canvas = CanvasState(width, tok)
        changes = []
        for position, (token, confidence) in enumerate(zip(ids, confidences)):
            self.canvas.commit(position, token)
            changes.append(CanvasChange(position, tok.piece(token), confidence, "commit"))
        self.written += len(changes)
        self.forwards += 1
        self.step += 1
        return self.record(changes)

    def finish(self) -> DenoiseStep:
        """The last step: the canvas's middle as an InfillResult."""
        middle_ids = self.canvas.middle_ids()
        tok = self.canvas.tok
        if self.stop == "deadline" and tok.mask_id in self.canvas.ids:
            # Cut short: the text up to the first position still masked, never text
            # joined across a gap.
            middle_ids = [t for t in self.canvas.ids[: self.canvas.ids.index(tok.mask_id)] if t != tok.eom_id]
        text = tok.decode(middle_ids)
        cut = first_line(self, text)
        if cut != text:
            text, middle_ids = cut, tok.encode(cut)
        result = InfillResult(text, len(middle_ids), self.forwards, self.ms(), self.stop or "end_of_middle", edits=self.edits, vetoed=self.vetoed, written=self.written,
                              end_rule=self.end.rule if self.end is not None else "")
        return DenoiseStep(self.step, self.canvas.pieces(), [], self.forwards, result.ms, result=result)


class WorkClock:
    """Seconds of work done for one request: the time spent inside its own calls (its
    context and window, its passes' sampling and syntax checks, a forward it runs alone:
    `with clock:`) plus its share of the forwards it shared with other requests
    (`charge`, by its rows of the packed pass). Time spent on the other requests of a
    batch, or waiting for a turn, is not counted: a deadline on this clock
    (SamplerSettings.deadline_seconds) does not depend on what else runs beside the
    request (issue 35: under load, 43 of 80 batched lines were cut at 60 s of wall time
    after 5-7 passes of their own). Calling the clock reads it, a section in progress
    included; sections may nest."""

    def __init__(self) -> None:
        self.spent = 0.0
        self._since: Optional[float] = None
        self._depth = 0

    def __enter__(self) -> "WorkClock":
        if self._depth == 0:
            self._since = time.perf_counter()
        self._depth += 1
        return self

    def __exit__(self, *exc: object) -> None:
        self._depth -= 1
        if self._depth == 0 and self._since is not None:
            self.spent += time.perf_counter() - self._since
            self._since = None

    def charge(self, seconds: float) -> None:
        self.spent += max(0.0, seconds)

    def __call__(self) -> float:
        since = self._since
        return self.spent + (time.perf_counter() - since if since is not None else 0.0)


def predict(logits: torch.Tensor, run: Denoising, forward: bool = True) -> torch.Tensor:
    """The pass's (N, V) probabilities from the model's logits for the canvas: the
    end-of-middle token barred when `allow_end` is off, sampled with temperature, and
    the copy guess mixed in (rule 6). Counts the pass and its forward, unless the logits
    were replayed (`forward` False): a replayed pass is not streamed, so the streamed
    passes stay numbered 1, 2, 3, ... (engine/request.py, InfillRun.canvas_ids)."""
    run.forwards += forward
    run.step += forward
    if not run.settings.allow_end:
        logits[:, run.canvas.tok.eom_id] = float("-inf")
    probs = _probabilities(logits, run.settings, run.generator).cpu()
    if run.copy_index is not None:
        copy_mix(probs, run.canvas, run.copy_index, run.settings.copy_weight)
    if run.first_allowed is not None and probs.shape[0]:
        if run.first_allowed.shape[0] != probs.shape[1]:  # a checkpoint's vocabulary padded past its tokenizer's: once per run
            allowed = run.first_allowed
            run.first_allowed = torch.cat([allowed, allowed.new_zeros(max(0, probs.shape[1] - allowed.shape[0]))])[: probs.shape[1]]
        _restrict(probs[0], run.first_allowed)
    return probs


def _restrict(row: torch.Tensor, allowed: torch.Tensor) -> None:
    """A position's distribution conditioned on its token being one of `allowed` (a healed
    word: every pass, so a commit, a fallback and an edit there all write the word again);
    uniform over them if the model gives them no mass at all."""
    row[~allowed] = 0.0
    total = float(row.sum())
    if total > 0:
        row /= total
    else:
        row[allowed] = 1.0 / max(1, int(allowed.sum()))


def constrain(proposals: list[Proposal], probs: torch.Tensor, run: Denoising) -> list[Proposal]:
    """Rule 5: the proposals the syntax constraint lets stand (refused ones fall back to
    their next-best tokens). If it refuses them all, the same pass's probabilities are
    searched at the first masked position (`_search`) before another forward pass is spent; if nothing
    there is allowed either, the pass writes its most confident proposal anyway (`_forced`:
    the constraint's judgement of a partial canvas can be wrong, and a forced token
    sometimes leads to a middle the final check accepts), but with `close_on_veto`, once
    FORCED_BEFORE_CLOSING tokens were forced, an end of middle at the first masked
    position instead: the middle closes there and the final check judges it, rather than
    forcing on to max_tokens. Never empty: at least one token per pass, by construction
    (the end of the middle counts as one)."""
    if not proposals or run.constraint is None:
        return proposals
    accepted, vetoed = _constrained(proposals, probs, run.canvas, run.constraint, run.prefix, run.suffix)
    run.vetoed += vetoed
    accepted = without_early_ends(accepted, run.canvas)  # an end alone behind a vetoed position is no progress
    if accepted:
        return accepted
    found, vetoed = _search(probs, run.canvas, run.constraint, run.prefix, run.suffix)
    run.vetoed += vetoed
    if found is not None:
        return [found]
    if run.modes.close_on_veto and run.forced >= FORCED_BEFORE_CLOSING:
        first = run.canvas.masked_positions()[0]  # the ordering rule always allows an end here
        run.closed_by_veto = True
        return [Proposal(first, run.canvas.tok.eom_id, float(probs[first, run.canvas.tok.eom_id]))]
    run.forced += 1
    return [_forced(proposals, probs, run.canvas)]


def without_early_ends(proposals: list[Proposal], canvas: CanvasState) -> list[Proposal]:
    """The proposals `commit` would write: the text ones, and an end only where the
    ordering rule allows it once this pass's text is written (CanvasState.end_allowed)."""
    eom = canvas.tok.eom_id
    filled = {p.position for p in proposals if p.token != eom}
    return [p for p in proposals if p.token != eom or canvas.end_allowed(p.position, filled)]


def commit(canvas: CanvasState, proposals: list[Proposal]) -> list[CanvasChange]:
    """Write the proposals into the canvas (an end-of-middle closes it, rule 3). Text goes
    first; an end is dropped if a position before it is still masked (a text proposal
    before it was vetoed), so an end never runs ahead of unresolved text."""
    changes = []
    eom = canvas.tok.eom_id
    for p in sorted(proposals, key=lambda p: p.token == eom):  # stable: text in confidence order, then the end
        if p.token == eom and not canvas.end_allowed(p.position):
            continue
        canvas.commit(p.position, p.token)
        kind = "end" if p.token == canvas.tok.eom_id else "commit"
        changes.append(CanvasChange(p.position, canvas.tok.piece(p.token), p.confidence, kind))
    return changes


def edit(probs: torch.Tensor, run: Denoising, frozen: Collection[int], best: Optional[tuple[list[float], list[int]]] = None) -> list[CanvasChange]:
    """Rule 4: rewrite committed tokens the model is now sure are wrong (never those
    committed in this very pass: their evidence is this pass), subject to the constraint;
    after an end judged on the whole middle (engine/ending.py, JUDGED_WHOLE), only edits
    that keep the middle passing that same final check."""
    edits = propose_edits(probs, run.canvas, run.settings.edit_threshold, frozen, best)
    if edits and run.constraint is not None:
        edits, vetoed = _constrained(edits, probs, run.canvas, run.constraint, run.prefix, run.suffix)
        run.vetoed += vetoed
        if edits and run.end is not None and run.end.rule in JUDGED_WHOLE:
            ids = list(run.canvas.ids[: run.end.position])
            for e in edits:
                ids[e.position] = e.token
            if not run.constraint.accept_final(run.prefix, run.canvas.tok.decode(ids), run.suffix):
                edits = []
    for e in edits:
        run.canvas.commit(e.position, e.token)
    run.edits += len(edits)
    run.edits_last_pass = len(edits)
    return [CanvasChange(e.position, run.canvas.tok.piece(e.token), e.confidence, "edit") for e in edits]


def denoise_pass(probs: torch.Tensor, run: Denoising) -> list[CanvasChange]:
    """One pass's decisions: end? -> propose -> constrain -> commit -> copy run -> end? ->
    edit. Where the middle ends is asked at the same two points of every pass, before the
    commits and after them (engine/ending.py, `decide_end`); an end never skips the pass's
    edits. Returns the pass's changes."""
    canvas, settings = run.canvas, run.settings
    masked = canvas.masked_positions()
    best = _best_per_position(probs)  # shared by propose and edit (the same probabilities)
    end = decide_end(probs, run) if masked else None
    if end is not None:
        changes = close(run, end)
    else:
        proposals = propose(probs, canvas, settings.confidence_threshold, settings.order, settings.end_in_run, best) if masked else []
        changes = commit(canvas, constrain(proposals, probs, run))
        if settings.order == "contiguous":
            changes += extend_by_copy(probs, run, changes)
        end = decide_end(probs, run, changes)
        if end is not None:
            changes += close(run, end)
    changes += edit(probs, run, frozen={c.position for c in changes}, best=best)
    if not masked:
        run.edit_passes += 1
    return changes


def grow(run: Denoising) -> bool:
    """After a pass: False to go on (masks left; or no end yet, so the canvas grows by a
    block up to max_tokens; or edit-only passes left, rule 4), True when no pass is left
    (engine/stopping.py `after_pass` says why)."""
    canvas, settings = run.canvas, run.settings
    if canvas.masked_positions():
        return False
    if canvas.end() is None and canvas.size < run.max_tokens:
        canvas.grow(min(settings.block_size, run.max_tokens - canvas.size))
        return False
    # Closed (or at max_tokens): up to max_edit_passes passes that only look for edits,
    # stopping at the first that changes nothing.
    return not (run.edit_passes < settings.max_edit_passes and (run.edit_passes == 0 or run.edits_last_pass))


def denoise(
    model: DenoisingModel,
    tok: Tokenizer,
    context: object,
    settings: SamplerSettings,
    *,
    constraint: Optional[SyntaxConstraint] = None,
    prefix_text: str = "",
    suffix_text: str = "",
    cancel: Optional[threading.Event] = None,
    start_time: Optional[float] = None,
    forwards_before: int = 0,
    device: str | torch.device = "cpu",
    copy_source: Optional[Sequence[int]] = None,
    copy_suffix: Sequence[int] = (),
    modes: Modes = Modes(),
) -> Iterator[DenoiseStep]:
    """Denoise one canvas against an encoded context; yields a step per forward pass.

    `copy_source`: the prefix's token ids, for rule 6 (used when settings.copy_weight > 0);
    `copy_suffix`: the suffix's, where rule 6 also looks.
    The last yielded step carries `result`. `forwards_before` counts passes already spent
    (e.g. encoding the context); `start_time` is the request's clock start."""
    start = start_time if start_time is not None else time.perf_counter()
    around = Surroundings(prefix_text, suffix_text, constraint, copy_source or (), copy_suffix)
    run = Denoising.begin(tok, settings, around, start, forwards_before, modes)
    while (ids := run.canvas_ids(cancel)) is not None:
        logits = model.canvas_logits(context, torch.tensor([ids], dtype=torch.long, device=device))[0]  # (N, V)
        yield run.advance(logits)
    yield run.finish()


def run_to_end(steps: Iterator[DenoiseStep]) -> InfillResult:
    last: Optional[DenoiseStep] = None
    for last in steps:
        pass
    assert last is not None and last.result is not None
    return last.result


def middle_pieces(canvas: Sequence[Optional[str]]) -> str:
    return "".join(p for p in canvas if p)
