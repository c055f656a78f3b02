"""Edit-sequence examples: teach the infill model to predict the next edit.

Synthetic edit sequences are made from corpus files (`make_edit_task`):

* rename: an identifier used 3+ times nearby is renamed at its first 1-2 occurrences
  (the history); the target renames the rest;
* added_argument: a function called 2+ times nearby gets a new argument at its
  definition (when there is one) and its first call (the history); the target adds it
  to the other calls;
* repeated: a snippet from a small table of real refactorings (`== None` -> `is None`,
  `var ` -> `const `, ...) found on 3+ nearby rows is changed in the first row(s);
* no-edit kinds, which teach (and test) that "nothing to do" is an answer:
  completed_rename (every occurrence already renamed), reference_change (one use now
  names another existing variable: nothing follows from it) and no_history.

Real edits come from two released versions of the same package (`real_edit_tasks`).

Training layout (`make_edit_example`, one `lab.training.data.Example`):

    prefix = <bos> <edit> <old> old lines <new> new lines ... <sep> document before the span
    canvas = the span's text AFTER the next edit (+ <eom> padding to a block multiple)
    suffix = the document after the span

The span is one line (what mode "auto" scores at run time) or up to four lines (the
window canvas of mode "model"); the document around it is the current one, with the
next edits not yet made. The history layout is `engine.next_edit.history_ids`, the same
function the engine uses, so training and inference cannot drift apart.
"""
from __future__ import annotations

import difflib
import keyword
import math
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Optional, Sequence

from engine.next_edit import HistoryEntry, NextEditLimits, history_ids, line_starts, window_bounds
from engine.next_edit.replay import _inside_string_or_comment
from lab.training.data import DataConfig, Example

EDIT_KINDS = ("rename", "added_argument", "repeated")
NO_EDIT_KINDS = ("completed_rename", "reference_change", "no_history")
NEARBY_LINES = 12  # occurrences used by one task lie within this many lines of each other
HISTORY_TOKENS = 96  # history budget inside DataConfig.prefix_tokens
IDENT = re.compile(r"(?<![\w$.])[A-Za-z_][A-Za-z0-9_]*(?![\w$])")  # not attributes: `x` but not `.x`
SKIP_NAMES = set(keyword.kwlist) | {"self", "cls", "this", "true", "false", "null", "undefined", "var", "let", "const", "function", "return", "new", "print", "len", "range", "str", "int", "dict", "list", "require", "module", "exports"}
RENAME_WORDS = ("value", "items", "count", "data", "result", "index", "name", "total", "node", "entry")
NEW_ARGUMENTS = ("verbose=True", "timeout=None", "strict=False", "context", "options", "default=None")
REFACTORINGS = {
    "python": (("== None", "is None"), ("!= None", "is not None"), (".iteritems()", ".items()"), ("print(", "logger.info("), ("assertEquals(", "assertEqual("), (".format(", ".format_map(")),
    "javascript": (("var ", "const "), ("console.log(", "logger.debug("), ("function (", "function("), (".indexOf(", ".lastIndexOf(")),
}


@dataclass
class EditTask:
    kind: str
    language: str
    history: list[HistoryEntry]  # whole-document snapshots, oldest first
    current: str  # the document now (after the history)
    target: str  # the document after the expected next edits (== current for no-edit kinds)
    cursor: int  # offset in `current`: where the user's last edit ended
    source: str = ""  # real edits: the file's path inside its package
    final: str = ""  # real edits: the file in the newer release (every later hunk applied)

    @property
    def expects_edit(self) -> bool:
        return self.target != self.current


def _replace_at(text: str, spans: list[tuple[int, int, str]]) -> str:
    for start, end, new in sorted(spans, reverse=True):
        text = text[:start] + new + text[end:]
    return text


