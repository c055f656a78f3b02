"""Edit patterns read from the user's recent edits, and where they apply again.

One history: every entry, whether two whole-document snapshots or just the changed lines,
is first reduced to its changed lines (`regions_of`), and everything a rule needs beyond
them is read from the current document (`DocumentView`), which both forms share. So both
forms give the same proposals. A changed-lines entry whose lines keep their count is read
line by line (one region per changed line: two lines renamed alike are one pattern seen
twice, not a two-line substitution); any other entry is one region, widened to whole
tokens, and a region over several lines (code reflowed as it changed) gives only the
names renamed in it. The region says what kind of edit it was:

* rename: an identifier became another identifier -> the other whole-word occurrences of
  the old name; "rename_existing" when the document's code had the new name before the
  history made it (a change of reference, prior below the cut);
* added_argument: text inserted just inside an argument list `name(...)` -> the other
  calls of `name` that lack it;
* substitution: a one-line change of at least MIN_SUBSTITUTION_CHARS characters -> its
  other occurrences; "rewrite" where the change keeps some of its words (`Optional[int]`
  -> `int | None`): a template with a captured term in their place, so `Optional[str]`
  becomes `str | None` too. A name replaced by an expression follows only as a receiver
  or callee (`utils.f(` -> `this.helper.f(`, `print(` -> `logger.info(`);
* inserted_line: one whole line inserted (a decorator above a function) -> above the
  other lines of the window shaped like the line it went above, where it is missing;
* added_token / deleted_token: a token inserted into or deleted from a line (`await `,
  `, strict=True`, the space of `function (`) -> the other places with the same tokens
  on its left and on its right.

Each proposal carries a prior that the model then adjusts (engine.next_edit). The priors
of rename, added argument and substitution were set on synthetic tasks; the new rules
start at substitution's. Real release diffs (lab/evaluation/real_edits.py, the tuning
packages) decided the gates: what they showed wrong more often than right when seen once
stays below the cut until a second history entry repeats it (PRIOR_ONCE).
Edits inside strings and comments are not replayed, and no proposal lands in one
(changing one string or comment rarely means changing the others), except that a renamed
name no prose uses (`pass_many`) follows into comments and docstrings.
"""
from __future__ import annotations

import dataclasses
import difflib
import keyword
import re
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional

IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*\Z")
WORD = re.compile(r"[A-Za-z_$][\w$]*")
# Keywords of the languages infill knows best: swapping one (`var` -> `const`) is a
# substitution to repeat, not a rename.
KEYWORDS = set(keyword.kwlist) | {"var", "let", "const", "function", "async", "await", "typeof", "instanceof", "new", "this", "null", "undefined", "true", "false", "static", "export", "default", "extends", "void", "delete", "case", "switch", "do", "catch", "throw"}
MIN_SUBSTITUTION_CHARS = 3

# Priors: the share of replays we expect to be right before the model has a say. A
# rename to a fresh name is almost always applied everywhere; a name swapped for one
# the document already had is usually a one-off change of reference. The rules real
# diffs asked for (rewrite, inserted_line, added/deleted token) start at substitution's.
PRIOR = {"rename": 0.8, "rename_existing": 0.3, "added_argument": 0.75, "substitution": 0.6, "rewrite": 0.6,
         "inserted_line": 0.6, "added_token": 0.6, "deleted_token": 0.6}
# Replays that real release diffs showed wrong more often than right when seen once, so
# they stay below the cut (min_confidence 0.5) until a second history entry repeats them:
# a bare name replaced by an expression (`range` -> `this.raw` is one place's fix, not
# a pattern) and a plain inserted line (a new list item, a new statement) other than a
# decorator.
PRIOR_ONCE = {"name_to_expression": 0.45, "plain_inserted_line": 0.45}
REPEATED_BONUS = 0.1  # the same pattern seen in two or more history entries
HOLE = "\x00"  # a captured term in a rewrite's template (never in source text)


