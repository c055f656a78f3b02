"""The Engine: one loaded model behind the small typed surface front ends use.

    eng = engine.load()                      # the embedded model
    result = eng.infill(prefix, suffix, language="python")
    for step in eng.stream(prefix, suffix): ...

Requests are serialized by a lock (one model, one forward at a time); the context cache
of the previous request is kept so that a keystroke re-encodes only what changed. Which
text the model sees is decided here, from the model's trained window (engine/context_window.py):
front ends pass the whole text around the cursor, and context from other files apart.
"""
from __future__ import annotations

import os
import threading
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Hashable, Iterator, Optional, Sequence

import torch

import grammars
from engine.modeldir import load_infill_model, load_tokenizer, read_config
from engine.language import LanguageChoice, resolve_language
from engine.next_edit.suggest import NextEditResult, next_edit
from engine.drafts import Candidates, Verification, candidates, verify
from engine.workspace.retrieve import Draft, WorkspaceContext
from engine.context_cache import ContextCache
from engine.context_window import ContextWindow, context_window, prefix_tail
from engine.healing import Healing
from engine.copying import CopyIndex
from engine.runs import NgramTable
from engine.ending import ending_tokens
from engine.precision import bucket_rows, compute_dtype
from engine.lookahead import Guess, guesses
from engine.sampler import Denoising, Modes, Surroundings, WorkClock, run_to_end
from engine.seams import tidy_middle
from engine.degenerate import degenerate
from engine.tokenizer import Tokenizer, replace_lone_surrogates
from engine.types import DenoiseStep, DenoisingModel, InfillError, InfillResult, MergedEncoding, ModuleKindConstraint, OwnPromptLayout, PackedPasses, ReusableContext, SamplerSettings, SeveralCanvases, SyntaxConstraint, WindowedConstraint
from engine.batching import PACKED_MIN_ROWS

DEFAULT_MODEL_DIR = Path(__file__).resolve().parent / "default_model"
MAX_INPUT_CHARS = 4_000_000  # a request larger than this is refused (prefix + suffix)
SMALL_MODEL_PARAMETERS = 50_000_000  # below this many parameters one torch thread is as fast as two


def constraint_for(language: Optional[str]) -> Optional[SyntaxConstraint]:
    """The syntax constraint of a language: None for no language or one without a
    grammar. A failure to build one (a grammar bug, a broken grammar wheel) is raised,
    not hidden: commits silently left unconstrained are how such bugs go unnoticed."""
    if not language:
        return None
    return grammars.constraint_for(language)


def file_constraint(language: Optional[str], filename: Optional[str], workspace: Optional[WorkspaceContext]) -> Optional[SyntaxConstraint]:
    """The syntax constraint of a request: its language's (`constraint_for`), judging a
    JavaScript file as Node loads it where the file's name or package says how
    (`module_kind_of`; elsewhere the constraint reads it from the text)."""
    constraint = constraint_for(language)
    kind = module_kind_of(language, filename, workspace)
    if kind is not None and isinstance(constraint, ModuleKindConstraint):
        return constraint.for_module_kind(kind)
    return constraint


def module_kind_of(language: Optional[str], filename: Optional[str], workspace: Optional[WorkspaceContext]) -> Optional[str]:
    """How Node loads the JavaScript file being edited, where its name (`.mjs`, `.cjs`) or
    its package says it (the nearest package.json's "type": only a workspace index reads
    one, inside its own folder, so a request without an index, an HTTP client's, opens no
    file by the name it sends); None elsewhere: the constraint reads the kind from the
    text (grammars/early_errors.py)."""
    if language != "javascript" or not filename:
        return None
    package_type = workspace.package_type(filename) if workspace is not None else None
    return grammars.declared_module_kind(filename, package_type)


# When the constraint refuses every token a pass searched, and one refused token was
# forced already, the engine's candidates close the middle there (the final check judges
# the text so far; the next candidate follows) instead of forcing on to max_tokens: on
# the 360 dev items, the same middles with 11% fewer forward passes (docs/sampler.md).
CLOSE_ON_VETO = True

MAX_WORD_CUTS = 16  # mid-line cuts tried (longest first) when no whole-line form is accepted

# How much of the suffix the copy rule also looks in (sampler rule 6): ~500 tokens. The
# model's own suffix window (256 tokens) gave fewer dev gains for more passes (docs/sampler.md).
COPY_SUFFIX_CHARS = 2000

# A later candidate of a request reads many canvases an earlier one already passed through
# (the last resort writes left to right; so, at one token per pass, did the first until
# their texts part): on 200 dev items, 369 of its 377 canvases. The logits of an earlier
# candidate's passes are kept, up to this many bytes per request, and a canvas seen again
# is replayed from them without a forward pass: the same logits, so the same middles
# (docs/sampler.md, "Replayed passes").
REPLAY_BYTES = 8 << 20
# Drafted canvases computed beside each pass (engine/lookahead.py): at most this many. On
# this CPU a forward of 2 canvases of 8 rows costs ~1.25x one, of 4 ~1.9x (the weights
# are read once); on the dev lines width 3 spent 43% fewer forwards than none, for ~4% more
# CPU time per request (docs/sampler.md, "Draft and verify").
LOOKAHEAD_WIDTH = 3
LOOKAHEAD_WIDTH_GPU = 6  # every source's whole chain (engine/lookahead.py); not measured on a GPU here

