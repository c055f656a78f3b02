"""The one producer of a request's answer: what the user gets from a candidate's text.

Every returned middle and its token count are made here (`Answers.make`): the text judged
as the user gets it (healing undone, `Answers.checked`: the polished middle, else its
longest accepted cut), the workspace's draft when the model's candidates show nothing,
seams tidied (engine/seams.py), the tokens counted as returned, the work bound's best
answer where it is longer, and the degenerate check last (engine/degenerate.py). The
request loop (engine/request.py) decides when to answer; this module decides what.
"""
from __future__ import annotations

from typing import Optional, Sequence

from engine import stopping
from engine.degenerate import degenerate
from engine.drafts import Verification
from engine.healing import Healing
from engine.seams import tidy_middle
from engine.tokenizer import Tokenizer
from engine.types import InfillResult, SyntaxConstraint

MAX_WORD_CUTS = 16  # mid-line cuts tried (longest first) when no whole-line form is accepted


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


class Answers:
    """A request's answers: its candidates' texts judged as the user gets them, and the
    one place the returned middle and its token count are made."""

    def __init__(self, constraint: Optional[SyntaxConstraint], healing: Healing, prefix: str, suffix: str, tokenizer: Tokenizer) -> None:
        self.constraint = constraint  # the language's own check, judging the user's text (None: unconstrained)
        self.healing = healing  # what was cut at the cursor, and the way back to the user's text
        self.prefix, self.suffix = prefix, suffix  # the healed prefix the model wrote after, and the suffix
        self.tokenizer = tokenizer

    def user_prefix(self) -> str:
        return self.healing.user_prefix(self.prefix)

    def checked(self, middle: str) -> Optional[str]:
        """The middle as the user gets it (from the real cursor) if the syntax check accepts
        it, or its longest acceptable cut (`accepted_cut`); None if nothing is acceptable.
        Judged on the user's text (`Healing.user_middle`), or, when that is refused and the
        user is still typing the indentation, with the rest of the model's run kept
        (`Healing.indentation_completed`: 3 of 8 spaces typed, the model wrote all 8)."""
        constraint, healing = self.constraint, self.healing
        assert constraint is not None
        prefix, suffix = self.user_prefix(), self.suffix
        accepted = accepted_cut(constraint, prefix, healing.user_middle(middle), suffix)
        if accepted is not None:
            return accepted
        rest = healing.indentation_completed(middle)
        return None if rest is None else accepted_cut(constraint, prefix, rest, suffix)

    def so_far(self, ids: Sequence[int], end_at_line_end: bool) -> tuple[int, str]:
        """(tokens, answer) of a candidate's text so far (`ids`, up to its first masked
        position), judged as a finished middle would be (`checked`), its tokens counted as
        `make` counts them; (0, "") when nothing is acceptable."""
        constraint = self.constraint
        text = self.tokenizer.decode(list(ids))
        if end_at_line_end and "\n" in text[:-1]:
            text = text[: text.index("\n") + 1]  # in a docstring the middle is its first line (ending.first_line)
        answer = self.checked(text) if constraint is not None else self.healing.user_middle(text)
        if not answer and constraint is not None and "\n" not in text:
            answer = self.line_so_far(text)
        if not answer:
            return 0, ""
        return self.returned_tokens(answer, len(ids)), answer

    def line_so_far(self, text: str) -> Optional[str]:
        """A whole line still being written, where the middle is a line of its own (the
        cursor's line blank, the suffix's first line holding code: the middle must end
        with a newline, as its end rule `newline` writes it): the longest of the text so
        far, or its cuts after a word or closer, that passes the final check as a line
        (`l = max(interval1[0], interval2` -> `l = max` + newline); None if none does."""
        constraint, healing = self.constraint, self.healing
        assert constraint is not None
        prefix, suffix = self.user_prefix(), self.suffix
        line_before = prefix[prefix.rfind("\n") + 1 :]
        if line_before.strip() or not suffix.split("\n", 1)[0].strip():
            return None
        for end in [len(text)] + list(reversed(word_ends(text)[-MAX_WORD_CUTS:])):
            middle = constraint.polish(prefix, healing.user_middle(text[:end].rstrip() + "\n"), suffix)
            if shows_something(middle) and constraint.accept_final(prefix, middle, suffix):
                return middle
        return None

    def returned_tokens(self, answer: str, written: int) -> int:
        """The tokens `answer` counts once returned, as `make` counts a cut middle: its
        seams tidied, re-encoded, never more than the `written` tokens it was cut from."""
        middle = tidy_middle(self.user_prefix(), answer, self.suffix)
        return min(written, len(self.tokenizer.encode(middle))) if middle else 0

    def draft_fallback(self, check: Optional[Verification], refused: Optional[int]) -> Optional[tuple[str, str]]:
        """When nothing else is shown: the likeliest draft the first pass judged (`check`,
        kept or not) that the final check accepts whole, as the user gets it; None if there
        is none, with the draft's origin ("path:line"). `refused`: the kept draft's index when the final check refused it already.
        No pass is spent: the drafts were judged already."""
        if check is None:
            return None
        for index in sorted(range(len(check.probabilities)), key=lambda i: -check.probabilities[i]):
            if index == refused:
                continue
            sampled = self.tokenizer.decode(list(check.candidates.tokens[index][:-1]))
            answer = self.healing.user_middle(sampled)
            if (self.constraint is None or self.checked(sampled) == answer) and not self.repeats(answer):
                return answer, check.candidates.drafts[index].origin
        return None

    def repeats(self, middle: str, ran_to_limit: bool = False) -> bool:
        """Whether `middle` (from the user's cursor) repeats itself or the code around it
        (engine/degenerate.py): what `drop_degenerate` answers empty."""
        prefix = self.user_prefix()
        return degenerate(prefix, tidy_middle(prefix, middle, self.suffix), self.suffix, ran_to_limit=ran_to_limit) is not None

    def make(self, result: InfillResult, sampled: str, answer: str, *, bounded: Optional[int], fallback: Optional[tuple[str, str]],
             best: tuple[int, str], waste_bound: int) -> None:
        """Write the answer into `result`: `answer` (the judged middle, from the user's
        cursor; the model wrote `sampled`), or the draft `fallback` when the model's
        candidates showed nothing, its seams tidied and its tokens counted as returned.
        `bounded`: the work bound stopped the request and `answer` is its best, of that
        many tokens. An answer that would leave the request past the work bound
        (`waste_bound`) while a longer one was found on the way (`best`) gives way to it.
        A middle that repeats itself is answered empty (`drop_degenerate`)."""
        if fallback is not None:  # the model's own candidates gave nothing to show
            (answer, result.draft_origin), result.draft, result.end_rule = fallback, "workspace", "draft"
            stopping.stop(result, "end_of_middle")
        prefix, suffix = self.user_prefix(), self.suffix
        result.middle = tidy_middle(prefix, answer, suffix)
        if fallback is not None:
            result.tokens = len(self.tokenizer.encode(result.middle)) if result.middle else 0
        elif bounded is not None:
            result.tokens = bounded
        elif result.middle != sampled:  # the final check, the healing or the seams cut it: count what is returned
            result.tokens = min(result.tokens, len(self.tokenizer.encode(result.middle))) if result.middle else 0
        if result.forwards - result.tokens > waste_bound and best[0] > result.tokens and result.stop_reason != "cancelled":
            tokens, text = best
            result.middle = tidy_middle(prefix, text, suffix)
            result.tokens, result.draft, result.draft_origin = tokens, "", ""
            stopping.stop(result, "bounded")
        self.drop_degenerate(result)

    def drop_degenerate(self, result: InfillResult) -> None:
        """The last check of the middle about to be returned: one that repeats itself
        (engine/degenerate.py: a loop, a line written twice, the line above the cursor
        again, a copy of a top-level import) is answered empty, stop reason "degenerate".
        A cancelled request keeps its reason: front ends drop its answer by it."""
        if result.stop_reason == "cancelled":
            return
        if degenerate(self.user_prefix(), result.middle, self.suffix, ran_to_limit=result.stop_reason == "max_tokens") is not None:
            result.middle, result.tokens, result.draft, result.draft_origin = "", 0, "", ""
            stopping.stop(result, "degenerate")