@dataclass(frozen=True)
class Region:
    """One history entry (or one changed line of it) reduced to the part that changed
    (character offsets)."""

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

    @property
    def whole_lines(self) -> bool:
        """Lines inserted or deleted, nothing else: the entry's other side is empty."""
        return not self.before.strip() or not self.after.strip()


@dataclass(frozen=True)
class Pattern:
    kind: str  # a key of PRIOR
    old: str
    new: str
    callee: str = ""  # added_argument: the function whose calls get the argument
    at_start: bool = False  # added_argument: inserted after "(" rather than before ")"
    prior: float = 0.5
    in_definition: bool = False  # added_argument: the edit was to `def name(` / `function name(`
    attribute: bool = False  # rename: the old name was an attribute (`.name`); only those follow
    left: str = ""  # added/deleted token: the token on the change's left ...
    right: str = ""  # ... and on its right
    shape: tuple[str, ...] = ()  # inserted_line: the shape of the line it went above


@dataclass(frozen=True)
class Proposal:
    start: int  # offsets in the current document
    end: int
    text: str
    pattern: Pattern


@dataclass
class DocumentView:
    """The current document, which every history form shares: where the history's text
    sits in it, whether an offset is in a string or comment."""

    text: str
    cursor: int = 0
    # What an offset is part of per the grammar, "code", "doc" or "string" (engine.
    # next_edit.parse_check.Syntax.text_kind); None, or answering None: the line-local guess.
    kind_at: Optional[Callable[[int], Optional[str]]] = None
    _located: dict[str, int] = field(default_factory=dict)

    def text_at(self, offset: int) -> bool:
        """Whether `offset` lies in a string or a comment."""
        kind = self.kind_at(offset) if self.kind_at is not None else None
        return _inside_string_or_comment(self.text, offset) if kind is None else kind != "code"

    def count_in_code(self, word: str) -> int:
        """Whole-word uses of `word` outside strings and comments."""
        return sum(1 for m in re.finditer(rf"(?<![\w$]){re.escape(word)}(?![\w$])", self.text) if not self.text_at(m.start()))

    def doc_at(self, offset: int) -> bool:
        """Whether `offset` lies in a comment or a docstring (only the grammar tells)."""
        return self.kind_at is not None and self.kind_at(offset) == "doc"

    def locate(self, snippet: str) -> int:
        """Where `snippet` (a history entry's new lines) stands in the document: the
        occurrence nearest the cursor, or -1."""
        if snippet not in self._located:
            best, at = -1, self.text.find(snippet) if snippet else -1
            while at != -1:
                if best == -1 or abs(at - self.cursor) < abs(best - self.cursor):
                    best = at
                at = self.text.find(snippet, at + 1)
            self._located[snippet] = best
        return self._located[snippet]

    def region_in_text(self, region: Region) -> bool:
        """Whether the region's change lies in a string or comment: judged where its lines
        stand in the document when they can be found there, else on its line alone."""
        at = self.locate(region.after) if region.after.strip() else -1
        # The change's first character may be a quote that opens the string it changes.
        offsets = {region.start, region.start + 1, region.start + max(len(region.old), len(region.new)) // 2}
        if at != -1:
            return any(self.text_at(at + o) for o in offsets)
        return any(_inside_string_or_comment(region.before, o) for o in offsets)


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch in "_$"


def changed_lines(before: str, after: str) -> tuple[str, str]:
    """The whole lines that differ between two texts (the compact form of an edit)."""
    b, a = before.split("\n"), after.split("\n")
    i = 0
    while i < min(len(b), len(a)) and b[i] == a[i]:
        i += 1
    j = 0
    while j < min(len(b), len(a)) - i and b[len(b) - 1 - j] == a[len(a) - 1 - j]:
        j += 1
    return "\n".join(b[i : len(b) - j]), "\n".join(a[i : len(a) - j])


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


def regions_of(before: str, after: str) -> list[Region]:
    """One history entry as regions of its changed lines (the module docstring): line by
    line where the changed lines keep their count, else one region; a region over several
    lines (code reflowed as it was changed) gives way to the names renamed in it."""
    old, new = changed_lines(before, after)
    old_lines, new_lines = old.split("\n"), new.split("\n")
    if old.strip() and new.strip() and len(old_lines) == len(new_lines) > 1:
        return [r for o, n in zip(old_lines, new_lines) if (r := changed_region(o, n)) is not None]
    region = changed_region(old, new)
    if region is None:
        return []
    if ("\n" in region.old or "\n" in region.new) and region.old.strip() and region.new.strip():
        return _renamed_tokens(old, new) or [region]
    return [region]


TOKEN = re.compile(r"[A-Za-z_$][\w$]*|\d+|\S")


def _renamed_tokens(old: str, new: str) -> list[Region]:
    """Names replaced one for one in a change that also moved code between lines
    (`tag, pass_many=False, ...` -> `tag,` / `pass_collection=False,` / ...), each as
    the one-line region renaming it in its old line. Spaces and line breaks do not count."""
    a, b = list(TOKEN.finditer(old)), list(TOKEN.finditer(new))
    matcher = difflib.SequenceMatcher(None, [m.group() for m in a], [m.group() for m in b], autojunk=False)
    out = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op != "replace" or i2 - i1 != 1 or j2 - j1 != 1:
            continue
        gone, came = a[i1], b[j1]
        if not (IDENTIFIER.match(gone.group()) and IDENTIFIER.match(came.group())):
            continue
        line_start = old.rfind("\n", 0, gone.start()) + 1
        line_end = old.find("\n", gone.end())
        line = old[line_start : len(old) if line_end == -1 else line_end]
        at = gone.start() - line_start
        renamed = line[:at] + came.group() + line[at + len(gone.group()) :]
        out.append(Region(line, renamed, at, at + len(gone.group()), at + len(came.group())))
    return out


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


def _starts_clean(text: str, start: int) -> bool:
    """No word runs on across `start` from the left."""
    return start == 0 or start >= len(text) or not (_is_word(text[start - 1]) and _is_word(text[start]))


def _ends_clean(text: str, end: int) -> bool:
    """No word runs on across `end` to the right."""
    return end == 0 or end >= len(text) or not (_is_word(text[end]) and _is_word(text[end - 1]))


def _whole_word_at(text: str, start: int, end: int) -> bool:
    return _starts_clean(text, start) and _ends_clean(text, end)


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


def _distinctive(name: str) -> bool:
    """A name that is no English word: snake_case or camelCase, so its mentions in prose
    are mentions of it."""
    core = name.strip("_$")
    return len(core) >= 5 and ("_" in core or re.search(r"[a-z][A-Z]", core) is not None)


def _count_word(text: str, word: str) -> int:
    return len(re.findall(rf"(?<![\w$]){re.escape(word)}(?![\w$])", text))


# ------------------------------------------------------------------ token context
TOKEN_LEFT = re.compile(r"(?:[A-Za-z_$][\w$]*|\d+|\S)\s*\Z")
TOKEN_RIGHT = re.compile(r"\s*(?:[A-Za-z_$][\w$]*|\d+|\S)")


def _token_context(line: str, start: int, end: int) -> tuple[str, str]:
    """The token (with the spaces between) on each side of line[start:end]; "\\n" stands
    for the line's start or end."""
    left = TOKEN_LEFT.search(line[:start])
    right = TOKEN_RIGHT.match(line, end)
    return (left.group() if left else "\n" + line[:start]), (right.group() if right else line[end:] + "\n")


def _line_shape(line: str) -> tuple[str, ...]:
    """A line's first three tokens, names other than keywords as "$": `def load(path):`
    and `def save(data):` share ("def", "$", "(")."""
    tokens = re.findall(r"[A-Za-z_$][\w$]*|\S", line.strip())[:3]
    return tuple(t if not WORD.fullmatch(t) or t in KEYWORDS else "$" for t in tokens)


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


# ------------------------------------------------------------------ rewrite templates
def signature(old: str, new: str) -> tuple[str, str]:
    """The change with the words it keeps replaced by numbered holes: `Optional[int]` ->
    `int | None` and `Optional[str]` -> `str | None` share ("Optional[\\x000]", "\\x000 | None")."""
    kept = [w for w in dict.fromkeys(WORD.findall(old)) if w not in KEYWORDS and _count_word(new, w)][:9]  # one digit a hole
    for k, word in enumerate(kept):
        old = re.sub(rf"(?<![\w$]){re.escape(word)}(?![\w$])", f"{HOLE}{k}", old)
        new = re.sub(rf"(?<![\w$]){re.escape(word)}(?![\w$])", f"{HOLE}{k}", new)
    return old, new


def _pieces(template: str) -> list[str | int]:
    """A template as literal text and hole numbers, in order."""
    out: list[str | int] = []
    for k, part in enumerate(template.split(HOLE)):
        if k == 0:
            out.append(part)
        else:
            out.extend([int(part[0]), part[1:]])
    return [p for p in out if p != ""]


OPEN, CLOSE = "([{", ")]}"


def _term_end(text: str, start: int, limit: int, stop: str = "") -> int:
    """End of the term starting at `start`: names, dots and balanced brackets (with
    anything inside them), as a type or an operand is written; it ends before `stop`
    where that stands outside its brackets (`d` of `d.items(` when `.items(` follows)."""
    k, depth = start, 0
    while k < limit:
        ch = text[k]
        if depth == 0 and stop and k > start and text.startswith(stop, k):
            break
        if ch in OPEN:
            depth += 1
        elif ch in CLOSE:
            if depth == 0:
                break
            depth -= 1
        elif ch == "\n" or depth == 0 and not (_is_word(ch) or ch == "."):
            break
        k += 1
    return k if depth == 0 else start


def match_template(text: str, start: int, limit: int, pieces: list[str | int]) -> Optional[tuple[int, dict[int, str]]]:
    """(end, captured terms) where the template matches text[start:limit], or None."""
    at, captured = start, {}
    for index, piece in enumerate(pieces):
        if isinstance(piece, str):
            if not text.startswith(piece, at):
                return None
            at += len(piece)
            continue
        following = pieces[index + 1] if index + 1 < len(pieces) else ""
        end = _term_end(text, at, limit, following if isinstance(following, str) else "")
        if end <= at or (piece in captured and captured[piece] != text[at:end]):
            return None
        captured[piece] = text[at:end]
        at = end
    return at, captured


def fill_template(template: str, captured: dict[int, str]) -> str:
    return "".join(p if isinstance(p, str) else captured[p] for p in _pieces(template))


# ------------------------------------------------------------------- patterns
def pattern_of(region: Region, doc: Optional[DocumentView] = None) -> Optional[Pattern]:
    """What kind of edit a region is, or None when it is not worth replaying. `doc` (the
    current document) answers what the region alone cannot: whether a new name was there
    already, where an inserted line went, whether the change is in a docstring."""
    old, new = region.old, region.new
    doc = doc if doc is not None else DocumentView(region.after)
    if doc.region_in_text(region):
        return None
    if IDENTIFIER.match(old) and IDENTIFIER.match(new) and not (old in KEYWORDS or new in KEYWORDS):
        attribute = region.start > 0 and region.before[region.start - 1] == "."
        return Pattern("rename", old, new, prior=PRIOR["rename"], attribute=attribute)
    if IDENTIFIER.match(old) and IDENTIFIER.match(new):
        return Pattern("substitution", old, new, prior=PRIOR["substitution"])
    if "\n" in old or "\n" in new:
        return None  # a change over several lines (code reflowed, a block rewritten) is no pattern to repeat
    if not old and new.strip():
        if region.whole_lines:
            return _inserted_line(region, doc)
        return _added_argument(region) or _token_pattern("added_token", region.after, region.start, region.new_end, new)
    if not new and old.strip():
        if region.whole_lines:
            return None  # a deleted line: on real diffs, rarely deleted again elsewhere
        return _token_pattern("deleted_token", region.before, region.start, region.old_end, old)
    if not (old.strip() or new.strip()) and not region.whole_lines:
        # Spacing between two tokens (`function (` -> `function(`): a style, repeated like a token.
        kind, text, end = ("deleted_token", region.before, region.old_end) if old else ("added_token", region.after, region.new_end)
        return _token_pattern(kind, text, region.start, end, old or new, spacing=True)
    if len(old.strip()) >= MIN_SUBSTITUTION_CHARS:
        old_t, new_t = signature(old, new)
        if old_t != old and _literal_weight(old_t) >= MIN_SUBSTITUTION_CHARS:
            return Pattern("rewrite", old_t, new_t, prior=PRIOR["rewrite"])
        if IDENTIFIER.match(old):
            # A name replaced by an expression: a receiver or a callee swapped (`utils.f(` ->
            # `this.helper.f(`, `print(` -> `logger.info(`) follows to the name's other member
            # uses or calls; a bare name is one place's fix.
            follower = region.before[region.old_end : region.old_end + 1]
            swapped = follower in (".", "(") and not new.endswith(follower)
            prior = PRIOR["substitution"] if swapped else PRIOR_ONCE["name_to_expression"]
            return Pattern("substitution", old, new, prior=prior, right=follower if swapped else "")
        return Pattern("substitution", old, new, prior=PRIOR["substitution"])
    return None


def _literal_weight(template: str) -> int:
    """Non-space characters a template fixes (a template of holes and commas matches anything)."""
    return sum(len(p.replace(" ", "")) for p in _pieces(template) if isinstance(p, str))


def _added_argument(region: Region) -> Optional[Pattern]:
    new, after, end = region.new, region.after, region.new_end
    empty_list = region.start > 0 and region.before[region.start - 1 : region.start + 1] == "()"
    if empty_list:
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


def _token_pattern(kind: str, text: str, start: int, end: int, token: str, spacing: bool = False) -> Optional[Pattern]:
    """An added token (`text` the line after the edit) or a deleted one (`text` before it),
    with the tokens on its left and right as the context that must match elsewhere.
    `spacing`: the token is spaces, and the context must be tokens on both sides."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line = text[line_start : len(text) if line_end == -1 else line_end]
    left, right = _token_context(line, start - line_start, end - line_start)
    if not WORD.search(left + right):
        return None  # `)` and the line's end: every call ending a line would match
    if spacing and (left.startswith("\n") or right.endswith("\n") or not left.strip() or not right.strip()):
        return None  # indentation or trailing spaces: not a style between two tokens
    old, new = (token, "") if kind == "deleted_token" else ("", token)
    return Pattern(kind, old, new, prior=PRIOR[kind], left=left, right=right)


def _inserted_line(region: Region, doc: DocumentView) -> Optional[Pattern]:
    """One inserted line, with the shape of the line below it where it now stands."""
    lines = [line for line in region.after.split("\n") if line.strip()]
    if len(lines) != 1:
        return None
    line = lines[0]
    at = doc.locate(line + "\n")
    if at == -1:
        return None
    below = doc.text[at + len(line) + 1 :].split("\n", 1)[0]
    shape = _line_shape(below)
    if len(shape) < 2 or all(t in "$([{}])" for t in shape):
        return None  # only a name or brackets below: no telling which other lines match
    prior = PRIOR["inserted_line"] if line.lstrip().startswith("@") else PRIOR_ONCE["plain_inserted_line"]
    return Pattern("inserted_line", "", line, prior=prior, shape=shape, left=_indent(below))


def _pattern_key(p: Pattern) -> tuple:
    if p.kind == "inserted_line":
        return (p.kind, p.new.strip())  # the same line inserted again, whatever it went above
    return (p.kind, p.old, p.new, p.callee, p.left, p.right, p.shape)


def patterns_from(regions: Iterable[Region], max_patterns: int = 3, doc: Optional[DocumentView] = None,
                  earlier: Iterable[Region] = ()) -> list[Pattern]:
    """Patterns of the most recent regions first; a pattern seen again gains confidence.

    A rename is "fresh" unless the new name was in the document's code before the
    history made it: the current document's code has it more often than the history's
    renames to it added (`earlier`: regions of older entries, which only count here;
    counted the same for whole snapshots and changed lines)."""
    regions = list(regions)
    everything = list(earlier) + regions
    found: list[Pattern] = []
    for region in reversed(regions):
        pattern = pattern_of(region, doc)
        if pattern is None:
            continue
        if pattern.kind == "rename" and _existed(pattern, everything, doc):
            pattern = dataclasses.replace(pattern, kind="rename_existing", prior=PRIOR["rename_existing"])
        same = next((p for p in found if _pattern_key(p) == _pattern_key(pattern)), None)
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


def _existed(pattern: Pattern, regions: list[Region], doc: Optional[DocumentView]) -> bool:
    """Whether the rename's new name was in the document before the history renamed to it."""
    added = sum(_count_word(r.after, pattern.new) - _count_word(r.before, pattern.new)
                for r in regions if (r.old, r.new) == (pattern.old, pattern.new))
    if doc is None:  # a region alone: the text around it is all there is
        first = next(r for r in regions if (r.old, r.new) == (pattern.old, pattern.new))
        return _count_word(first.before, pattern.new) > 0
    return doc.count_in_code(pattern.new) > added


# ------------------------------------------------------------------- replaying
def replay(pattern: Pattern, document: str | DocumentView, window: tuple[int, int]) -> list[Proposal]:
    """Where `pattern` applies again inside the window (document offsets)."""
    doc = document if isinstance(document, DocumentView) else DocumentView(document)
    if pattern.kind == "added_argument":
        return _replay_argument(pattern, doc, window)
    if pattern.kind == "rewrite":
        return _replay_rewrite(pattern, doc, window)
    if pattern.kind == "inserted_line":
        return _replay_line(pattern, doc, window)
    if pattern.kind in ("added_token", "deleted_token"):
        return _replay_token(pattern, doc, window)
    text, (lo, hi) = doc.text, window
    out: list[Proposal] = []
    start = text.find(pattern.old, lo)
    while start != -1 and start + len(pattern.old) <= hi:
        end = start + len(pattern.old)
        is_attribute = start > 0 and text[start - 1] == "."
        renaming = pattern.kind in ("rename", "rename_existing")
        in_text = doc.text_at(start) or (end - start > 1 and doc.text_at(start + 1))  # past a quote that opens a string
        if in_text and pattern.kind == "rename" and _distinctive(pattern.old) and doc.doc_at(start):
            in_text = False  # a name no prose uses (`pass_many`): its mentions in comments and docstrings follow
        followed = text.startswith(pattern.right, end)  # a receiver swap: only where a member follows
        if _whole_word_at(text, start, end) and followed and not in_text and not (renaming and is_attribute != pattern.attribute):
            out.append(Proposal(start, end, pattern.new, pattern))
        start = text.find(pattern.old, end)
    return out


def _replay_argument(pattern: Pattern, doc: DocumentView, window: tuple[int, int]) -> list[Proposal]:
    text, (lo, hi) = doc.text, window
    out: list[Proposal] = []
    for match in re.finditer(rf"(?<![\w$]){re.escape(pattern.callee)}\s*\(", text[lo:hi]):
        open_at = lo + match.end() - 1
        if doc.text_at(open_at):
            continue
        close_at = _matching_paren(text, open_at)
        if close_at == -1 or close_at > hi or "\n" in text[open_at:close_at]:
            continue  # calls over several lines: where the argument goes is a matter of style
        args = text[open_at + 1 : close_at]
        if _is_definition(text, lo + match.start()):
            continue  # the definition is where the user started; only calls follow
        if pattern.new.strip(", ") in args:
            continue  # this call already has it
        if pattern.at_start:
            out.append(Proposal(open_at + 1, open_at + 1, pattern.new if args.strip() else pattern.new.rstrip().rstrip(","), pattern))
        else:
            out.append(Proposal(close_at, close_at, pattern.new if args.strip() else pattern.new.lstrip().lstrip(",").lstrip(), pattern))
    return out


def _replay_rewrite(pattern: Pattern, doc: DocumentView, window: tuple[int, int]) -> list[Proposal]:
    text, (lo, hi) = doc.text, window
    pieces = _pieces(pattern.old)
    first = next((p for p in pieces if isinstance(p, str)), "")
    out: list[Proposal] = []
    # Every candidate start: where the first literal piece stands, less the terms before it.
    starts = sorted({m.start() for m in re.finditer(r"(?<![\w$.])[\w$]", text[lo:hi])}) if isinstance(pieces[0], int) else []
    candidates = [lo + s for s in starts] if starts else _find_all(text, first, lo, hi)
    taken = lo
    for start in candidates:
        if start < taken or not _starts_clean(text, start) or doc.text_at(start) or doc.text_at(start + 1):
            continue
        matched = match_template(text, start, hi, pieces)
        if matched is None:
            continue
        end, captured = matched
        if not _whole_word_at(text, start, end):
            continue
        out.append(Proposal(start, end, fill_template(pattern.new, captured), pattern))
        taken = end
    return out


def _find_all(text: str, piece: str, lo: int, hi: int) -> list[int]:
    out, at = [], text.find(piece, lo) if piece else -1
    while at != -1 and at + len(piece) <= hi:
        out.append(at)
        at = text.find(piece, at + 1)
    return out


def _replay_line(pattern: Pattern, doc: DocumentView, window: tuple[int, int]) -> list[Proposal]:
    text, (lo, hi) = doc.text, window
    inserted = pattern.new
    relative = inserted[len(_indent(inserted)) :]
    out: list[Proposal] = []
    start = lo
    above: list[str] = []  # the lines between the previous non-matching line and this one
    while start < hi:
        end = text.find("\n", start)
        end = len(text) if end == -1 else end
        line = text[start:end]
        if line.strip() and _line_shape(line) == pattern.shape and not doc.text_at(start + len(_indent(line))):
            # Missing where the lines just above (a decorator stack, say) lack it.
            if relative.strip() not in (a.strip() for a in above[-3:]):
                indent = _indent(line) + _indent(inserted)[len(pattern.left) :] if _indent(inserted).startswith(pattern.left) else _indent(line)
                out.append(Proposal(start, start, indent + relative + "\n", pattern))
        above.append(line)
        start = end + 1
    return out


def _replay_token(pattern: Pattern, doc: DocumentView, window: tuple[int, int]) -> list[Proposal]:
    """The same token added (or deleted) where the same tokens stand on its two sides."""
    text, (lo, hi) = doc.text, window
    left, right = pattern.left, pattern.right
    core = left.lstrip("\n") + pattern.old + right.rstrip("\n")
    out: list[Proposal] = []
    at = text.find(core, lo) if core else -1
    while at != -1 and at + len(core) <= hi:
        start = at + len(left.lstrip("\n"))
        line_start = text.rfind("\n", 0, at) + 1
        line_end = text.find("\n", at)
        line_end = len(text) if line_end == -1 else line_end
        fits = (not left.startswith("\n") or at == line_start) and (not right.endswith("\n") or at + len(core) == line_end)
        word_ok = _starts_clean(text, at) and _ends_clean(text, at + len(core))
        if fits and word_ok and not doc.text_at(start):
            if pattern.kind == "added_token":
                out.append(Proposal(start, start, pattern.new, pattern))
            else:
                out.append(Proposal(start, start + len(pattern.old), "", pattern))
        at = text.find(core, at + 1)
    return out