# Work bounded by what is delivered (issue 34): a request never spends more than this many
# forward passes beyond the tokens it returns (result.forwards - result.tokens). Before a
# pass that would go past it, the request stops and answers the best it has: the longest
# cut of a candidate's text so far that the final check accepts, else nothing
# (InfillRun._may_spend, docs/sampler.md "Work bounded by what is delivered").
WASTE_BOUND = 12
# The last resort's own forward passes (beyond the canvases it replays for free). On the
# tuning sets (dev 360, HumanEval 1,033 lines) it was reached 143 and 481 times and spent
# 337 and 365 passes of its own; all 6 of its exact matches (dev; none on HumanEval) and 37
# and 50 of its 47 and 62 non-empty answers came from replayed passes alone, 7 and 8 more
# with one pass of its own, 3 and 4 from more (docs/sampler.md).
LAST_RESORT_PASSES = 1

# A line that must open a block (Python: the next line of code is indented deeper than
# anything before it opened, grammars/python_check.opens_block; JavaScript and TypeScript:
# a `}` below needs its `{` there, grammars/constraint.py) gets, after a refused first
# candidate, one that starts with a block header's keyword: the one the first pass scores
# highest at the line's first word (InfillRun._header_seed). The model alone writes a
# plain statement there (`balance = 0` above an indented `return True`), which the final
# check refuses (docs/sampler.md, "A line that must open a block"). Per language, each
# keyword and the rest of a header it starts: a keyword is scored only where that header
# would pass the final check (no `else` without its `if`, no `try` without its `except`).
# The conditions are `x.y`, not `x`: in a class body `if (x) {` is a method named `if`,
# which the check accepts, and the model's real condition then is not (`x.y` is no
# parameter list).
_BRACE_HEADERS = {"if": " (x.y) {", "for": " (;;) {", "while": " (x.y) {", "switch": " (x.y) {", "try": " {", "} else {": "",
                  "} else if": " (x.y) {", "} catch": " (e) {"}
HEADER_WORDS: dict[str, dict[str, str]] = {
    "python": {"if": " x:", "for": " x in x:", "while": " x:", "with": " x:", "try": ":", "elif": " x:", "else": ":",
               "except": ":", "finally": ":", "def": " x():", "class": " x:"},
    "javascript": _BRACE_HEADERS,
    "typescript": _BRACE_HEADERS,
    "tsx": _BRACE_HEADERS,
}


def lookahead_width(device: str = "cpu") -> int:
    """The INFILL_LOOKAHEAD_WIDTH environment variable (0 turns drafted canvases off), else
    LOOKAHEAD_WIDTH on a CPU and LOOKAHEAD_WIDTH_GPU on a GPU, where a forward's extra rows
    cost next to nothing."""
    text = os.environ.get("INFILL_LOOKAHEAD_WIDTH", "").strip()
    if not text:
        return LOOKAHEAD_WIDTH if str(device).startswith("cpu") else LOOKAHEAD_WIDTH_GPU
    try:
        width = int(text)
    except ValueError:
        width = -1
    if not 0 <= width <= 16:
        raise InfillError(f"INFILL_LOOKAHEAD_WIDTH must be a whole number from 0 to 16, not {text!r}")
    return width


def accepted_cut(constraint: SyntaxConstraint, prefix: str, middle: str, suffix: str) -> Optional[str]:
    """The longest acceptable form of a middle: the polished middle itself, else the
    polished middle cut after one of its line ends (longest first), else its first line
    cut after a word or closing bracket (`x.size() > 0 and foo(` -> `x.size() > 0`).
    Cutting costs parses, not model passes; a first line that runs on past its statement
    is common, and the text before the break is often right. None when nothing non-empty
    is acceptable (whitespace or an empty comment alone is not a suggestion)."""
    polished = constraint.polish(prefix, middle, suffix)
    if shows_something(polished) and constraint.accept_final(prefix, polished, suffix):
        return polished
    tried = {polished}
    ends = [i + 1 for i, ch in enumerate(middle) if ch == "\n"]
    for end in reversed(ends):
        cut = constraint.polish(prefix, middle[:end], suffix)
        if shows_something(cut) and cut not in tried and constraint.accept_final(prefix, cut, suffix):
            return cut
        tried.add(cut)
    first_line = middle[: ends[0]] if ends else middle
    for end in reversed(word_ends(first_line)[-MAX_WORD_CUTS:]):
        cut = constraint.polish(prefix, first_line[:end], suffix)
        if shows_something(cut) and cut not in tried and constraint.accept_final(prefix, cut, suffix):
            return cut
        tried.add(cut)
    return None


def shows_something(middle: str) -> bool:
    """Whether a middle is worth showing: not whitespace alone, nor an empty comment
    (`#`, `//`: the weakest candidate's fallback when it has nothing to say)."""
    return bool(middle.strip().strip("#/").strip())


def word_ends(line: str) -> list[int]:
    """Offsets just after a word, number, closing bracket or quote that is followed by
    something else: the places a line can end without splitting a token."""
    def word(ch: str) -> bool:
        return ch.isalnum() or ch == "_"

    ends = []
    for i in range(1, len(line)):
        before, after = line[i - 1], line[i]
        if (word(before) and not word(after)) or (before in ")]}\"'`" and after != before):
            ends.append(i)
    return ends