def _line_of(starts: list[int], offset: int) -> int:
    lo, hi = 0, len(starts) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if starts[mid] <= offset:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _nearby_group(offsets: list[int], starts: list[int], minimum: int, rng: random.Random) -> Optional[list[int]]:
    """`minimum`+ offsets whose lines lie within NEARBY_LINES of the first one."""
    if len(offsets) < minimum:
        return None
    first = rng.randrange(0, len(offsets) - minimum + 1)
    base = _line_of(starts, offsets[first])
    group = [o for o in offsets[first:] if _line_of(starts, o) - base <= NEARBY_LINES]
    return group if len(group) >= minimum else None


def _fresh_name(old: str, text: str, rng: random.Random) -> str:
    camel = re.search(r"[a-z][A-Z]", old) is not None
    for _ in range(8):
        word = rng.choice(RENAME_WORDS)
        style = rng.random()
        if style < 0.4:
            name = old + (word.capitalize() if camel else "_" + word)
        elif style < 0.7:
            name = (word + old[0].upper() + old[1:]) if camel else word + "_" + old
        else:
            name = word + ("Value" if camel else "_value")
        if not re.search(rf"(?<![\w$]){re.escape(name)}(?![\w$])", text):
            return name
    return old + "_renamed"


InText = Callable[[int], bool]  # whether an offset of the file lies in a string or a comment


def _line_local(text: str) -> InText:
    """The quick guess at strings and comments (engine.next_edit.replay): a quote or a
    comment marker earlier on the line. Blind to a docstring's inner lines."""
    return lambda offset: _inside_string_or_comment(text, offset)


def _identifier_uses(text: str, in_text: InText) -> dict[str, list[int]]:
    uses: dict[str, list[int]] = {}
    for match in IDENT.finditer(text):
        name = match.group()
        if name not in SKIP_NAMES and len(name) > 1 and not in_text(match.start()):
            uses.setdefault(name, []).append(match.start())
    return uses


def _steps(text: str, spans: list[tuple[int, int, str]]) -> tuple[list[HistoryEntry], str, int]:
    """Apply spans one at a time (each a history entry); returns history, result and the
    offset just after the last applied span."""
    history: list[HistoryEntry] = []
    current = text
    cursor = 0
    shift = 0
    for start, end, new in sorted(spans):
        after = current[: start + shift] + new + current[end + shift :]
        history.append(HistoryEntry(current, after))
        cursor = start + shift + len(new)
        shift += len(new) - (end - start)
        current = after
    return history, current, cursor


