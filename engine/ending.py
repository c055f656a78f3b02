"""Where a middle ends: one decision (`decide_end`), asked at the same two points of every
pass, from an ordered list of evidence. Each rule is one small function below; the
decision names the rule that fired (`End.rule`), which the result reports as `end_rule`
and the benchmark tools count (docs/sampler.md, "Where a middle ends").

Before the pass's commits (`changes` None), in this order:
  valid    the last-resort candidate (`Modes.end_when_valid`): the most likely of the
           first masked position's top tokens after which the middle is complete and
           valid; it is written and the middle ends right after it.
  closer   the suffix goes on with a closing bracket or quote and the model's best token
           at the first masked position starts with it (rule 8): the end goes there.
After the commits (and the copy run of rule 7):
  model    the model's own end-of-middle token, committed like text (rules 2-3), or
  veto     the end the constraint's last resort wrote (`Modes.close_on_veto`, rule 5).
  newline  the pass's text ends with a newline and an end is the model's best token at
           the next position (rule 7), or whatever it is (`line_end`: in a docstring).
At the end of the request, `first_line` cuts a docstring's middle at its first newline
(`line_end`): a contiguous run of sure tokens can go past the newline the rule ends at.

An end is written where `CanvasState.end_allowed` permits it (nothing masked before it);
the rules that end a middle the model did not end itself (valid, closer) require the text
before the end to pass the final check, the others that the canvas with the end passes
the partial check (`allows`), as every commit does. A pass that ends still makes its
token-to-token edits (engine/sampler.py, `denoise_pass`), kept after a `valid` or `closer`
end only where the middle still passes the final check it was judged by.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Sequence

import torch

from engine.types import CanvasChange

if TYPE_CHECKING:
    from engine.sampler import CanvasState, Denoising

ENDING_TOKENS = 24  # tokens tried as the last one of a middle by the `valid` rule
# Each of those tries is a final check, which parses the request's syntax window; a window
# grows until its edges are clean (grammars/window.py), so in a class that fills its file
# it is the whole file (tuning packages: 132 of 400 real lines over 12 kB, up to 75 kB, at
# ~7 ms a parse for 47 kB), and one pass of the last resort cost a third of a second there.
# In a window wider than ENDING_WINDOW_BYTES the rule tries proportionally fewer tokens, at
# least ENDING_TOKENS_MIN (`ending_tokens`); narrower windows keep all ENDING_TOKENS.
ENDING_WINDOW_BYTES = 12_000
ENDING_TOKENS_MIN = 4


def ending_tokens(window_bytes: int) -> int:
    """How many of the first masked position's likeliest tokens the `valid` rule tries, for
    a request whose syntax window is `window_bytes` long (0: unknown, all of them)."""
    if window_bytes <= ENDING_WINDOW_BYTES:
        return ENDING_TOKENS
    return max(ENDING_TOKENS_MIN, ENDING_TOKENS * ENDING_WINDOW_BYTES // window_bytes)


CLOSERS = frozenset(")]}\"'`")

# Every rule, in the order `decide_end` asks (the `draft` end is a kept workspace draft,
# engine/drafts.py; `line_end` the cut of `first_line`).
END_RULES = ("valid", "closer", "model", "veto", "newline", "line_end", "draft")
# The rules whose end was judged on the whole middle by the final check: the same pass's
# token-to-token edits stand only if the middle still passes it (engine/sampler.py `edit`).
JUDGED_WHOLE = frozenset({"valid", "closer"})


@dataclass(frozen=True)
class End:
    """Where the middle ends and why: an end-of-middle at `position`, after writing
    `last` (a token at `position - 1`, for the `valid` rule) when given."""

    position: int
    rule: str  # one of END_RULES
    confidence: float
    last: Optional[tuple[int, float]] = None  # (token, its probability)


def decide_end(probs: torch.Tensor, run: "Denoising", changes: Optional[Sequence[CanvasChange]] = None) -> Optional[End]:
    """The one end decision: before the pass's commits (`changes` None) or after them
    (`changes`: what the pass wrote). None when the middle goes on."""
    if run.end is not None or not run.settings.allow_end:
        return None
    if changes is None:
        rules = (_valid, _closer)
        return next((end for rule in rules if (end := rule(probs, run)) is not None), None)
    closed = run.canvas.end()
    if closed is not None:  # rules 2-3 or 5 wrote it
        return End(closed, "veto" if run.closed_by_veto else "model", 1.0)
    return _newline(probs, run, changes)


def close(run: "Denoising", end: End) -> list[CanvasChange]:
    """Write `end` into the canvas (its `last` token first, growing the canvas by one when
    it is full) and record it on the run. An end the pass's commits already wrote is
    only recorded."""
    canvas, tok = run.canvas, run.canvas.tok
    run.end = end
    changes: list[CanvasChange] = []
    if end.last is not None:
        token, confidence = end.last
        canvas.commit(end.position - 1, token)
        changes.append(CanvasChange(end.position - 1, tok.piece(token), confidence, "commit"))
        if end.position >= canvas.size and canvas.size < run.max_tokens:
            canvas.grow(1)
    if end.position < canvas.size and canvas.ids[end.position] != tok.eom_id:
        canvas.commit(end.position, tok.eom_id)
        changes.append(CanvasChange(end.position, "", end.confidence, "end"))
    return changes


def first_line(run: "Denoising", text: str) -> str:
    """The middle's text as returned: in a docstring (`line_end`), its first line."""
    if run.modes.end_at_line_end and "\n" in text[:-1]:
        if run.end is None or run.end.rule != "draft":
            run.end = End(text.index("\n") + 1, "line_end", 1.0)
        return text[: text.index("\n") + 1]
    return text