@dataclass(frozen=True)
class _Request:
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

    def __init__(self, engine: "Engine", request: _Request, cfg: SamplerSettings, forwards: int, drafts: Optional[Candidates] = None) -> None:
        self.engine = engine
        self.request = request
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
        self.verification: Optional[Verification] = None
        self.drafted = False  # the first candidate wrote a kept draft
        self.ahead: dict[tuple[int, ...], tuple[torch.Tensor, Guess]] = {}  # canvas -> logits computed ahead, and the guess it was (engine/lookahead.py)
        self.previous: Optional[torch.Tensor] = None  # the last pass's logits (the model's own drafts read them)
        self.lookahead_tokens: dict[str, int] = {}  # tokens committed by passes replayed from drafted canvases, by source
        self.lookahead_passes = 0
        self.best: tuple[int, str] = (0, "")  # (tokens, answer): the best answer found so far by the work bound's checks
        self.run = self._begin(forwards)
        if request.no_code_fits:
            self._answer_at_once("indentation")

    def _answer_at_once(self, reason: str) -> None:
        """Answer nothing before any pass: nothing the model could write would pass the
        final check (`_Request.no_code_fits`)."""
        final = self.run.finish()
        assert final.result is not None
        final.result.stop_reason, final.result.candidates_tried = reason, 0
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
        run = Denoising.begin(self.engine.tokenizer, settings, request.around, request.start, forwards, modes, first_width=self.drafts.width if self.drafts else 0,
                              copy_index=self._copy_index)
        self._copy_index = run.copy_index or self._copy_index  # the same surroundings for every candidate: built once
        for position, token in enumerate(seed):
            run.canvas.commit(position, token)
        run.step, run.written = passes_before, written
        run.work = request.work
        self.began_at = forwards  # the request's forwards when this candidate began (LAST_RESORT_PASSES)
        return run

    def _header_seed(self, logits: torch.Tensor) -> Optional[list[int]]:
        """The tokens a block header on the cursor's line starts with (its indentation still
        to write, then a keyword of HEADER_WORDS[language]): the keyword whose tokens the
        request's first pass (`logits`, all positions masked) gives the highest
        log-probability there, among those whose header would pass the final check. None
        when none does."""
        request, tok = self.request, self.engine.tokenizer
        width = logits.shape[0]
        if request.opener is None:
            return None
        lead = ("" if request.healing.word else request.healing.removed) + request.opener
        prefix, suffix = request.healing.user_prefix(request.around.prefix), request.around.suffix
        end = "\n" if suffix.split("\n", 1)[0].strip() else ""  # a line of its own before the suffix's code
        logp = torch.log_softmax(logits.float(), dim=-1)
        best: Optional[tuple[float, list[int]]] = None
        language = getattr(getattr(request.constraint, "spec", None), "name", None)
        for word, rest in HEADER_WORDS.get(language, {}).items():
            ids = tok.encode(lead + word)
            if not ids or len(ids) >= width or tok.decode(ids) != lead + word:
                continue
            if request.constraint is not None and not request.constraint.accept_final(prefix, request.opener + word + rest + end, suffix):
                continue
            score = sum(float(logp[i, t]) for i, t in enumerate(ids))
            if best is None or score > best[0]:
                best = (score, ids)
        return None if best is None else best[1]

    def canvas_ids(self) -> Optional[list[int]]:
        """The canvas of the next forward pass, or None once the request is answered. A
        canvas an earlier candidate already passed through is not handed out: its pass is
        replayed here from the kept logits (not streamed: the next computed step shows it)."""
        while self.final is None:
            ids = self.run.canvas_ids(self.request.cancel)
            if ids is None:
                self._judge(self.run.finish())
                continue
            key = tuple(ids)
            if key in self.ahead:
                self._replay_drafted(key)
                continue
            kept = self.seen.get(key) if self.attempt > 1 else None
            if kept is None:
                if not self._may_spend():
                    continue  # the candidate was stopped (the request answered, or the next candidate begun)
                self._asked = key
                return ids
            self.replayed += 1
            self.previous = kept
            self.run.advance(kept.clone(), replayed=True)  # the sampler may write into its logits
        return None

    def guesses(self, ids: Sequence[int], width: int, grown: bool = False) -> list[Guess]:
        """The canvases worth computing beside `ids` in its forward (engine/lookahead.py);
        `grown`: the forward can take a canvas one block longer (a packed pass)."""
        drafts = self.drafts.tokens if self.drafts is not None else ()
        return guesses(self.run, ids, self.previous, drafts, width, grown)

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
        the request's forwards after it stay within WASTE_BOUND of the best answer it could
        return now (`best`, in tokens as returned), and, for the last resort, while it has
        spent fewer than LAST_RESORT_PASSES of its own. When not: a candidate with a later one
        to come and nothing acceptable yet gives way to it (the later one replays the
        canvases both share without a forward: the last resort's closing `}` that gives 6 of
        the 28 dev exact matches costs no pass of its own); otherwise the request answers
        `best` (stop reason "bounded", or "rejected" when that is nothing). The best answer
        is looked for (parses, no model pass) only when the bound is near: most passes cost
        a comparison."""
        later = self.attempt < len(self.schedule)
        need = self.run.forwards + 1
        capped = self.run.modes.end_when_valid and self.run.forwards - self.began_at >= LAST_RESORT_PASSES
        if need <= self.best[0] + WASTE_BOUND and not capped:
            return True
        found = self._best_so_far()
        if found[0] > self.best[0]:
            self.best = found
        if need <= self.best[0] + WASTE_BOUND and not capped:
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
        result.stop_reason = "bounded" if tokens or self.request.constraint is None else "rejected"
        self._answer(final, result.middle, answer, bounded=tokens)
        return False

    def _best_so_far(self) -> tuple[int, str]:
        """(tokens, answer) of the current candidate's text so far (up to its first masked
        position), judged as a finished middle would be (`_checked`: its longest accepted
        cut), its tokens counted as `_answer` counts them; (0, "") when nothing is
        acceptable. A kept draft stands whole or not at all: nothing here."""
        if self.drafted and self.attempt == 1:
            return 0, ""
        canvas, tok, request = self.run.canvas, self.engine.tokenizer, self.request
        ids = list(canvas.ids)
        end = canvas.end()
        if end is not None:
            ids = ids[:end]
        if tok.mask_id in ids:
            ids = ids[: ids.index(tok.mask_id)]
        ids = [t for t in ids if t != tok.eom_id]
        text = tok.decode(ids)
        if self.run.modes.end_at_line_end and "\n" in text[:-1]:
            text = text[: text.index("\n") + 1]  # in a docstring the middle is its first line (ending.first_line)
        answer = self._checked(text) if request.constraint is not None else request.healing.user_middle(text)
        if not answer and request.constraint is not None and "\n" not in text:
            answer = self._line_so_far(text)
        if not answer:
            return 0, ""
        return self._returned_tokens(answer, len(ids)), answer

    def _line_so_far(self, text: str) -> Optional[str]:
        """A whole line still being written, where the middle is a line of its own (the
        cursor's line blank, the suffix's first line holding code: the middle must end
        with a newline, as its end rule `newline` writes it): the longest of the text so
        far, or its cuts after a word or closer, that passes the final check as a line
        (`l = max(interval1[0], interval2` -> `l = max` + newline); None if none does."""
        request, healing = self.request, self.request.healing
        assert request.constraint is not None
        prefix, suffix = healing.user_prefix(request.around.prefix), request.around.suffix
        line_before = prefix[prefix.rfind("\n") + 1 :]
        if line_before.strip() or not suffix.split("\n", 1)[0].strip():
            return None
        for end in [len(text)] + list(reversed(word_ends(text)[-MAX_WORD_CUTS:])):
            middle = request.constraint.polish(prefix, healing.user_middle(text[:end].rstrip() + "\n"), suffix)
            if shows_something(middle) and request.constraint.accept_final(prefix, middle, suffix):
                return middle
        return None

    def _returned_tokens(self, answer: str, written: int) -> int:
        """The tokens `answer` counts once returned, as `_answer` counts a cut middle: its
        seams tidied, re-encoded, never more than the `written` tokens it was cut from."""
        request = self.request
        middle = tidy_middle(request.healing.user_prefix(request.around.prefix), answer, request.around.suffix)
        return min(written, len(self.engine.tokenizer.encode(middle))) if middle else 0

    def advance(self, logits: torch.Tensor) -> DenoiseStep:
        """One pass of the current candidate, given the model's (N, V) logits; with a
        healed cursor the streamed canvas is shown from the user's cursor. The first pass
        judges the workspace's drafts; a kept one is what the pass writes."""
        draft = self._judge_drafts(logits) if self.drafts is not None and self.verification is None else None
        if self.run.step == 0 and self.attempt == 1 and any(modes.header for _, modes in self.schedule):
            self.first_logits = logits.detach().clone()
        self._keep(logits)
        self.previous = logits
        step = self.run.advance(logits) if draft is None else self.run.adopt(*draft)
        healing = self.request.healing
        if healing:
            canvas = healing.user_pieces(step.canvas)
            changes = [replace(c, text=canvas[c.position]) if c.position < len(canvas) and canvas[c.position] is not None and canvas[c.position] != step.canvas[c.position] else c for c in step.changes]
            step = replace(step, canvas=canvas, changes=changes)
        return step

    def _judge_drafts(self, logits: torch.Tensor) -> Optional[tuple[tuple[int, ...], list[float]]]:
        """The kept draft's tokens and their probabilities in this (first) pass, or None. A
        kept draft becomes the first candidate; the request's own first candidate comes
        after it, replaying this pass, should the final check refuse the draft."""
        assert self.drafts is not None
        self.verification = check = verify(logits, self.drafts)
        if check.kept is None:
            return None
        self.drafted = True
        self.schedule.insert(1, self.schedule[0])
        ids = check.candidates.tokens[check.kept]
        probs = torch.softmax(logits.float(), dim=-1)[torch.arange(len(ids)), torch.tensor(ids)]
        return ids[:-1], probs.tolist()

    def _draft_fallback(self) -> Optional[str]:
        """When nothing else is shown: the likeliest draft the first pass judged (kept or
        not) that the final check accepts whole, as the user gets it; None if there is none.
        No pass is spent: the drafts were judged already."""
        check = self.verification
        if check is None:
            return None
        tok = self.engine.tokenizer
        for index in sorted(range(len(check.probabilities)), key=lambda i: -check.probabilities[i]):
            if self.drafted and index == check.kept:
                continue  # refused already as the first candidate
            sampled = tok.decode(list(check.candidates.tokens[index][:-1]))
            answer = self.request.healing.user_middle(sampled)
            if self.request.constraint is None or self._checked(sampled) == answer:
                return answer
        return None

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

    def _checked(self, middle: str) -> Optional[str]:
        """The middle as the user gets it (from the real cursor) if the syntax check accepts
        it, or its longest acceptable cut (`accepted_cut`); None if nothing is acceptable.
        Judged on the user's text (`Healing.user_middle`), or, when that is refused and the
        user is still typing the indentation, with the rest of the model's run kept
        (`Healing.indentation_completed`: 3 of 8 spaces typed, the model wrote all 8)."""
        request, healing = self.request, self.request.healing
        assert request.constraint is not None
        prefix, suffix = healing.user_prefix(request.around.prefix), request.around.suffix
        accepted = accepted_cut(request.constraint, prefix, healing.user_middle(middle), suffix)
        if accepted is not None:
            return accepted
        rest = healing.indentation_completed(middle)
        return None if rest is None else accepted_cut(request.constraint, prefix, rest, suffix)

    def _judge(self, final: DenoiseStep) -> None:
        """A candidate ended: keep its (cut) middle, or start the next candidate, or answer
        nothing ("rejected"). Every middle, constrained or not, then gets its seams tidied
        (engine/seams.py: no doubled newline, no ghost `()` after a closer)."""
        result, request = final.result, self.request
        assert result is not None
        self._count(result)
        sampled = result.middle
        answer = request.healing.user_middle(sampled)  # from the user's cursor
        from_draft = self.drafted and self.attempt == 1
        if result.stop_reason != "cancelled" and request.constraint is not None:
            accepted = self._checked(sampled)
            if from_draft and accepted != answer:
                accepted = None  # a draft stands whole or not at all: the model's own candidates come next
            if accepted is None and self._next_candidate(final, answer, from_draft):
                return
            answer = accepted or ""
        result.draft = "workspace" if from_draft else ""
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
        if result.stop_reason != "deadline" and self.refused:
            # "rejected" only when the check refused text; when every candidate
            # wrote nothing (an end, whitespace, an empty comment) and no commit was
            # vetoed, the model proposed nothing and the last candidate's reason stands.
            result.stop_reason = "rejected"
        return False

    def _answer(self, final: DenoiseStep, sampled: str, answer: str, bounded: Optional[int] = None) -> None:
        """Answer the request with `answer` (the judged middle, from the user's cursor; the
        model wrote `sampled`), or with the draft fallback when it shows nothing, its seams
        tidied and its tokens counted as returned. `bounded`: the work bound stopped the
        request and `answer` is its best (`_may_spend`), of that many tokens.
        An answer that would leave the request past the work bound while a longer one was
        found on the way (a candidate's accepted text so far, `best`) gives way to it."""
        result, request = final.result, self.request
        assert result is not None
        result.lookahead, result.lookahead_passes = dict(self.lookahead_tokens), self.lookahead_passes
        fallback = self._draft_fallback() if not answer.strip() and result.stop_reason not in ("cancelled", "deadline") else None
        if fallback is not None:  # the model's own candidates gave nothing to show
            answer, result.draft, result.stop_reason, result.end_rule = fallback, "workspace", "end_of_middle", "draft"
        self.seen.clear()  # answered: the kept logits are not needed any more
        self.seen_bytes = 0
        self.ahead.clear()
        self.previous = None
        result.middle = tidy_middle(request.healing.user_prefix(request.around.prefix), answer, request.around.suffix)
        if fallback is not None:
            result.tokens = len(self.engine.tokenizer.encode(result.middle)) if result.middle else 0
        elif bounded is not None:
            result.tokens = bounded
        elif result.middle != sampled:  # the final check, the healing or the seams cut it: count what is returned
            result.tokens = min(result.tokens, len(self.engine.tokenizer.encode(result.middle))) if result.middle else 0
        if result.forwards - result.tokens > WASTE_BOUND and self.best[0] > result.tokens and result.stop_reason != "cancelled":
            tokens, best = self.best
            result.middle = tidy_middle(request.healing.user_prefix(request.around.prefix), best, request.around.suffix)
            result.tokens, result.stop_reason, result.draft = tokens, "bounded", ""
        self._drop_degenerate(result)
        self.final = final

    def _drop_degenerate(self, result: InfillResult) -> None:
        """The one check of the middle about to be returned: one that repeats itself
        (engine/degenerate.py: a loop, a line written twice, the line above the cursor
        again, a copy of a top-level import) is answered empty, stop reason "degenerate".
        A cancelled request keeps its reason: front ends drop its answer by it."""
        request = self.request
        if result.stop_reason == "cancelled":
            return
        prefix = request.healing.user_prefix(request.around.prefix)
        if degenerate(prefix, result.middle, request.around.suffix, ran_to_limit=result.stop_reason == "max_tokens") is not None:
            result.middle, result.tokens, result.stop_reason, result.draft = "", 0, "degenerate", ""


