"""Next-edit suggestions: where the user's next edit near the cursor probably is.

    result = eng.next_edit(document, cursor, history, language="python")   # the Engine method
    result = next_edit(eng, document, cursor, history, language="python")   # what it runs
    for edit in result.edits: edit.start, edit.end (offsets), edit.text, edit.confidence

`history` is the user's recent edits, oldest first; each a (before, after) pair: two whole
document snapshots or just the changed region. Both reduce to the same changed lines
before any rule reads them, and what a rule needs beyond them comes from the current
document, so both give the same proposals (engine.next_edit.replay). No edit is a valid
and frequent answer.

Mechanism (chosen by measurement, see docs/next-edit.md):

* mode "auto" (default): proposals come from the history (engine.next_edit.replay: a
  rename, an added argument, a substitution or rewrite, an inserted line, an added or
  deleted token, replayed on the window around the cursor);
  the model then scores each changed line: the line is a masked canvas between the text
  before it (with the edit history in front, the layout lab/training/edits.py trains)
  and the text after it, and the mean log-probability of the new line against the old
  one moves the proposal's prior: confidence = sigmoid(logit(prior) + model_weight *
  margin). Proposals under `min_confidence` are dropped. `model_weight` defaults to 0:
  with the embedded checkpoint (not yet trained on edits) weight 1 cost 27 points of
  exact match on added arguments and added 10% false edits (docs/next-edit.md).
* mode "model": the whole window is the canvas, initialised with its current tokens;
  one pass, and every token the model would rewrite with probability >= edit_threshold
  is rewritten (the sampler's token-to-token edit rule, engine.sampler.rewrites). No
  history rules at all.
* mode "replay": the history proposals with their priors, no model.

In every mode, edits never break the code: an edit that turns a parseable document (or
window) unparseable is dropped (engine.next_edit.parse_check, the language's tree-sitter
grammar; `NextEditResult.unparseable` counts them).
"""
from __future__ import annotations

import math
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

import torch

from engine.next_edit.parse_check import Syntax
from engine.next_edit.replay import DocumentView, Pattern, Proposal, changed_lines, patterns_from, regions_of, replay
from engine.sampler import rewrites
from engine.text import NEWLINE, UTF32, TextIndex
from engine.tokenizer import replace_lone_surrogates
from engine.types import InfillError, check_knobs, knob

MAX_DOCUMENT_CHARS = 4_000_000
HISTORY_MARKERS = ("<edit>", "<old>", "<new>", "<sep>")


@dataclass(frozen=True)
class NextEditLimits:
    """Next-edit's knobs, validated by the same schema checker as the sampler's
    (engine.types.check_knobs: types from the defaults, bounds from the fields)."""

    lines_before: int = knob(10, 0)  # window: this many lines above the cursor line ...
    lines_after: int = knob(19, 0)  # ... and this many below it (30 lines with the cursor line)
    mode: str = knob("auto", choices=("auto", "model", "replay"))
    min_confidence: float = knob(0.5, 0.0, 1.0)
    max_edits: int = knob(20, 0)
    model_weight: float = knob(0.0)  # how far the model's margin moves a proposal's prior (0 until the model is trained on edits: docs/next-edit.md)
    history_entries: int = knob(3, 0)  # most recent history entries used
    history_tokens: int = knob(160, 0)  # budget for the edit history in the prompt
    context_tokens: int = knob(192, 0)  # document tokens before the scored span
    suffix_tokens: int = knob(64, 0)  # document tokens after it
    edit_threshold: float = knob(0.9, 0.0, 1.0)  # mode "model": rewrite a token at least this sure

    def replace(self, **changes: Any) -> "NextEditLimits":
        """A copy with some limits changed (None keeps one); bad ones are a SettingsError."""
        values = asdict(self)
        values.update(check_knobs(NextEditLimits, {k: v for k, v in changes.items() if v is not None}))
        return NextEditLimits(**values)


@dataclass(frozen=True)
class HistoryEntry:
    before: str
    after: str


@dataclass
class SuggestedEdit:
    start: int  # offsets (code points) in the current document
    end: int
    text: str
    confidence: float
    kind: str  # the pattern kind ("rename", ...) or "model"

    def to_dict(self) -> dict:
        return {"start": self.start, "end": self.end, "text": self.text, "confidence": round(self.confidence, 4), "kind": self.kind}


