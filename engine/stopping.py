"""Why a request stops: every stop reason, and the named checks that decide it.

`InfillResult.stop_reason` is written from here only (`stop`); the sampler's own `stop`
state takes the values these checks return. The checks, in the order a request meets them:

- before each pass (`before_pass`): an empty canvas, the client's cancel, the deadline;
- after each pass (`after_pass`): a pass that could write nothing (stalled), the canvas
  closed or full (end of middle, max tokens; "vetoed" when the constraint's last resort
  wrote the end);
- before a forward the request would spend (`may_spend`): the work bound, and the last
  resort's own pass cap;
- once a candidate ends (`after_candidates`): every candidate refused ("rejected");
- on the answer (engine/answer.py): a draft shown instead ("end_of_middle"), a bounded
  best ("bounded"), a middle that repeats itself ("degenerate"), an over-indented line
  answered before any pass ("indentation").
"""
from __future__ import annotations

import threading
from typing import Optional, Protocol

from engine.types import InfillResult, SamplerSettings

# Every reason a result can carry, and what it means to the user.
STOP_REASONS: dict[str, str] = {
    "end_of_middle": "the middle ended where the model (or an end rule) closed it",
    "max_tokens": "the middle reached max_tokens without an end",
    "empty": "max_tokens is 0: nothing was asked for",
    "cancelled": "the client cancelled the request",
    "deadline": "deadline_seconds of the request's own work ran out: the text written so far",
    "stalled": "a pass could write nothing (a bug, should it happen): the text so far",
    "vetoed": "closed where the syntax check refused every token the pass searched",
    "rejected": "the final syntax check refused every candidate's middle: answered empty",
    "bounded": "the work bound stopped the request: the best accepted text so far",
    "indentation": "the cursor's line is indented where no code may start: answered empty with no pass",
    "degenerate": "the middle repeated itself (engine/degenerate.py): answered empty",
}

# Work bounded by what is delivered: a request never spends more than this many forward
# passes beyond the tokens it returns (result.forwards - result.tokens). Before a pass that
# would go past it, the request stops and answers the best it has: the longest cut of a
# candidate's text so far that the final check accepts, else nothing (docs/sampler.md
# "Work bounded by what is delivered").
WASTE_BOUND = 12

# The last resort's own forward passes (beyond the canvases it replays for free). On the
# tuning sets (dev 360, HumanEval 1,033 lines) it was reached 143 and 481 times and spent
# 337 and 365 passes of its own; all 6 of its exact matches (dev; none on HumanEval) and 37
# and 50 of its 47 and 62 non-empty answers came from replayed passes alone, 7 and 8 more
# with one pass of its own, 3 and 4 from more (docs/sampler.md).
LAST_RESORT_PASSES = 1


class _Canvas(Protocol):
    @property
    def size(self) -> int: ...

    def end(self) -> Optional[int]: ...


class _Modes(Protocol):
    @property
    def end_when_valid(self) -> bool: ...


class Running(Protocol):
    """What the checks read of a candidate's state (engine/sampler.py `Denoising`)."""

    @property
    def canvas(self) -> _Canvas: ...

    @property
    def settings(self) -> SamplerSettings: ...

    @property
    def modes(self) -> _Modes: ...

    @property
    def step(self) -> int: ...

    @property
    def forwards(self) -> int: ...

    @property
    def closed_by_veto(self) -> bool: ...

    @property
    def max_tokens(self) -> int: ...

    def work_seconds(self) -> float: ...


def stop(result: InfillResult, reason: str) -> None:
    """The one writer of `result.stop_reason`."""
    assert reason in STOP_REASONS, reason
    result.stop_reason = reason


def before_pass(run: Running, cancel: Optional[threading.Event]) -> Optional[str]:
    """Why no pass should run (an empty canvas, a cancelled request, the request's deadline
    passed after at least one pass), or None. The deadline counts the request's own work
    (`Denoising.work_seconds`), not the time other requests of its batch took."""
    if run.canvas.size == 0:
        return "empty" if run.max_tokens == 0 else "end_of_middle"
    if cancel is not None and cancel.is_set():
        return "cancelled"
    if run.step > 0 and run.work_seconds() >= run.settings.deadline_seconds:
        return "deadline"
    return None


def after_pass(run: Running, stalled: bool, done: bool) -> Optional[str]:
    """Why denoising stops after a pass, or None to go on. `stalled`: the pass committed
    nothing with masks left (not possible by construction: the next pass would read the
    same canvas and decide the same, so stop rather than spin); `done`: the canvas has no
    pass left to run (engine/sampler.py grow)."""
    if stalled:
        return "stalled"
    if not done:
        return None
    if run.canvas.end() is None:
        return "max_tokens"
    return "vetoed" if run.closed_by_veto else "end_of_middle"


def may_spend(forwards_after: int, best_tokens: int, last_resort_spent: bool) -> bool:
    """The work bound: may a candidate spend one more forward, leaving the request at
    `forwards_after` forwards while its best answer so far counts `best_tokens`? Not past
    WASTE_BOUND, nor once the last resort spent its own passes (`last_resort_spent`)."""
    return forwards_after <= best_tokens + WASTE_BOUND and not last_resort_spent


def last_resort_spent(run: Running, began_at: int) -> bool:
    """The last resort (a candidate that ends at its first valid middle) has spent its
    LAST_RESORT_PASSES forwards of its own since it began at `began_at`."""
    return run.modes.end_when_valid and run.forwards - began_at >= LAST_RESORT_PASSES


def edit_spent(run: Running, max_forwards: int) -> bool:
    """An edit candidate (engine/near_edit.py) would pass `max_forwards` with one more
    forward, its verification pass included: it is judged as it stands instead."""
    return run.forwards + 1 > max_forwards


def bounded(result: InfillResult, tokens: int, constrained: bool) -> None:
    """The work bound answered the request: "bounded" with its best text, "rejected" when
    a constrained request had nothing acceptable."""
    stop(result, "bounded" if tokens or not constrained else "rejected")


def after_candidates(result: InfillResult, refused: int) -> None:
    """No candidate left, or no time for another: "rejected" only when the check refused
    text; when every candidate wrote nothing (an end, whitespace, an empty comment) and no
    commit was vetoed, the model proposed nothing and the last candidate's reason stands.
    A deadline's reason stands too."""
    if result.stop_reason != "deadline" and refused:
        stop(result, "rejected")