class InfillJob:
    """A checked request, not started yet, so that it can run alone (Engine.stream) or
    join others in a batch (engine/batching.py): `prepare()` readies its context (the
    prefill runs in its first `forward`) and starts its InfillRun; `canvas_ids()` /
    `advance(logits)` are the run's; `final_step()` carries the InfillResult once
    `canvas_ids()` says None."""

    def __init__(self, engine: "Engine", prefix: str, suffix: str, cfg: SamplerSettings, constraint: Optional[SyntaxConstraint], cancel: Optional[threading.Event], cross_file: str = "", cache_key: Optional[Hashable] = None, language: LanguageChoice = LanguageChoice(None, "none"), drafts: Sequence[Draft] = (), copy_table: Optional[NgramTable] = None) -> None:
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
        self._window: object = None  # its syntax checks' window, held while it runs (grammars/window.py WindowCache)
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
        no_code_fits = self.constraint is not None and bool(getattr(self.constraint, "no_code_fits", None)) and self.constraint.no_code_fits(user_prefix, self.suffix)
        opens = getattr(self.constraint, "opens_block", None) if cfg.constrained and not line_end and not no_code_fits else None
        opener = opens(user_prefix, self.suffix) if opens is not None else None
        copy_suffix = tuple(engine.tokenizer.encode(self.suffix[:COPY_SUFFIX_CHARS])) if cfg.copy_weight > 0 and self.suffix else ()
        # A healed request's partial checks judge the text the user gets (HealedConstraint).
        checks = self.healing.judging(self.constraint) if self.constraint is not None else None
        around = Surroundings(self.prefix, self.suffix, checks, engine.copy_source(self.prefix, prefix_ids, cfg), copy_suffix, self.copy_table, self.healing.first_text)
        window_bytes = len(getattr(self._window, "prefix", b"")) + len(getattr(self._window, "suffix", b""))
        request = _Request(around, self.constraint, self.healing, self.cancel, start, self.work, line_end, no_code_fits, opener, window_bytes)
        found = candidates(engine.tokenizer, self.drafts, self.healing.removed, cfg.block_size, cfg.max_tokens) if self.drafts else None
        # A separate encoding pass counts one forward; one merged into the first canvas pass counts none.
        self.run = InfillRun(engine, request, cfg, forwards=1 if fresh and self._pending is None else 0, drafts=found)

    @property
    def encodes_on_first_pass(self) -> bool:
        """The context is still to be encoded, by this job's next `forward` (so that pass
        runs alone, not packed with other requests' canvases)."""
        return self._pending is not None

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
                self._context, logits = model.encode_with_canvas(prefix_ids, suffix_ids, rows, reuse=old)
                self._pending = None
                self.engine.contexts.remember(self._context, self.cache_key)
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