@dataclass
class NextEditResult:
    edits: list[SuggestedEdit]
    window: tuple[int, int]  # offsets of the window that was considered
    ms: float
    forwards: int = 0  # model passes (context encodings count one each)
    proposals: int = 0  # candidates before the confidence cut
    scored: list[SuggestedEdit] = field(default_factory=list)  # every candidate with its confidence
    unparseable: int = 0  # edits dropped because they broke code that parsed (parse_check)

    def apply(self, document: str) -> str:
        return apply_edits(document, self.edits)


CursorLike = Union[int, Sequence[int], Mapping[str, int]]
HistoryLike = Iterable[Union[HistoryEntry, Sequence[str], Mapping[str, str]]]


# -------------------------------------------------------------------------- helpers
def line_starts(text: str) -> list[int]:
    """Offsets of the lines of `text` ("\n" ends a line; engine/text.py)."""
    return TextIndex(text, NEWLINE).line_starts


def offset_of(text: str, line: int, character: int) -> int:
    """Offset of a 0-based (line, character) position, characters in code points.
    A character past the end of its line means the line's end; a line past the end is
    an error (the caller's document and cursor disagree)."""
    if isinstance(line, bool) or not isinstance(line, int) or not isinstance(character, int) or line < 0 or character < 0:
        raise InfillError(f"cursor must be non-negative integers, got line={line!r} character={character!r}")
    index = TextIndex(text, NEWLINE)
    if line >= index.line_count:
        raise InfillError(f"cursor line {line} is outside the document (0..{index.line_count - 1})")
    return index.offset_at(line, character, UTF32)


def position_of(text: str, offset: int) -> tuple[int, int]:
    """0-based (line, character) of an offset, characters in code points."""
    return TextIndex(text, NEWLINE).position_at(offset, UTF32)


def apply_edits(document: str, edits: Sequence[SuggestedEdit]) -> str:
    """The document with non-overlapping edits applied (order does not matter)."""
    out = document
    for edit in sorted(edits, key=lambda e: e.start, reverse=True):
        out = out[: edit.start] + edit.text + out[edit.end :]
    return out


def _cursor_offset(document: str, cursor: CursorLike) -> int:
    if isinstance(cursor, bool):
        raise InfillError("cursor must be an offset, (line, character) or {line, character}")
    if isinstance(cursor, int):
        if not 0 <= cursor <= len(document):
            raise InfillError(f"cursor offset {cursor} is outside the document (0..{len(document)})")
        return cursor
    if isinstance(cursor, Mapping):
        return offset_of(document, cursor.get("line"), cursor.get("character"))  # type: ignore[arg-type]
    if isinstance(cursor, Sequence) and len(cursor) == 2:
        return offset_of(document, cursor[0], cursor[1])
    raise InfillError("cursor must be an offset, (line, character) or {line, character}")


def normalize_history(history: Optional[HistoryLike]) -> list[HistoryEntry]:
    """HistoryEntry list from entries given as objects, (before, after) pairs or dicts."""
    entries: list[HistoryEntry] = []
    for index, item in enumerate(history or []):
        if isinstance(item, HistoryEntry):
            entry = item
        elif isinstance(item, Mapping):
            entry = HistoryEntry(item.get("before"), item.get("after"))  # type: ignore[arg-type]
        elif isinstance(item, Sequence) and not isinstance(item, str) and len(item) == 2:
            entry = HistoryEntry(item[0], item[1])
        else:
            raise InfillError(f"history[{index}] must be {{before, after}} or a (before, after) pair")
        if not isinstance(entry.before, str) or not isinstance(entry.after, str):
            raise InfillError(f"history[{index}]: before and after must be text")
        entries.append(entry)
    return entries


def window_bounds(document: str, cursor: int, lines_before: int, lines_after: int) -> tuple[int, int]:
    """Offsets of the lines around the cursor's line that next-edit considers."""
    index = TextIndex(document, NEWLINE)
    starts = index.line_starts
    line = index.position_at(cursor, UTF32)[0]
    first = max(0, line - lines_before)
    last = min(len(starts) - 1, line + lines_after)
    end = starts[last + 1] if last + 1 < len(starts) else len(document)
    return starts[first], end


# ---------------------------------------------------------------- the prompt layout
def special_id(tok: Any, name: str) -> int:
    token_id = tok.token_id(name)
    if token_id is None:
        raise InfillError(f"the model's tokenizer lacks {name}; next-edit needs the edit-history tokens")
    return int(token_id)


