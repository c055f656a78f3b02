"""Edit patterns read from the user's recent edits, and where they apply again.

A history entry is reduced to its changed region, widened to whole tokens; the region
says what kind of edit it was:

* rename: an identifier became another identifier -> the other whole-word occurrences
  of the old name are proposals;
* added argument: text was inserted just inside an argument list `name(...)` -> the
  other calls of `name` that lack it are proposals;
* substitution: any other change of at least MIN_SUBSTITUTION_CHARS characters -> its
  other occurrences are proposals.

Each proposal carries a prior (how often this kind of replay is right) that the model
then adjusts (engine.next_edit). Edits inside strings and comments are not replayed:
changing one string or comment rarely means changing the others.
"""
from __future__ import annotations

import dataclasses
import keyword
import re
from dataclasses import dataclass
from typing import Iterable, Optional

IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*\Z")
# Keywords of the languages infill knows best: swapping one (`var` -> `const`) is a
# substitution to repeat, not a rename.
KEYWORDS = set(keyword.kwlist) | {"var", "let", "const", "function", "async", "await", "typeof", "instanceof", "new", "this", "null", "undefined", "true", "false", "static", "export", "default", "extends", "void", "delete", "case", "switch", "do", "catch", "throw"}
MIN_SUBSTITUTION_CHARS = 3

# Priors: the share of replays we expect to be right before the model has a say. A
# rename to a fresh name is almost always applied everywhere; a name swapped for one
# the document already had is usually a one-off change of reference.
PRIOR = {"rename": 0.8, "rename_existing": 0.3, "added_argument": 0.75, "substitution": 0.6}
REPEATED_BONUS = 0.1  # the same pattern seen in two or more history entries


@dataclass(frozen=True)
class Region:
    """One history entry reduced to the part that changed (character offsets)."""

    before: str
    after: str
    start: int  # first changed character (same in both texts)
    old_end: int  # end of the changed part in `before`
    new_end: int  # end of the changed part in `after`

    @property
    def old(self) -> str:
        return self.before[self.start : self.old_end]

    @property
    def new(self) -> str:
        return self.after[self.start : self.new_end]


@dataclass(frozen=True)
class Pattern:
    kind: str  # "rename" | "rename_existing" | "added_argument" | "substitution"
    old: str
    new: str
    callee: str = ""  # added_argument: the function whose calls get the argument
    at_start: bool = False  # added_argument: inserted after "(" rather than before ")"
    prior: float = 0.5
    in_definition: bool = False  # added_argument: the edit was to `def name(` / `function name(`
    attribute: bool = False  # rename: the old name was an attribute (`.name`); only those follow


@dataclass(frozen=True)
class Proposal:
    start: int  # offsets in the current document
    end: int
    text: str
    pattern: Pattern


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch in "_$"


def changed_region(before: str, after: str) -> Optional[Region]:
    """The differing middle of two texts, widened so no identifier is cut in two."""
    if before == after:
        return None
    limit = min(len(before), len(after))
    i = 0
    while i < limit and before[i] == after[i]:
        i += 1
    j = 0
    while j < limit - i and before[len(before) - 1 - j] == after[len(after) - 1 - j]:
        j += 1
    old_end, new_end = len(before) - j, len(after) - j
    # Widen left while the boundary splits a word ("items" -> "item_list" differs in "s").
    while i > 0 and _is_word(before[i - 1]) and (_starts_word(before, i, old_end) or _starts_word(after, i, new_end)):
        i -= 1
    while old_end < len(before) and _is_word(before[old_end]) and (_ends_word(before, i, old_end) or _ends_word(after, i, new_end)):
        old_end += 1
        new_end += 1
    return Region(before, after, i, old_end, new_end)


def _starts_word(text: str, start: int, end: int) -> bool:
    return start < end and _is_word(text[start])


def _ends_word(text: str, start: int, end: int) -> bool:
    return start < end and _is_word(text[end - 1])


def _inside_string_or_comment(text: str, offset: int) -> bool:
    """Rough, language-agnostic: an odd number of quotes, or a comment marker, before
    `offset` on its line."""
    line = text[text.rfind("\n", 0, offset) + 1 : offset]
    for marker in ("#", "//"):
        at = line.find(marker)
        if at != -1 and line[:at].count('"') % 2 == 0 and line[:at].count("'") % 2 == 0:
            return True
    return line.count('"') % 2 == 1 or line.count("'") % 2 == 1 or line.count("`") % 2 == 1


def _whole_word_at(text: str, start: int, end: int) -> bool:
    left_ok = start == 0 or not (_is_word(text[start - 1]) and _is_word(text[start]))
    right_ok = end >= len(text) or not (_is_word(text[end]) and _is_word(text[end - 1]))
    return left_ok and right_ok


def _matching_paren(text: str, open_at: int) -> int:
    """Index of the ")" closing the "(" at `open_at`, or -1 (strings are not parsed)."""
    depth = 0
    for k in range(open_at, len(text)):
        if text[k] == "(":
            depth += 1
        elif text[k] == ")":
            depth -= 1
            if depth == 0:
                return k
    return -1


def _callee_before(text: str, open_at: int) -> str:
    k = open_at
    while k > 0 and _is_word(text[k - 1]):
        k -= 1
    return text[k:open_at]


DEFINITION_BEFORE = re.compile(r"(?:\bdef|\bfunction)\s+\Z")


def _is_definition(text: str, callee_start: int) -> bool:
    line_start = text.rfind("\n", 0, callee_start) + 1
    return DEFINITION_BEFORE.search(text[line_start:callee_start]) is not None