class Engine:
    def __init__(self, model: DenoisingModel, tokenizer: Tokenizer, *, model_dir: Optional[Path] = None, name: str = "infill", info: Optional[dict[str, Any]] = None, device: str = "cpu"):
        self.model = model
        self.tokenizer = tokenizer
        self.model_dir = model_dir
        self.model_name = name
        self.info = info or {}
        self.device = device
        self.settings = SamplerSettings()
        self.lock = threading.Lock()  # one model, one forward at a time: every request and batched pass holds it
        self.contexts = ContextCache()  # encoded contexts kept for reuse (the last one, and keyed requests')
        # Drafted canvases computed beside each solo pass (engine/lookahead.py); only for
        # models whose canvas_logits takes several canvases over one context.
        self.lookahead_width = lookahead_width(device) if isinstance(model, SeveralCanvases) else 0
        self._last_encoded: Optional[tuple[str, list[int]]] = None  # see _encode_text

    # ------------------------------------------------------------------ requests
    def _check(self, prefix: object, suffix: object) -> None:
        if not isinstance(prefix, str) or not isinstance(suffix, str):
            raise InfillError("prefix and suffix must be text (str)")
        if not prefix.strip() and not suffix.strip():
            raise InfillError("nothing to complete around: prefix and suffix are both empty")
        if len(prefix) + len(suffix) > MAX_INPUT_CHARS:
            raise InfillError(f"input too large: {len(prefix) + len(suffix):,} characters (limit {MAX_INPUT_CHARS:,})")
        if "\x00" in prefix[-4096:] or "\x00" in suffix[:4096]:
            raise InfillError("input looks binary (NUL bytes near the cursor); refusing to complete it")

    def window(self, prefix: str, suffix: str, cross_file: str = "", settings: Optional[SamplerSettings] = None) -> ContextWindow:
        """The text around the cursor the model sees (engine/window.py decides)."""
        cfg = settings or self.settings
        return context_window(prefix, suffix, prefix_tokens=cfg.context_tokens, suffix_tokens=cfg.suffix_tokens, cross_file=cross_file, cross_file_share=cfg.cross_file_share)

    def context_ids(self, prefix: str, suffix: str, cross_file: str = "", settings: Optional[SamplerSettings] = None) -> tuple[list[int], list[int]]:
        """(prefix ids, suffix ids) of the window, as the model reads them: BOS (when the
        tokenizer has one and the model does not lay out its own prompt, as the checkpoint
        families' adapters do), the cross-file context, then the tail of the prefix."""
        cfg = settings or self.settings
        tok = self.tokenizer
        window = self.window(prefix, suffix, cross_file, cfg)
        room = max(0, cfg.context_tokens - 1)
        cross_ids = tok.encode(window.cross_file)[: int(room * cfg.cross_file_share)] if window.cross_file else []
        keep = room - len(cross_ids)
        prefix_ids = cross_ids + (self._encode_text(window.prefix)[-keep:] if keep > 0 else [])
        if tok.bos_id is not None and not isinstance(self.model, OwnPromptLayout):
            prefix_ids = [tok.bos_id] + prefix_ids  # family adapters add their own layout's tokens
        return prefix_ids, tok.encode(window.suffix)[: cfg.suffix_tokens]

    def copy_source(self, prefix: str, prefix_ids: list[int], settings: SamplerSettings) -> list[int]:
        """The tokens the copy rule looks in: a longer stretch of the prefix than the
        model's window when `copy_context_tokens` asks for one (it costs a tokenizer call,
        not model time)."""
        if settings.copy_weight <= 0:
            return []
        if settings.copy_context_tokens <= settings.context_tokens:
            return prefix_ids
        return self._encode_text(prefix_tail(prefix, settings.copy_context_tokens))[-settings.copy_context_tokens :]

    def _encode_text(self, text: str) -> list[int]:
        """tokenizer.encode, remembering the last text: when the whole prefix fits the
        model's window, the copy rule's longer window is the same text (one call, not two)."""
        last = self._last_encoded
        if last is not None and last[0] == text:
            return last[1]
        ids = self.tokenizer.encode(text)
        self._last_encoded = (text, ids)
        return ids

    def job(self, prefix: str, suffix: str, language: Optional[str] = None, cancel: Optional[threading.Event] = None, *, cross_file: str = "", cache_key: Optional[Hashable] = None, filename: Optional[str] = None, detect_language: bool = False, workspace: Optional[WorkspaceContext] = None, **settings: Any) -> InfillJob:
        """A checked request (input, settings and syntax constraint), ready to run alone
        (`stream`) or with others (engine/batching.py). `cache_key` names whose request it
        is (a live session, an editor's document): its context is encoded reusing the
        cache of that key's previous request, so many users at once each re-encode only
        what they typed. The language: `language` (an unknown one is an InfillError),
        else `filename`'s extension, else detected when `detect_language` (engine/language.py).
        `workspace`: the index and unsaved texts the request's drafts come from (engine/drafts.py)."""
        self._check(prefix, suffix)
        # A lone surrogate (JSON allows "\udc80") would make the tokenizer raise TypeError.
        prefix, suffix = replace_lone_surrogates(prefix), replace_lone_surrogates(suffix)
        cross_file = replace_lone_surrogates(cross_file)
        cfg = self.settings.replace(**settings)
        # Unconstrained, a detected language would change nothing: detection is skipped.
        choice = resolve_language(language, filename=filename, prefix=prefix, suffix=suffix, detect=detect_language and cfg.constrained)
        constraint = file_constraint(choice.name, filename, workspace) if cfg.constrained else None
        drafts = workspace.drafts(prefix, suffix, filename) if workspace is not None and cfg.workspace_drafts and cfg.max_tokens > 0 else []
        # Other open documents' texts come as the client sent them: lone surrogates too.
        drafts = [replace(d, text=replace_lone_surrogates(d.text), line=replace_lone_surrogates(d.line)) for d in drafts]
        copy_table = None
        if workspace is not None and cfg.workspace_copy and cfg.copy_weight > 0 and cfg.max_tokens > 0:
            copy_table = workspace.ngrams(self.tokenizer)
        return InfillJob(self, prefix, suffix, cfg, constraint, cancel, cross_file, cache_key, choice, drafts, copy_table)

    def stream(self, prefix: str, suffix: str, language: Optional[str] = None, cancel: Optional[threading.Event] = None, *, cross_file: str = "", cache_key: Optional[Hashable] = None, filename: Optional[str] = None, detect_language: bool = False, workspace: Optional[WorkspaceContext] = None, **settings: Any) -> Iterator[DenoiseStep]:
        """Yield every denoising step; the last one carries the InfillResult.

        `prefix` and `suffix` may be the whole text around the cursor and `cross_file`
        context from other files (comment lines): the engine cuts the window (`window`).
        Settings are SamplerSettings knobs, validated by its schema (SettingsError).
        With a syntax constraint, a middle the final check refuses is written again by
        the next model candidate (InfillRun)."""
        job = self.job(prefix, suffix, language, cancel, cross_file=cross_file, cache_key=cache_key, filename=filename, detect_language=detect_language, workspace=workspace, **settings)
        with self.lock:
            job.prepare()
            while (ids := job.canvas_ids()) is not None:
                yield job.advance(job.forward(torch.tensor(ids, dtype=torch.long, device=self.device)))
            yield job.final_step()

    def infill(self, prefix: str, suffix: str, language: Optional[str] = None, cancel: Optional[threading.Event] = None, *, cross_file: str = "", filename: Optional[str] = None, detect_language: bool = False, workspace: Optional[WorkspaceContext] = None, **settings: Any) -> InfillResult:
        """The finished middle (`stream` to its end)."""
        return run_to_end(self.stream(prefix, suffix, language, cancel, cross_file=cross_file, filename=filename, detect_language=detect_language, workspace=workspace, **settings))

    def next_edit(self, document: str, cursor: Any, history: Any = None, language: Optional[str] = None, cancel: Optional[threading.Event] = None, **limits: Any) -> NextEditResult:
        """Suggested edits near `cursor` from the user's recent edits (engine/next_edit/),
        serialized with infill requests (one model, one forward at a time)."""
        with self.lock:
            return next_edit(self, document, cursor, history, language=language, cancel=cancel, **limits)

    def forget_context(self) -> None:
        """Drop the cached contexts: the next request encodes its context from scratch
        (benchmarks time cold requests this way)."""
        with self.lock:
            self.contexts.clear()

    def drop_context(self, key: Hashable) -> None:
        """Forget `key`'s cached context: its session or document closed, nothing will reuse
        it (the engine worker calls this between passes; see EngineWorker.forget)."""
        with self.lock:
            self.contexts.forget(key)

    def describe(self) -> dict[str, Any]:
        return {"model": self.model_name, "model_dir": str(self.model_dir) if self.model_dir else None, "device": self.device, "settings": asdict(self.settings), **self.info}


