"""One request as one loop: its candidates in turn, drafts and replays, the work bound.

`InfillRun.steps` is the request read top to bottom (begin, verify drafts, denoise, end,
answer): a generator that yields each canvas it needs computed and takes the model's
logits for it, so the forward pass stays with the caller. `canvas_ids` / `advance` drive
it one forward at a time: `Engine.stream` drives one run, the batching worker several with
one forward (engine/batching.py). It decides which candidate runs (the request's
settings, a kept workspace draft, a block header's keyword, the last resort written left
to right, an unvetoed one) and when a pass is replayed instead of computed (an earlier
candidate's kept logits, a drafted canvas computed ahead: engine/lookahead.py); why it
stops is engine/stopping.py's, and what the user gets from a candidate's text is made by
engine/answer.py.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from typing import Generator, Optional, Sequence

import torch

from engine.answer import Answers, shows_something
from engine.drafts import Candidates, Verification, verify
from engine.copying import CopyIndex
from engine.ending import ending_tokens
from engine.healing import Healing
from engine.draft_sources import DraftSource, HeaderKeywords, lookahead_sources
from engine.lookahead import Guess, guesses
from engine import near_edit, stopping
from engine.sampler import Denoising, Modes, Surroundings, WorkClock
from engine.tokenizer import Tokenizer
from engine.types import DenoiseStep, InfillResult, SamplerSettings, SyntaxConstraint

# When the constraint refuses every token a pass searched, and one refused token was
# forced already, the engine's candidates close the middle there (the final check judges
# the text so far; the next candidate follows) instead of forcing on to max_tokens: on
# the 360 dev items, the same middles with 11% fewer forward passes (docs/sampler.md).
CLOSE_ON_VETO = True

# A later candidate of a request reads many canvases an earlier one already passed through
# (the last resort writes left to right; so, at one token per pass, did the first until
# their texts part): on 200 dev items, 369 of its 377 canvases. The logits of an earlier
# candidate's passes are kept, up to this many bytes per request, and a canvas seen again
# is replayed from them without a forward pass: the same logits, so the same middles
# (docs/sampler.md, "Replayed passes").
REPLAY_BYTES = 8 << 20


@dataclass(frozen=True)
class Opening:
    """What the request's first pass writes when the workspace's drafts decide it: a kept
    draft whole (`width` 0: `Denoising.adopt`), or a draft to edit as the canvas's start
    (`width` the canvas: `Denoising.start_from`, engine/near_edit.py)."""

    ids: Sequence[int]
    confidences: Sequence[float]
    width: int = 0

@dataclass(frozen=True)
class Request:
    """What every candidate of one request shares."""

    around: Surroundings  # the healed prefix, the suffix, the check judging the user's text, the copy rule's tokens
    constraint: Optional[SyntaxConstraint]  # the language's own check (the final check judges the user's text with it)
    healing: Healing  # what was cut at the cursor, and the way back to the user's text (engine/healing.py)
    cancel: Optional[threading.Event]
    start: float  # perf_counter() at the request's start
    work: Optional[WorkClock] = None  # the request's own work, what its deadline counts (sampler.WorkClock)
    line_end: bool = False  # inside a docstring being written: the middle is its first line (Modes.end_at_line_end)
    no_code_fits: bool = False  # the final check refuses any middle starting with code here (an over-indented line): answered with no pass
    opener: Optional[str] = None  # the cursor's line must open a block (`opens_block`): the indentation a header there writes first ("" when typed), else None
    window_bytes: int = 0  # the syntax checks' window (grammars/window.py), what each final check parses; 0: none or unknown
    language: Optional[str] = None  # the constraint's language, where it knows where blocks open (BlockAwareConstraint): grammars/headers.py HEADER_WORDS' key


class InfillRun:
    """One request's denoising inside the engine: its model candidates in turn, each a
    sampler `Denoising`. It hands out one canvas at a time (`canvas_ids`) and takes the
    model's logits for it (`advance`), so the forward pass stays with the caller:
    Engine.stream drives one run; a batching worker can drive several with one forward.

    Candidates: the request's settings, then a last resort written left to right that
    ends at the first complete, valid middle the model proposes (often one identifier for
    a condition): a short answer rather than none. A plain left-to-right candidate in
    between was measured: it rescued 2 of 21 refused middles and cost 40% more time per
    infill (docs/grammars.md). A middle the final check refuses (and every cut of it, see
    accepted_cut) goes to the next candidate; after the last, the answer is empty."""

    def __init__(self, tokenizer: Tokenizer, request: Request, cfg: SamplerSettings, forwards: int, drafts: Optional[Candidates] = None) -> None:
        self.tokenizer = tokenizer
        self.request = request
        self.answers = Answers(request.constraint, request.healing, request.around.prefix, request.around.suffix, tokenizer)  # what the user gets from a candidate's text (engine/answer.py)
        modes = Modes(close_on_veto=CLOSE_ON_VETO, end_at_line_end=request.line_end)
        last_resort = (cfg.replace(order="left_to_right", max_edit_passes=0), replace(modes, end_when_valid=True, ending_tokens=ending_tokens(request.window_bytes)))
        # The third candidate (candidates >= 3) decodes without vetoes and only the final
        # check judges it: a veto of a partial canvas can steer the model into text that
        # is refused where its own unconstrained middle would have passed (docs/ladder.md).
        free = (cfg.replace(constrained=False), modes)
        plan = [(cfg, modes), last_resort, free]
        self.schedule: list[tuple[SamplerSettings, Modes]] = plan[:1] if request.constraint is None else plan[: max(1, cfg.candidates)]
        if request.opener is not None and len(self.schedule) > 1:
            # Before the last resort, whose `valid` end there is mostly a token that opens a
            # bare block (`{` alone, `return x; {`) or nothing (docs/sampler.md).
            self.schedule.insert(1, (cfg, replace(modes, header=True)))
        self.first_logits: Optional[torch.Tensor] = None  # the request's first pass, kept while a header candidate may follow (`_header_seed`)
        self._copy_index: Optional[CopyIndex] = None  # the copy rule's index of the request's text, shared by its candidates
        self.attempt = 0
        self.refused = 0  # candidates whose text the syntax check refused (commits vetoed, or the final check)
        self.final: Optional[DenoiseStep] = None  # the last step, once the request is answered
        self.seen: dict[tuple[int, ...], torch.Tensor] = {}  # canvas -> its logits, kept for later candidates (REPLAY_BYTES)
        self.seen_bytes = 0
        self.replayed = 0  # passes replayed from `seen` instead of a forward
        self._asked: Optional[tuple[int, ...]] = None  # the canvas handed out for the next forward
        self.drafts = drafts  # the workspace's drafts, judged by the first pass (engine/drafts.py)
        self.sources: list[DraftSource] = lookahead_sources(drafts)  # what proposes the canvases computed ahead (engine/draft_sources.py)
        self.verification: Optional[Verification] = None
        self.drafted = False  # the first candidate wrote a kept draft, or a draft to edit
        self.editing: Optional[int] = None  # the judged draft the first candidate edits (engine/near_edit.py), if it does
        self.ahead: dict[tuple[int, ...], tuple[torch.Tensor, Guess]] = {}  # canvas -> logits computed ahead, and the guess it was (engine/lookahead.py)
        self.previous: Optional[torch.Tensor] = None  # the last pass's logits (the model's own drafts read them)
        self.lookahead_tokens: dict[str, int] = {}  # tokens committed by passes replayed from drafted canvases, by source
        self.lookahead_passes = 0
        self.best: tuple[int, str] = (0, "")  # (tokens, answer): the best answer found so far by the work bound's checks
        self.run = self._begin(forwards)
        self._steps = self.steps()
        if request.no_code_fits:
            self._answer_at_once("indentation")

    def _answer_at_once(self, reason: str) -> None:
        """Answer nothing before any pass: nothing the model could write would pass the
        final check (`Request.no_code_fits`)."""
        final = self.run.finish()
        assert final.result is not None
        stopping.stop(final.result, reason)
        final.result.candidates_tried = 0
        self._answer(final, "", "", bounded=0)

    def _begin(self, forwards: int, passes_before: int = 0, written: int = 0) -> Denoising:
        """The next candidate's sampler state; its passes are numbered on from the earlier
        candidates' (a live client shows one sequence of passes, not `pass 1` twice), and
        its forwards and tokens written are counted on, so the request's figures (and the
        bound forwards <= written + 2, docs/sampler.md) cover every candidate."""
        request, (settings, modes) = self.request, self.schedule[self.attempt]
        self.attempt += 1
        seed: list[int] = []
        if modes.header:
            # Chosen only now that the first candidate was refused. None (no keyword can
            # stand there, or a workspace draft the final check accepts is there to be shown
            # when the model's candidates give nothing, `_draft_fallback`): no header
            # candidate, the last resort (always after it) comes next.
            seed = (self._header_seed(self.first_logits) if self.first_logits is not None and self._draft_fallback() is None else None) or []
            self.first_logits = None
            if not seed:
                self.attempt -= 1
                del self.schedule[self.attempt]
                return self._begin(forwards, passes_before, written)
        run = Denoising.begin(self.tokenizer, settings, request.around, request.start, forwards, modes, first_width=self.drafts.width if self.drafts else 0,
                              copy_index=self._copy_index)
        self._copy_index = run.copy_index or self._copy_index  # the same surroundings for every candidate: built once
        for position, token in enumerate(seed):
            run.canvas.commit(position, token)
        run.step, run.written = passes_before, written
        run.work = request.work
        self.began_at = forwards  # the request's forwards when this candidate began (stopping.LAST_RESORT_PASSES)
        return run

    def _header_seed(self, logits: torch.Tensor) -> Optional[list[int]]:
        """The tokens a block header on the cursor's line starts with: the keyword the
        request's first pass (`logits`, all positions masked) finds likeliest among those
        whose header passes the final check (engine/draft_sources.py HeaderKeywords). None
        when none does."""
        request = self.request
        if request.opener is None:
            return None
        lead = ("" if request.healing.word else request.healing.removed) + request.opener
        keywords = HeaderKeywords(request.language or "", lead, request.opener)
        return keywords.seed(self.tokenizer, logits, request.constraint, request.healing, request.around.prefix, request.around.suffix)

    def steps(self) -> Generator[object, Optional[torch.Tensor], None]:
        """The request, top to bottom: each candidate begun (`_begin`) denoises pass by
        pass until it ends; its end is judged (`_judge`: the final check, then the answer or
        the next candidate). A pass whose logits are known already is replayed, no forward
        (a canvas a draft guessed, one an earlier candidate read); before any other the
        work bound may stop the candidate (`_may_spend`). The forward stays with the
        caller: this yields the canvas to compute (a list of ids), is sent its (N, V)
        logits, and yields the pass's DenoiseStep (the first pass verifies the workspace's
        drafts too: `_pass`); sent None instead, the canvas is looked for again (asked again
        before its pass: a cancel or the deadline may have come since). It ends once
        `final` holds the answer."""
        while self.final is None:
            ids = self.run.canvas_ids(self.request.cancel)
            if ids is None:
                self._judge(self.run.finish())  # end: the answer, or the next candidate begun
            elif self._replayed(tuple(ids)):
                continue
            elif self._may_spend():
                self._asked = tuple(ids)
                logits = yield ids
                if logits is not None:
                    yield self._pass(logits)

    def canvas_ids(self) -> Optional[list[int]]:
        """The canvas of the next forward pass, or None once the request is answered
        (`steps`, driven one forward at a time)."""
        try:
            ids = self._steps.send(None)  # asked twice before its pass, the canvas is looked for again
        except StopIteration:
            return None
        assert isinstance(ids, list)
        return ids

    def advance(self, logits: torch.Tensor) -> DenoiseStep:
        """The pass over the canvas `canvas_ids` handed out, given its (N, V) logits."""
        step = self._steps.send(logits)
        assert isinstance(step, DenoiseStep)
        return step

    def _replayed(self, key: tuple[int, ...]) -> bool:
        """Run the pass over canvas `key` on logits known already, if they are: computed
        ahead for a draft's guess (engine/lookahead.py), or kept from an earlier candidate
        (REPLAY_BYTES). Not streamed: the next computed step shows it."""
        if key in self.ahead:
            self._replay_drafted(key)
            return True
        kept = self.seen.get(key) if self.attempt > 1 else None
        if kept is None:
            return False
        self.replayed += 1
        self.previous = kept
        self.run.advance(kept.clone(), replayed=True)  # the sampler may write into its logits
        return True

    def guesses(self, ids: Sequence[int], width: int, grown: bool = False) -> list[Guess]:
        """The canvases worth computing beside `ids` in its forward (engine/lookahead.py);
        `grown`: the forward can take a canvas one block longer (a packed pass)."""
        return guesses(self.run, ids, self.previous, self.sources, width, grown)

    def computed_ahead(self, drafted: Sequence[Guess], logits: torch.Tensor) -> None:
        """Keep the drafted canvases' logits (rows of the forward that computed the asked
        canvas) for the next pass; the previous forward's are dropped."""
        self.ahead = {guess.canvas: (logits[i], guess) for i, guess in enumerate(drafted)}

    def _replay_drafted(self, key: tuple[int, ...]) -> None:
        """The sampler asked for a canvas a draft guessed: its pass runs on the logits
        computed ahead, no forward spent (not streamed: the next computed step shows it)."""
        logits, guess = self.ahead.pop(key)
        source = guess.source
        self._asked = key
        self._keep(logits)
        self.previous = logits
        step = self.run.advance(logits.clone(), replayed=True)
        self.lookahead_passes += 1
        self.lookahead_tokens[source] = self.lookahead_tokens.get(source, 0) + sum(c.kind == "commit" for c in step.changes)

    def _may_spend(self) -> bool:
        """The work bound: may the current candidate spend one more forward? Only while
        the request's forwards after it stay within the work bound of the best answer it
        could return now (`best`, in tokens as returned), and, for the last resort, while it
        has passes of its own left (engine/stopping.py `may_spend`). When not: a candidate with a later one
        to come and nothing acceptable yet gives way to it (the later one replays the
        canvases both share without a forward: the last resort's closing `}` that gives 6 of
        the 28 dev exact matches costs no pass of its own); otherwise the request answers
        `best` (stop reason "bounded", or "rejected" when that is nothing). The best answer
        is looked for (parses, no model pass) only when the bound is near: most passes cost
        a comparison."""
        later = self.attempt < len(self.schedule)
        need = self.run.forwards + 1
        if self.editing is not None and self.attempt == 1 and stopping.edit_spent(self.run, near_edit.MAX_FORWARDS):
            self._judge(self.run.finish())  # the edit had its passes: judged as it stands (`near_edit.keeps`)
            return False
        capped = stopping.last_resort_spent(self.run, self.began_at)
        if stopping.may_spend(need, self.best[0], capped):
            return True
        found = self._best_so_far()
        if found[0] > self.best[0]:
            self.best = found
        if stopping.may_spend(need, self.best[0], capped):
            return True
        final = self.run.finish()
        result = final.result
        assert result is not None
        self._count(result)
        result.draft = ""
        if later and not self.best[0]:
            # Nothing acceptable from this candidate: the next one has the passes kept for it.
            self.refused += 1
            result.vetoed += 1
            self.run = self._begin(result.forwards, passes_before=final.step, written=result.written)
            return False
        tokens, answer = self.best
        stopping.bounded(result, tokens, constrained=self.request.constraint is not None)
        self._answer(final, result.middle, answer, bounded=tokens)
        return False

    def _best_so_far(self) -> tuple[int, str]:
        """(tokens, answer) of the current candidate's text so far (up to its first masked
        position), judged as a finished middle would be (`Answers.so_far`); (0, "") when
        nothing is acceptable. A kept draft stands whole or not at all: nothing here."""
        if self.drafted and self.attempt == 1:
            return 0, ""
        canvas, tok = self.run.canvas, self.tokenizer
        ids = list(canvas.ids)
        end = canvas.end()
        if end is not None:
            ids = ids[:end]
        if tok.mask_id in ids:
            ids = ids[: ids.index(tok.mask_id)]
        ids = [t for t in ids if t != tok.eom_id]
        return self.answers.so_far(ids, self.run.modes.end_at_line_end)

    def _pass(self, logits: torch.Tensor) -> DenoiseStep:
        """One pass of the current candidate, given the model's (N, V) logits; with a
        healed cursor the streamed canvas is shown from the user's cursor. The first pass
        judges the workspace's drafts; a kept one is what the pass writes."""
        opening = self._judge_drafts(logits) if self.drafts is not None and self.verification is None else None
        if self.run.step == 0 and self.attempt == 1 and any(modes.header for _, modes in self.schedule):
            self.first_logits = logits.detach().clone()
        self._keep(logits)
        self.previous = logits
        if opening is None:
            step = self.run.advance(logits)
        elif opening.width:
            step = self.run.start_from(opening.ids, opening.confidences, opening.width)
        else:
            step = self.run.adopt(opening.ids, opening.confidences)
        healing = self.request.healing
        if healing:
            canvas = healing.user_pieces(step.canvas)
            changes = [replace(c, text=canvas[c.position]) if c.position < len(canvas) and canvas[c.position] is not None and canvas[c.position] != step.canvas[c.position] else c for c in step.changes]
            step = replace(step, canvas=canvas, changes=changes)
        return step

    def _judge_drafts(self, logits: torch.Tensor) -> Optional[Opening]:
        """The kept draft's tokens and their probabilities in this (first) pass; with none
        kept, a draft to edit (`_edit_start`); or None. Either becomes the first candidate;
        the request's own first candidate comes after it, replaying this pass, should the
        final check (or, for an edit, `near_edit.keeps`) refuse it."""
        assert self.drafts is not None
        self.verification = check = verify(logits, self.drafts)
        if check.kept is None:
            return self._edit_start(check)
        self.drafted = True
        self.schedule.insert(1, self.schedule[0])
        ids = check.candidates.tokens[check.kept]
        probs = torch.softmax(logits.float(), dim=-1)[torch.arange(len(ids)), torch.tensor(ids)]
        return Opening(ids[:-1], probs.tolist())

    def _edit_start(self, check: Verification) -> Optional[Opening]:
        """The likeliest judged draft as the start of a canvas the model edits, when the
        request's settings ask for it (`edit_drafts`), the rest of the cursor's line is
        empty (a whole line is edited) and the accept rule rates it at least
        near_edit.EDIT_FLOOR; None otherwise. Its passes edit at near_edit.EDIT_THRESHOLD."""
        settings = self.schedule[0][0]
        whole_line = not self.request.line_end and self.request.around.suffix[:1] in ("", "\n", "\r")
        best = near_edit.start_for(check, settings.edit_drafts and whole_line)
        if best is None:
            return None
        tok = self.tokenizer
        ids = tok.encode(self.request.healing.removed + check.candidates.drafts[best].text + "\n")
        width = near_edit.edit_canvas_length(len(ids), settings.block_size)
        if width > settings.max_tokens:
            return None
        self.drafted = True
        self.editing = best
        self.schedule.insert(1, self.schedule[0])
        self.run.settings = near_edit.editing_settings(settings)
        self.run.modes = replace(self.run.modes, end_at_line_end=True)  # one line is edited: it ends at its line's end
        return Opening(ids, [check.probabilities[best]] * len(ids), width)

    def _draft_fallback(self) -> Optional[tuple[str, str]]:
        """When nothing else is shown: the likeliest draft the first pass judged that the
        final check accepts whole (`Answers.draft_fallback`); None if there is none."""
        check = self.verification
        return self.answers.draft_fallback(check, check.kept if self.drafted and check is not None else None)

    def _keep(self, logits: torch.Tensor) -> None:
        """Keep this pass's logits for the request's later candidates, while they fit in
        REPLAY_BYTES (the earliest passes are the ones a later candidate replays)."""
        key, self._asked = self._asked, None
        if key is None or self.attempt >= len(self.schedule) or key in self.seen:
            return  # the last candidate: nobody after it replays
        size = logits.element_size() * logits.nelement()
        if self.seen_bytes + size <= REPLAY_BYTES:
            self.seen[key] = logits.detach().clone()
            self.seen_bytes += size

    def _judge(self, final: DenoiseStep) -> None:
        """A candidate ended: keep its (cut) middle, or start the next candidate, or answer
        nothing ("rejected"). Every middle, constrained or not, then gets its seams tidied
        (engine/seams.py: no doubled newline, no ghost `()` after a closer)."""
        result, request = final.result, self.request
        assert result is not None
        self._count(result)
        from_draft = self.drafted and self.attempt == 1
        edited = from_draft and self.editing is not None
        # An edited line ends with its newline (the canvas it learned on); the suffix
        # already starts with one (`_edit_start`).
        sampled = result.middle[:-1] if edited and result.middle.endswith("\n") else result.middle
        answer = request.healing.user_middle(sampled)  # from the user's cursor
        # An edit the model is not sure of is refused like a middle the check refuses: the
        # model's own candidate follows (engine/near_edit.py `keeps`).
        unsure = edited and result.stop_reason != "cancelled" and not near_edit.keeps(self.tokenizer, self.run.canvas.ids, self.previous)
        if result.stop_reason != "cancelled" and (request.constraint is not None or unsure):
            accepted = None if unsure else self.answers.checked(sampled)
            if from_draft and accepted != answer:
                accepted = None  # a draft stands whole or not at all: the model's own candidates come next
            if accepted is None and self._next_candidate(final, answer, from_draft):
                return
            answer = accepted or ""
        result.draft, result.draft_origin = "", ""
        check = self.verification
        if from_draft and check is not None:
            which = self.editing if self.editing is not None else check.kept
            if which is not None:
                draft = check.candidates.drafts[which]
                result.draft = "edited" if edited and answer.strip() != draft.text.strip() else "workspace"
                result.draft_origin = draft.origin
        self._answer(final, sampled, answer)

    def _count(self, result: InfillResult) -> None:
        """The request's figures so far on a candidate's result: candidates tried, passes
        replayed, drafts verified."""
        result.candidates_tried = self.attempt
        result.replayed = self.replayed
        result.drafts_verified = len(self.verification.candidates.drafts) if self.verification is not None else 0

    def _next_candidate(self, final: DenoiseStep, answer: str, from_draft: bool) -> bool:
        """The final check refused the candidate's middle (`answer`, from the user's
        cursor): start the next candidate (True), or, with none left or no time for
        another, answer nothing (False; "rejected" when the check refused text)."""
        result = final.result
        assert result is not None
        if not from_draft:  # a refused draft is no refusal of the model's own text
            self.refused += result.vetoed > 0 or shows_something(answer)
            result.vetoed += 1
        if self.attempt < len(self.schedule) and result.stop_reason != "deadline":  # no time for another
            self.run = self._begin(result.forwards, passes_before=final.step, written=result.written)
            return True
        stopping.after_candidates(result, self.refused)
        return False

    def _answer(self, final: DenoiseStep, sampled: str, answer: str, bounded: Optional[int] = None) -> None:
        """Answer the request: its figures, the kept logits let go, and the middle made by
        `Answers.make` from `answer` (the judged middle, from the user's cursor; the model
        wrote `sampled`), with the draft fallback when it shows nothing. `bounded`: the work
        bound stopped the request and `answer` is its best (`_may_spend`), of that many tokens."""
        result = final.result
        assert result is not None
        result.lookahead, result.lookahead_passes = dict(self.lookahead_tokens), self.lookahead_passes
        # The draft fallback stands in for an answer that shows nothing, and, when drafts
        # were judged, for one that repeats itself (the degenerate check would empty it).
        fallback = None
        if result.stop_reason not in ("cancelled", "deadline"):
            repeats = self.verification is not None and bool(answer.strip()) and self.answers.repeats(answer, result.stop_reason == "max_tokens")
            if not answer.strip() or repeats:
                fallback = self._draft_fallback()
        self.seen.clear()  # answered: the kept logits are not needed any more
        self.seen_bytes = 0
        self.ahead.clear()
        self.previous = None
        self.answers.make(result, sampled, answer, bounded=bounded, fallback=fallback, best=self.best, waste_bound=stopping.WASTE_BOUND)
        self.final = final
