"""Degenerate middles: answers that repeat themselves instead of saying something.

A small model that has nothing to say often keeps writing what it just wrote. Shown to a
user, such a middle is worse than none, so the engine answers these empty, with the stop
reason "degenerate" (engine/answer.py `Answers.make`, the one place a middle is
finalized). `degenerate(prefix, middle, suffix)` names the rule a middle breaks:

  loop          a stretch of at least LOOP_REPEATS copies of a short unit that holds a
                letter and no digit, back to back (`S_RE_ST_S_S_S_S_S_S`); one character
                or a unit with a digit is how real code repeats itself (`0xffffffff`,
                `0, 0, 0, 0`, `\\x00\\x00`, `=====`).
  limit_loop    the model wrote until max_tokens and at least half of the answer, at
                its end, is LIMIT_REPEATS or more copies of one unit (any unit, even
                `0, `): cut off inside a loop.
  repeated_line a line written twice in a row, or the line just above the cursor
                written again on the cursor's line, both verbatim with their indentation
                (a list entry twice, `return` after `return`).
                Lines real code repeats never count: one with no letter (`}`, `);`,
                `0,`), a closing tag, a call made for its effect (`self.stack.pop()`).
                Only the line immediately above: a middle that matches a line elsewhere
                in the file (a workspace draft) stands.
  dead_return   `return`, `raise`, `throw`, `break` or `continue` written right after
                another one at the same indentation (`return` then `return None`): the
                second can never run.
  top_import    an indented `import`/`from ... import` line in the middle that the file's
                top already has (`import os` inside a function body), or an `import a.b`
                whose root `a` the top imports.

The rules judge the text the user would get (the prefix's lines around the cursor, the
middle, the suffix's rest of the cursor's line); they are pure functions on text, like
engine/seams.py, so every front end gets the same verdict.
"""
from __future__ import annotations

import re
from typing import Optional

LOOP_UNIT_CHARS = 24  # the longest unit the loop rules look for
LOOP_REPEATS = 6  # copies of a letter-bearing unit, back to back, that make a loop anywhere
# Copies at the very end of a middle that ran to max_tokens, of any unit (a loop of one
# holding a letter is caught by LOOP_REPEATS already). Fewer are no evidence of a loop: a
# client's small max_tokens cuts `0, 0, 0, 0, 0, 0, 0, 0` from a longer list.
LIMIT_REPEATS = 16
TERMINALS = frozenset({"return", "raise", "throw", "break", "continue"})
TOP_IMPORT = re.compile(r"^(?:import\s+(?P<names>[\w.]+(?:\s*,\s*[\w.]+)*)\s*$|from\s+[\w.]+\s+import\s+.+)")
INDENTED_IMPORT = re.compile(r"^\s+(?:import\s+(?P<module>[\w.]+)\s*$|from\s+[\w.]+\s+import\s+)")
LOOP = re.compile(r"(.{2,%d}?)\1{%d,}" % (LOOP_UNIT_CHARS, LOOP_REPEATS - 1), re.DOTALL)
CLOSING_TAG = re.compile(r"^\s*</[\w.:-]*>\s*$")
CALL_STATEMENT = re.compile(r"^\s*(?:await\s+)?[\w.]+\(.*\)\s*;?\s*$")


def degenerate(prefix: str, middle: str, suffix: str, ran_to_limit: bool = False) -> Optional[str]:
    """The rule (module docstring) the middle breaks at this cursor, or None when it breaks
    none. `ran_to_limit`: the model wrote until max_tokens without ending the middle."""
    if not middle.strip():
        return None
    if ran_to_limit and ends_in_loop(middle.rstrip()):
        return "limit_loop"
    if has_letter_loop(middle):
        return "loop"
    pairs = line_pairs(prefix, middle, suffix)
    if any(repeated(above, line) for above, line in pairs):
        return "repeated_line"
    if any(dead_after(above, line) for above, line in pairs):
        return "dead_return"
    if copies_top_import(prefix, middle, suffix):
        return "top_import"
    return None


def has_letter_loop(text: str) -> bool:
    """Whether `text` holds LOOP_REPEATS copies of one unit back to back (2 to
    LOOP_UNIT_CHARS characters), the unit a loop rather than data
    (`looping_unit`). A regular expression finds each position's shortest repeating unit;
    after a unit that is data the search goes on near the end of its copies (a loop
    starting inside them would hold only their characters)."""
    position = 0
    while (found := LOOP.search(text, position)) is not None:
        if looping_unit(found.group(1)):
            return True
        position = max(found.start() + 1, found.end() - LOOP_UNIT_CHARS)
    return False