def _is_infill_dir(config: dict[str, Any]) -> bool:
    return config.get("format") == "infill" or "model" in config and isinstance(config.get("model"), dict)


def _load_infill_dir(path: Path, config: dict[str, Any], device: str, threads: Optional[int], dtype: Optional[str] = None) -> Engine:
    """An Engine over one of infill's own model directories, with the sampler windows the
    model was trained on, computing in `compute_dtype(dtype, device)`."""
    tokenizer = load_tokenizer(path)
    model = load_infill_model(path, config, device=device)
    if dtype is None and config.get("quantization") and not os.environ.get("INFILL_DTYPE"):
        # A quantized directory's layers dequantize their weights on every call on a CPU
        # (engine/quant/linear.py): fp32 there unless bf16 is asked for by name.
        dtype = "fp32"
    precision = compute_dtype(dtype, device)
    if precision != torch.float32:
        model.to(precision)  # every parameter; logits come back fp32 (InfillTransformer.logits)
        if str(device).startswith("cpu"):
            bucket_rows(model)  # a bounded set of oneDNN kernels (engine/precision.py)
    if tokenizer.vocab_size > model.cfg.vocab_size:
        raise InfillError(f"{path}: tokenizer has {tokenizer.vocab_size} tokens but the model only {model.cfg.vocab_size}")
    info = {"parameters": model.num_parameters(), "training": config.get("training", {}), "quantization": config.get("quantization"), "dtype": str(precision).replace("torch.", "")}
    name = config.get("name") or ("infill-default" if path == DEFAULT_MODEL_DIR else path.name)
    _set_threads(threads, model.num_parameters())
    engine = Engine(model, tokenizer, model_dir=path, name=name, info=info, device=device)
    # The context windows the model was trained on: longer ones were measured to be
    # slower and no better (docs/sampler.md); a model dir's "sampler" entry overrides.
    data = config.get("training", {}).get("data", {})
    trained = {"context_tokens": data.get("prefix_tokens"), "suffix_tokens": data.get("suffix_tokens")}
    engine.settings = engine.settings.replace(**{k: v for k, v in trained.items() if isinstance(v, int) and v > 0})
    defaults = config.get("sampler")
    if isinstance(defaults, dict):
        engine.settings = engine.settings.replace(**defaults)
    return engine