def _shifted(spans: list[tuple[int, int, str]], applied: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    out = []
    for start, end, new in spans:
        delta = sum(len(n) - (e - s) for s, e, n in applied if e <= start)
        out.append((start + delta, end + delta, new))
    return out


def _in_window(task_current: str, cursor: int, spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    limits = NextEditLimits()
    lo, hi = window_bounds(task_current, cursor, limits.lines_before, limits.lines_after)
    return [s for s in spans if lo <= s[0] and s[1] <= hi]


def _split_task(kind: str, language: str, text: str, spans: list[tuple[int, int, str]], n_history: int) -> Optional[EditTask]:
    spans = sorted(spans)
    done, todo = spans[:n_history], spans[n_history:]
    history, current, cursor = _steps(text, done)
    todo = _in_window(current, cursor, _shifted(todo, done))
    if kind in EDIT_KINDS and not todo:
        return None
    return EditTask(kind, language, history, current, _replace_at(current, todo), cursor)


def _rename(text: str, language: str, rng: random.Random, complete: bool, in_text: InText) -> Optional[EditTask]:
    """The history renames 1-2 occurrences of a nearby group; every other occurrence (in
    the window) is the target. `complete`: the others were renamed before the history
    began, so nothing is left to do."""
    starts = line_starts(text)
    uses = _identifier_uses(text, in_text)
    names = sorted(n for n, offs in uses.items() if len(offs) >= 3)
    rng.shuffle(names)
    for name in names[:20]:
        group = _nearby_group(uses[name], starts, 3, rng)
        if group is None:
            continue
        new = _fresh_name(name, text, rng)
        n_history = len(group) if complete else rng.randint(1, min(2, len(group) - 1))
        done = [(o, o + len(name), new) for o in group[:n_history]]
        rest = [(o, o + len(name), new) for o in uses[name] if o not in group[:n_history]]
        if complete:
            base = _replace_at(text, rest)
            history, current, cursor = _steps(base, _shifted(done, rest))
            return EditTask("completed_rename", language, history, current, current, cursor)
        history, current, cursor = _steps(text, done)
        todo = _in_window(current, cursor, _shifted(rest, done))
        if todo:
            return EditTask("rename", language, history, current, _replace_at(current, todo), cursor)
    return None


def _added_argument(text: str, language: str, rng: random.Random, in_text: InText) -> Optional[EditTask]:
    starts = line_starts(text)
    calls: dict[str, list[int]] = {}
    definitions: dict[str, int] = {}
    for match in re.finditer(r"(?<![\w$])([A-Za-z_][A-Za-z0-9_]*)\(", text):
        name, close = match.group(1), _close_paren(text, match.end() - 1)
        if name in SKIP_NAMES or close == -1 or in_text(match.start()) or "\n" in text[match.end() : close]:
            continue
        line_start = text.rfind("\n", 0, match.start()) + 1
        if re.search(r"(?:\bdef|\bfunction)\s+\Z", text[line_start : match.start()]):
            definitions[name] = close
        else:
            calls.setdefault(name, []).append(close)
    names = sorted(n for n, closes in calls.items() if len(closes) >= 2)
    rng.shuffle(names)
    for name in names[:20]:
        group = _nearby_group(calls[name], starts, 2, rng)
        if group is None:
            continue
        argument = rng.choice(NEW_ARGUMENTS)
        spans = [(c, c, _argument_text(text, c, argument)) for c in group]
        done: list[tuple[int, int, str]] = []
        if name in definitions and definitions[name] < group[0]:
            parameter = argument.split("=")[0] + ("=None" if "=" in argument else "")
            done.append((definitions[name], definitions[name], _argument_text(text, definitions[name], parameter)))
        done.append(spans[0])
        rest = [(c, c, _argument_text(text, c, argument)) for c in calls[name] if c != group[0]]
        history, current, cursor = _steps(text, done)
        todo = _in_window(current, cursor, _shifted(rest, done))
        if todo:
            return EditTask("added_argument", language, history, current, _replace_at(current, todo), cursor)
    return None


def _close_paren(text: str, open_at: int) -> int:
    depth = 0
    for k in range(open_at, min(len(text), open_at + 400)):
        depth += {"(": 1, ")": -1}.get(text[k], 0)
        if depth == 0:
            return k
    return -1


def _argument_text(text: str, close_at: int, argument: str) -> str:
    open_at = text.rfind("(", 0, close_at + 1)
    empty = open_at != -1 and not text[open_at + 1 : close_at].strip()
    return argument if empty else ", " + argument


def _repeated(text: str, language: str, rng: random.Random, in_text: InText) -> Optional[EditTask]:
    starts = line_starts(text)
    table = list(REFACTORINGS.get(language, REFACTORINGS["python"]))
    rng.shuffle(table)
    for old, new in table:
        offsets = [m.start() for m in re.finditer(re.escape(old), text) if not in_text(m.start())]
        lines_seen: set[int] = set()
        per_row = []
        for o in offsets:  # one change per row: "some rows" of a repeated pattern
            line = _line_of(starts, o)
            if line not in lines_seen:
                lines_seen.add(line)
                per_row.append(o)
        group = _nearby_group(per_row, starts, 3, rng)
        if group is None:
            continue
        done = [(o, o + len(old), new) for o in group[: rng.randint(1, min(2, len(group) - 1))]]
        rest = [(o, o + len(old), new) for o in offsets if o not in {d[0] for d in done}]
        history, current, cursor = _steps(text, done)
        todo = _in_window(current, cursor, _shifted(rest, done))
        if todo:
            return EditTask("repeated", language, history, current, _replace_at(current, todo), cursor)
    return None


def _reference_change(text: str, language: str, rng: random.Random, in_text: InText) -> Optional[EditTask]:
    uses = _identifier_uses(text, in_text)
    names = sorted(n for n, offs in uses.items() if len(offs) >= 2)
    if len(names) < 2:
        return None
    name = rng.choice(names)
    other = rng.choice([n for n in names if n != name])
    where = rng.choice(uses[name])
    history, current, cursor = _steps(text, [(where, where + len(name), other)])
    return EditTask("reference_change", language, history, current, current, cursor)


def _no_history(text: str, language: str, rng: random.Random) -> Optional[EditTask]:
    return EditTask("no_history", language, [], text, text, rng.randrange(len(text) + 1)) if text.strip() else None


def make_edit_task(text: str, rng: random.Random, kind: Optional[str] = None, language: str = "python",
                   in_text: Optional[InText] = None) -> Optional[EditTask]:
    """One synthetic task of `kind` (random when None) from a source file, or None when
    the file offers no place for it. `in_text` tells which offsets of `text` lie in strings
    and comments, where no task edits (default: the line-local guess; the evaluation
    passes the grammar's answer, the notion the engine replays by)."""
    kind = kind or rng.choice(EDIT_KINDS + NO_EDIT_KINDS)
    in_text = in_text or _line_local(text)
    if kind == "rename":
        return _rename(text, language, rng, complete=False, in_text=in_text)
    if kind == "completed_rename":
        return _rename(text, language, rng, complete=True, in_text=in_text)
    if kind == "added_argument":
        return _added_argument(text, language, rng, in_text)
    if kind == "repeated":
        return _repeated(text, language, rng, in_text)
    if kind == "reference_change":
        return _reference_change(text, language, rng, in_text)
    if kind == "no_history":
        return _no_history(text, language, rng)
    raise ValueError(f"unknown edit task kind {kind!r}; known: {', '.join(EDIT_KINDS + NO_EDIT_KINDS)}")


# --------------------------------------------------------------- training examples
def _span_lines(current: str, target: str, cursor: int, rng: random.Random, max_lines: int) -> tuple[int, int, int]:
    """(start, end in current, end in target) of whole lines holding the next edit (the
    first differing line after the cursor's, else any), or lines near the cursor when
    nothing changes."""
    starts = line_starts(current)
    if current != target:
        prefix = 0
        limit = min(len(current), len(target))
        while prefix < limit and current[prefix] == target[prefix]:
            prefix += 1
        first = _line_of(starts, prefix)
    else:
        first = max(0, min(len(starts) - 1, _line_of(starts, cursor) + rng.randint(-3, 3)))
    last = min(len(starts) - 1, first + rng.randint(0, max_lines - 1))
    start = starts[first]
    end = current.find("\n", starts[last])
    end = len(current) if end == -1 else end
    tail = len(current) - end  # the text after the span is the same in both documents
    return start, end, len(target) - tail


def make_edit_example(text: str, tok, cfg: DataConfig, rng: random.Random, language: str = "python") -> Optional[Example]:
    """One training example in the layout of the module docstring, or None when the
    file offers no edit (the caller draws another file)."""
    task = make_edit_task(text, rng, language=language)
    if task is None:
        return None
    return example_from_task(task, tok, cfg, rng)


def example_from_task(task: EditTask, tok, cfg: DataConfig, rng: random.Random) -> Optional[Example]:
    max_lines = 1 if rng.random() < 0.5 else 4
    start, end, target_end = _span_lines(task.current, task.target, task.cursor, rng, max_lines)
    canvas_text = task.target[start:target_end]
    middle = tok.encode(canvas_text)
    if len(middle) >= cfg.canvas_max:
        return None
    hist = history_ids(tok, task.history, HISTORY_TOKENS)
    doc_budget = max(0, cfg.prefix_tokens - 1 - len(hist))
    before = task.current[max(0, start - doc_budget * cfg.chars_per_token_budget) : start]
    after = task.current[end : end + cfg.suffix_tokens * cfg.chars_per_token_budget]
    doc = tok.encode(before)[-doc_budget:] if before and doc_budget else []
    bos = [tok.bos_id] if tok.bos_id is not None else []
    n = min(cfg.canvas_max, cfg.block_size * math.ceil((len(middle) + 1) / cfg.block_size))
    return Example(bos + hist + doc, middle + [tok.eom_id] * (n - len(middle)), tok.encode(after)[: cfg.suffix_tokens])


# ------------------------------------------------------------------- real edits
LANGUAGE_BY_SUFFIX = {".py": "python", ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript"}


def real_edit_tasks(old_dir: Path, new_dir: Path, max_hunks_per_file: int = 8, no_edit: bool = False,
                    globs: Sequence[str] = ("**/*",)) -> Iterator[EditTask]:
    """Real edit sequences from two released versions of the same sources.

    For every file present in both trees (matching `globs`, relative to the tree) and
    changed between them, the diff's hunks (difflib, line level, no context) are replayed
    in order: the first k hunks are the history (whole-document snapshots), the cursor
    where hunk k ends, and the next hunk, if it lies in the window around the cursor, is
    the target (kind "real"). With `no_edit`, the tasks where no edit is due are yielded
    too (kind "real_no_edit"): the next hunk lies outside the window, or hunk k was the
    file's last. Files over 200 kB, non-UTF-8 files and files with more than
    `max_hunks_per_file` hunks (rewrites, not edits) are skipped.
    """
    old_dir, new_dir = Path(old_dir), Path(new_dir)
    paths = sorted({p for pattern in globs for p in old_dir.glob(pattern)})
    for old_path in paths:
        language = LANGUAGE_BY_SUFFIX.get(old_path.suffix)
        rel = old_path.relative_to(old_dir)
        new_path = new_dir / rel
        if language is None or not old_path.is_file() or not new_path.is_file():
            continue
        try:
            old, new = old_path.read_text("utf-8"), new_path.read_text("utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if old == new or max(len(old), len(new)) > 200_000:
            continue
        for task in _tasks_from_pair(old, new, language, max_hunks_per_file, no_edit):
            task.source = rel.as_posix()
            yield task


def _tasks_from_pair(old: str, new: str, language: str, max_hunks: int, no_edit: bool = False) -> Iterator[EditTask]:
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    hunks = [op for op in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes() if op[0] != "equal"]
    # One hunk gives a task only as "nothing left to do" after it.
    if not (1 if no_edit else 2) <= len(hunks) <= max_hunks:
        return
    offsets = [0]
    for line in a:
        offsets.append(offsets[-1] + len(line))
    spans = [(offsets[i1], offsets[i2], "".join(b[j1:j2])) for _, i1, i2, j1, j2 in hunks]
    # Every snapshot once: task k's history is the first k entries of one shared list (a
    # file of many hunks would otherwise hold k copies of itself per task).
    history, _, _ = _steps(old, spans)
    shift = 0  # how far hunk k's offsets moved by the hunks applied before it
    for k in range(1, len(spans) + 1):
        start, end, text = spans[k - 1]
        cursor = start + shift + len(text)
        shift += len(text) - (end - start)
        current = history[k - 1].after
        if k < len(spans):
            s, e, t = spans[k]
            target_span = _in_window(current, cursor, [(s + shift, e + shift, t)])
        else:
            target_span = []
        if target_span:
            yield EditTask("real", language, history[:k], current, _replace_at(current, target_span), cursor, final=new)
        elif no_edit:
            yield EditTask("real_no_edit", language, history[:k], current, current, cursor, final=new)