def _opening_paren(text: str, close_at: int) -> int:
    depth = 0
    for k in range(close_at, -1, -1):
        if text[k] == ")":
            depth += 1
        elif text[k] == "(":
            depth -= 1
            if depth == 0:
                return k
    return -1


def pattern_of(region: Region) -> Optional[Pattern]:
    """What kind of edit a region is, or None when it is not worth replaying."""
    old, new = region.old, region.new
    if _inside_string_or_comment(region.before, region.start):
        return None
    if IDENTIFIER.match(old) and IDENTIFIER.match(new) and not (old in KEYWORDS or new in KEYWORDS):
        # A name the document already used elsewhere: a change of reference, not a rename.
        elsewhere = re.search(rf"(?<![\w$]){re.escape(new)}(?![\w$])", region.before) is not None
        kind = "rename_existing" if elsewhere else "rename"
        attribute = region.start > 0 and region.before[region.start - 1] == "."
        return Pattern(kind, old, new, prior=PRIOR[kind], attribute=attribute)
    if IDENTIFIER.match(old) and IDENTIFIER.match(new):
        return Pattern("substitution", old, new, prior=PRIOR["substitution"])
    if not old and new.strip():
        after = region.after
        end = region.new_end
        empty_list = region.start > 0 and region.before[region.start - 1 : region.start + 1] == "()"
        if empty_list and "\n" not in new:
            callee = _callee_before(region.before, region.start - 1)
            if callee:
                in_def = _is_definition(region.before, region.start - 1 - len(callee))
                return Pattern("added_argument", "", ", " + new.strip(), callee=callee, prior=PRIOR["added_argument"], in_definition=in_def)
        if end < len(after) and after[end] == ")" and new.lstrip().startswith(","):
            open_at = _opening_paren(after, end)
            callee = _callee_before(after, open_at) if open_at > 0 else ""
            if callee:
                in_def = _is_definition(after, open_at - len(callee))
                return Pattern("added_argument", "", new, callee=callee, prior=PRIOR["added_argument"], in_definition=in_def)
        if region.start > 0 and region.before[region.start - 1] == "(" and new.rstrip().endswith(","):
            callee = _callee_before(region.before, region.start - 1)
            if callee:
                in_def = _is_definition(region.before, region.start - 1 - len(callee))
                return Pattern("added_argument", "", new, callee=callee, at_start=True, prior=PRIOR["added_argument"], in_definition=in_def)
        return None
    if len(old.strip()) >= MIN_SUBSTITUTION_CHARS and old.strip() and "\n" not in old:
        return Pattern("substitution", old, new, prior=PRIOR["substitution"])
    return None


def patterns_from(regions: Iterable[Region], max_patterns: int = 3) -> list[Pattern]:
    """Patterns of the most recent regions first; a pattern seen again gains confidence.

    A rename made in several steps is one pattern, judged "fresh" or "existing" by the
    document before its first step (later steps see the new name already)."""
    regions = list(regions)
    first_seen: dict[tuple[str, str], Region] = {}
    for region in regions:
        first_seen.setdefault((region.old, region.new), region)
    found: list[Pattern] = []
    for region in reversed(regions):
        pattern = pattern_of(first_seen[(region.old, region.new)])
        if pattern is None or pattern_of(region) is None:
            continue
        same = next((p for p in found if (p.kind, p.old, p.new, p.callee) == (pattern.kind, pattern.old, pattern.new, pattern.callee)), None)
        if same is not None:
            index = found.index(same)
            found[index] = dataclasses.replace(same, prior=min(0.95, same.prior + REPEATED_BONUS))
            continue
        rival = next((p for p in found if pattern.kind == p.kind == "added_argument" and p.callee == pattern.callee), None)
        if rival is not None:
            # Calls get what the latest edited call got; a definition's new parameter is
            # only the fallback guess while no call has been edited.
            if rival.in_definition and not pattern.in_definition:
                found[found.index(rival)] = pattern
            continue
        if len(found) < max_patterns:
            found.append(pattern)
    return found


def replay(pattern: Pattern, document: str, window: tuple[int, int]) -> list[Proposal]:
    """Where `pattern` applies again inside document[window[0]:window[1]]."""
    lo, hi = window
    out: list[Proposal] = []
    if pattern.kind == "added_argument":
        for match in re.finditer(rf"(?<![\w$]){re.escape(pattern.callee)}\s*\(", document[lo:hi]):
            open_at = lo + match.end() - 1
            if _inside_string_or_comment(document, open_at):
                continue
            close_at = _matching_paren(document, open_at)
            if close_at == -1 or close_at > hi or "\n" in document[open_at:close_at]:
                continue  # calls over several lines: where the argument goes is a matter of style
            args = document[open_at + 1 : close_at]
            if _is_definition(document, lo + match.start()):
                continue  # the definition is where the user started; only calls follow
            if pattern.new.strip(", ") in args:
                continue  # this call already has it
            if pattern.at_start:
                text = pattern.new if args.strip() else pattern.new.rstrip().rstrip(",")
                out.append(Proposal(open_at + 1, open_at + 1, text, pattern))
            else:
                text = pattern.new if args.strip() else pattern.new.lstrip().lstrip(",").lstrip()
                out.append(Proposal(close_at, close_at, text, pattern))
        return out
    start = document.find(pattern.old, lo)
    while start != -1 and start + len(pattern.old) <= hi:
        end = start + len(pattern.old)
        is_attribute = start > 0 and document[start - 1] == "."
        renaming = pattern.kind in ("rename", "rename_existing")
        if _whole_word_at(document, start, end) and not _inside_string_or_comment(document, start) and not (renaming and is_attribute != pattern.attribute):
            out.append(Proposal(start, end, pattern.new, pattern))
        start = document.find(pattern.old, end)
    return out