def _set_threads(threads: Optional[int], parameters: int) -> None:
    """A canvas pass of a small model is a few small matmuls: one thread is as fast as
    two and never suffers OpenMP oversubscription when the editor, the server and
    other processes share the cores (measured: a tiny model's pass took ~1 s with 2
    threads next to a busy process, ~10 ms with 1). Large models get every core."""
    if threads is None:
        threads = 1 if parameters < SMALL_MODEL_PARAMETERS else 0
    if threads > 0:
        torch.set_num_threads(threads)


def load(
    model_dir: Optional[str | Path] = None,
    device: str = "cpu",
    threads: Optional[int] = None,
    *,
    dtype: Optional[str] = None,
    quantization: Optional[str] = None,
    cache_policy: Optional[str] = None,
) -> Engine:
    """Load a model directory (default: the embedded model) into an Engine.

    infill's own directories and the open checkpoint families (engine.families) both
    work; every problem is an InfillError with a one-line message. `quantization` (e.g.
    "nf4", "int8") and `cache_policy` apply to family checkpoints; infill's own
    directories carry their quantization in config.json. `dtype`: for family checkpoints
    the load dtype; for infill's own directories the compute dtype ("fp32", "bf16", or
    None/"auto": `compute_dtype`)."""
    path = Path(model_dir).expanduser() if model_dir is not None else DEFAULT_MODEL_DIR
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise InfillError(f"device {device!r} requested but no CUDA GPU is available; use --device cpu")
    config = read_config(path)
    if _is_infill_dir(config):
        return _load_infill_dir(path, config, device, threads, dtype)
    from engine import families

    model, tokenizer, info = families.load_family_model(path, device=device, dtype=dtype, quantization=quantization, cache_policy=cache_policy)
    _set_threads(threads, sum(p.numel() for p in model.parameters()) if isinstance(model, torch.nn.Module) else SMALL_MODEL_PARAMETERS)
    return Engine(model, tokenizer, model_dir=path, name=info.get("family", path.name), info=info, device=device)