def _valid(probs: torch.Tensor, run: "Denoising") -> Optional[End]:
    """The last resort's end: the most likely of the first masked position's top
    `Modes.ending_tokens` tokens (ENDING_TOKENS, fewer in a wide window) after which the
    middle, closed right there, passes the final check; only for text written left to
    right, nothing masked before it."""
    canvas, constraint = run.canvas, run.constraint
    if not run.modes.end_when_valid or constraint is None:
        return None
    masked = canvas.masked_positions()
    written = canvas.middle_ids()
    if not masked or masked[0] != len(written):
        return None
    first, tok = masked[0], canvas.tok
    top = probs[first].topk(min(probs.shape[-1], run.modes.ending_tokens))
    for p, t in zip(top.values.tolist(), top.indices.tolist()):
        if t in tok.special_ids or p <= 0:  # probability 0: barred (a healed word's first token)
            continue
        middle = tok.decode(written + [t])
        if middle.strip() and constraint.accept_final(run.prefix, middle, run.suffix):
            return End(first + 1, "valid", 1.0, last=(int(t), float(p)))
    return None


def _closer(probs: torch.Tensor, run: "Denoising") -> Optional[End]:
    """Rule 8: an end at the first masked position when the model's best text token there
    starts with the suffix's first non-blank character, that character closes a bracket or
    a string, and the middle so far (text only) passes the final check. Asked before a
    pass's proposals only: asked again after its commits, for the position after them, it
    ended middles early (dev mid-line exact match 10.6% -> 9.6%, docs/measurements/2026-12-01-sampler.md)."""
    canvas, tok, constraint = run.canvas, run.canvas.tok, run.constraint
    nxt = run.suffix.lstrip(" \t")[:1]
    if not run.settings.end_at_closer or run.settings.order != "contiguous" or constraint is None or nxt not in CLOSERS:
        return None
    masked = canvas.masked_positions()
    if not masked or masked[0] == 0:
        return None  # nothing written yet: an empty middle is not an answer
    first = masked[0]
    row = probs[first].clone()
    row[tok.mask_id] = 0
    lead = int(row.argmax())
    if lead in tok.special_ids or not tok.piece(lead).lstrip(" \t").startswith(nxt):
        return None
    middle = tok.decode(canvas.ids[:first])
    if not middle.strip() or not constraint.accept_final(run.prefix, middle, run.suffix):
        return None
    return End(first, "closer", float(probs[first, tok.eom_id]))


def _newline(probs: torch.Tensor, run: "Denoising", changes: Sequence[CanvasChange]) -> Optional[End]:
    """Rule 7's end: when the pass's last written token holds a newline and the position
    after it is masked with nothing masked before, an end there if it is the model's most
    likely token (or whatever it is, in a docstring: `line_end`) and the constraint allows
    it (the final check judges the middle as always)."""
    canvas, tok = run.canvas, run.canvas.tok
    if not run.settings.end_after_newline or run.settings.order != "contiguous":
        return None
    position = after_written(canvas, changes)
    if position is None or "\n" not in tok.piece(canvas.ids[position - 1]):
        return None
    if int(probs[position].argmax()) != tok.eom_id and not run.modes.end_at_line_end:
        return None
    if run.constraint is not None and not run.constraint.allows(run.prefix, canvas.pieces({position: tok.eom_id}), run.suffix):
        return None
    return End(position, "newline", float(probs[position, tok.eom_id]))


def after_written(canvas: "CanvasState", changes: Sequence[CanvasChange]) -> Optional[int]:
    """The position right after this pass's last commit when it is still masked and all
    text before it is written (rules 7 read the text to its left), else None."""
    commits = [c.position for c in changes if c.kind == "commit"]
    if not commits or canvas.end() is not None:
        return None
    position = max(commits) + 1
    if position >= canvas.size or canvas.ids[position] != canvas.tok.mask_id or canvas.tok.mask_id in canvas.ids[:position]:
        return None
    return position