def history_ids(tok: Any, history: HistoryLike, budget: int) -> list[int]:
    """The edit history as prompt tokens, newest entries kept when over budget:

        <edit> <old> old lines <new> new lines  (per entry, oldest first)  <sep>

    Shared with the training recipe (lab/training/edits.py) so both see one layout."""
    history = normalize_history(history)
    if budget <= 0 or not history:
        return []
    edit, old, new, sep = (special_id(tok, name) for name in HISTORY_MARKERS)
    blocks: list[list[int]] = []
    used = 1
    for entry in reversed(history):
        before, after = changed_lines(entry.before, entry.after)
        block = [edit, old] + tok.encode(before + "\n")[-48:] + [new] + tok.encode(after + "\n")[:48]
        if used + len(block) > budget:
            break
        blocks.append(block)
        used += len(block)
    if not blocks:
        return []
    return [t for block in reversed(blocks) for t in block] + [sep]


def prompt_ids(tok: Any, hist: list[int], before: str, after: str, limits: NextEditLimits) -> tuple[list[int], list[int]]:
    """(prefix ids, suffix ids): BOS, the history, then the document before the span."""
    doc = tok.encode(before[-limits.context_tokens * 6 :])[-limits.context_tokens :] if before and limits.context_tokens else []
    bos = [tok.bos_id] if tok.bos_id is not None else []
    suffix = tok.encode(after[: limits.suffix_tokens * 6])[: limits.suffix_tokens] if after else []
    return bos + hist + doc, suffix


# ------------------------------------------------------------------------ mechanisms
def _conflict(p: Proposal, q: Proposal) -> bool:
    return (p.start, p.end) == (q.start, q.end) or (p.start < q.end and q.start < p.end)


def _merge(proposals: list[Proposal]) -> list[Proposal]:
    """Drop proposals that overlap an earlier one (patterns come most recent first)."""
    kept: list[Proposal] = []
    for p in proposals:
        if not any(_conflict(p, q) for q in kept):
            kept.append(p)
    return sorted(kept, key=lambda p: p.start)


def _logit(p: float) -> float:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


def _line_span(document: str, offset: int) -> tuple[int, int]:
    start = document.rfind("\n", 0, offset) + 1
    end = document.find("\n", offset)
    return start, (len(document) if end == -1 else end)


def _score_lines(eng: Any, document: str, proposals: list[Proposal], hist: list[int], limits: NextEditLimits, cancel: Optional[threading.Event]) -> tuple[dict[int, float], int]:
    """Per changed line (keyed by its start offset): the model's mean log-probability
    margin of the new line over the old one. One context encoding (reused causally from
    line to line) and one canvas pass per line."""
    tok, model = eng.tokenizer, eng.model
    by_line: dict[tuple[int, int], list[Proposal]] = {}
    for p in proposals:
        by_line.setdefault(_line_span(document, p.start), []).append(p)
    margins: dict[int, float] = {}
    forwards = 0
    cache = None
    for (start, end), on_line in sorted(by_line.items()):
        if cancel is not None and cancel.is_set():
            break
        old_line = document[start:end]
        new_line = old_line
        for p in sorted(on_line, key=lambda q: q.start, reverse=True):
            new_line = new_line[: p.start - start] + p.text + new_line[p.end - start :]
        prefix, suffix = prompt_ids(tok, hist, document[:start], document[end:], limits)
        old_ids, new_ids = tok.encode(old_line), tok.encode(new_line)
        length = max(len(old_ids), len(new_ids)) + 1
        cache = model.encode_context(prefix, suffix, reuse=cache)
        canvas = torch.full((1, length), tok.mask_id, dtype=torch.long, device=eng.device)
        logp = torch.log_softmax(model.canvas_logits(cache, canvas)[0].float(), dim=-1).cpu()
        forwards += 2

        def score(ids: list[int]) -> float:
            target = ids + [tok.eom_id] * (length - len(ids))
            return float(logp[torch.arange(length), torch.tensor(target)].mean())

        margins[start] = score(new_ids) - score(old_ids)
    return margins, forwards