def looping_unit(unit: str) -> bool:
    """Whether copies of `unit` back to back read as a loop rather than as data: it holds a
    letter, no digit, and two different characters. Real code repeats one character
    (`0xffffffff`, `mmmmmm` in a format) and units with digits (`\\x00\\x00`, `0, 0, 0`)."""
    return any(ch.isalpha() for ch in unit) and not any(ch.isdigit() for ch in unit) and len(set(unit)) > 1


def ends_in_loop(text: str) -> bool:
    """Whether `text` ends in at least LIMIT_REPEATS copies of one unit (up to
    LOOP_UNIT_CHARS characters, not whitespace alone) that make up at least half of it; a
    final partial copy counts (a loop cut at max_tokens stops anywhere in its unit). The
    share keeps a line that merely ends in `)))` from counting."""
    for period in range(1, min(LOOP_UNIT_CHARS, len(text) // 2) + 1):
        length = period
        while length < len(text) and text[-length - 1] == text[-length - 1 + period]:
            length += 1
        unit = text[len(text) - length : len(text) - length + period]
        if unit.strip() and smallest_period(unit) == period and length // period >= LIMIT_REPEATS and 2 * length >= len(text):
            return True
    return False


def smallest_period(unit: str) -> int:
    """The length of the shortest piece that `unit` is whole copies of (`abab` -> 2)."""
    for period in range(1, len(unit) + 1):
        if len(unit) % period == 0 and unit[:period] * (len(unit) // period) == unit:
            return period
    return len(unit)


def line_pairs(prefix: str, middle: str, suffix: str) -> list[tuple[str, str]]:
    """(line before, line) for every line of the result in which the middle writes
    something other than whitespace: the cursor's line completed with the suffix's rest of
    it when the middle has no line break, and the middle's later lines. The first pair's
    line before is the one just above the cursor's line (none at the file's first line)."""
    head = prefix.rsplit("\n", 1)[-1]
    above = prefix.rsplit("\n", 2)[-2] if "\n" in prefix else None
    tail = suffix.split("\n", 1)[0]
    lines = (head + middle + tail).split("\n")
    written = middle.split("\n")
    pairs = []
    for i, line in enumerate(lines):
        before = above if i == 0 else lines[i - 1]
        if before is not None and written[i].strip():
            pairs.append((before.rstrip(), line.rstrip()))
    return pairs


def repeated(before: str, line: str) -> bool:
    """Whether `line` is `before` again, verbatim, and says something. Lines real code
    repeats do not count: one with no letter (a closer, `);`, `0,`), a closing tag, a call
    made for its effect (`self.stack.pop()`, `print(file=out)` twice)."""
    if line != before or not any(ch.isalpha() for ch in line):
        return False
    return not CLOSING_TAG.match(line) and not CALL_STATEMENT.match(line)


def dead_after(before: str, line: str) -> bool:
    """Whether `line` is a return-like statement right after another at its indentation:
    it can never run."""
    def terminal(text: str) -> bool:
        return re.split(r"[^\w]", text.strip(), maxsplit=1)[0] in TERMINALS

    def indent(text: str) -> str:
        return text[: len(text) - len(text.lstrip())]

    return terminal(before) and terminal(line) and indent(before) == indent(line)


def copies_top_import(prefix: str, middle: str, suffix: str) -> bool:
    """Whether a line the middle writes is an indented import the file above already has
    at its top level: the same statement, or `import a.b...` of a module whose root `a`
    the top imports. The prefix is read only when the middle writes an indented import."""
    head, tail = prefix.rsplit("\n", 1)[-1], suffix.split("\n", 1)[0]
    written = [(line.strip(), found.group("module") or "") for line, piece in zip((head + middle + tail).split("\n"), middle.split("\n"))
               if piece.strip() and (found := INDENTED_IMPORT.match(line))]
    if not written:
        return False
    top, roots = top_imports(prefix)
    return any(line in top or module.split(".")[0] in roots for line, module in written)


def top_imports(prefix: str) -> tuple[set[str], set[str]]:
    """The prefix's top-level import statements, and the root modules its `import a.b`
    statements bind (`a`)."""
    top, roots = set(), set()
    for line in prefix.split("\n"):
        found = TOP_IMPORT.match(line)
        if found:
            top.add(line.strip())
            roots.update(name.strip().split(".")[0] for name in (found.group("names") or "").split(",") if name.strip())
    return top, roots