def _replay_edits(eng: Any, document: str, cursor: int, history: list[HistoryEntry], window: tuple[int, int], limits: NextEditLimits,
                  cancel: Optional[threading.Event], syntax: Syntax) -> tuple[list[SuggestedEdit], int, int]:
    used = len(history) if not limits.history_entries else min(len(history), limits.history_entries)
    earlier = [r for e in history[: len(history) - used] for r in regions_of(e.before, e.after)]
    regions = [r for e in history[len(history) - used :] for r in regions_of(e.before, e.after)] if limits.history_entries else []
    doc = DocumentView(document, cursor, syntax.text_kind)
    # Older entries give no pattern; they only tell which names a rename made (patterns_from).
    patterns: list[Pattern] = patterns_from(regions, doc=doc, earlier=earlier)
    proposals = _merge([p for pattern in patterns for p in replay(pattern, doc, window)])
    if not proposals:
        return [], 0, 0
    margins: dict[int, float] = {}
    forwards = 0
    if limits.mode == "auto" and limits.model_weight != 0:
        hist = history_ids(eng.tokenizer, history, limits.history_tokens)
        margins, forwards = _score_lines(eng, document, proposals, hist, limits, cancel)
    edits = []
    for p in proposals:
        margin = margins.get(_line_span(document, p.start)[0], 0.0)
        confidence = 1 / (1 + math.exp(-(_logit(p.pattern.prior) + limits.model_weight * margin)))
        edits.append(SuggestedEdit(p.start, p.end, p.text, confidence, p.pattern.kind))
    return edits, forwards, len(proposals)


def _model_edits(eng: Any, document: str, history: list[HistoryEntry], window: tuple[int, int], limits: NextEditLimits) -> tuple[list[SuggestedEdit], int]:
    """The window as a canvas of its current tokens; one pass of token-to-token edits."""
    tok, model = eng.tokenizer, eng.model
    lo, hi = window
    window_ids = tok.encode(document[lo:hi])
    if not window_ids:
        return [], 0
    hist = history_ids(tok, history, limits.history_tokens)
    prefix, suffix = prompt_ids(tok, hist, document[:lo], document[hi:], limits)
    cache = model.encode_context(prefix, suffix)
    canvas = torch.tensor([window_ids], dtype=torch.long, device=eng.device)
    probs = torch.softmax(model.canvas_logits(cache, canvas)[0].float(), dim=-1).cpu()
    new_ids = list(window_ids)
    sure = rewrites(probs, window_ids, limits.edit_threshold, tok.special_ids)  # the sampler's edit rule
    for p in sure:
        new_ids[p.position] = p.token
    if not sure:
        return [], 2
    return _diff_edits(document, lo, document[lo:hi], tok.decode(new_ids), min(p.confidence for p in sure)), 2


def _diff_edits(document: str, lo: int, old: str, new: str, confidence: float) -> list[SuggestedEdit]:
    import difflib

    edits = []
    for op, a1, a2, b1, b2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if op != "equal":
            edits.append(SuggestedEdit(lo + a1, lo + a2, new[b1:b2], confidence, "model"))
    return edits


# ------------------------------------------------------------------------- the API
def next_edit(
    eng: Any,
    document: str,
    cursor: CursorLike,
    history: Optional[HistoryLike] = None,
    language: Optional[str] = None,
    cancel: Optional[threading.Event] = None,
    **limits: Any,
) -> NextEditResult:
    """Suggested edits near `cursor` (see the module docstring); raises InfillError on
    bad input. `language` (a registry name or LSP id) picks the grammar that judges the
    edits and tells strings and comments from code; without one it is detected from the
    window, and an unknown one judges nothing."""
    started = time.perf_counter()
    if not isinstance(document, str):
        raise InfillError("document must be text (str)")
    if len(document) > MAX_DOCUMENT_CHARS:
        raise InfillError(f"document too large: {len(document):,} characters (limit {MAX_DOCUMENT_CHARS:,})")
    settings = NextEditLimits().replace(**limits)
    document = replace_lone_surrogates(document)
    offset = _cursor_offset(document, cursor)
    entries = [HistoryEntry(replace_lone_surrogates(e.before), replace_lone_surrogates(e.after))
               for e in normalize_history(history)]
    window = window_bounds(document, offset, settings.lines_before, settings.lines_after)
    syntax = Syntax(language, document, window)  # parsed on first use only
    if settings.mode == "model":
        scored, forwards = _model_edits(eng, document, entries, window, settings)
        proposals = len(scored)
    else:
        scored, forwards, proposals = _replay_edits(eng, document, offset, entries, window, settings, cancel, syntax)
    chosen, unparseable = syntax.keep([e for e in scored if e.confidence >= settings.min_confidence])
    # Nearest the cursor first: that is where the editor jumps.
    chosen.sort(key=lambda e: (abs(e.start - offset), e.start))
    chosen = sorted(chosen[: settings.max_edits], key=lambda e: e.start)
    return NextEditResult(chosen, window, (time.perf_counter() - started) * 1000, forwards, proposals, scored, unparseable)
