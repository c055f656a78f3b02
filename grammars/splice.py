"""Judging a finished splice: which syntax errors it adds in the region it touches."""
from __future__ import annotations

import threading
from collections import Counter

from .lexical import open_brackets
from .syntax import IncrementalParser, SyntaxErrorSpan, minimal_errors
from .window import Window


def _located(errors: list[SyntaxErrorSpan], cut: int, after: int, total: int) -> Counter:
    """Error identities, counted: prefix-side by offset, suffix-side by distance from the
    end. Counted, not a set: a second `MISSING }` at the end of a window that already
    lacked one is a new error."""
    keys: Counter = Counter()
    for e in errors:
        if e.end <= cut:
            keys[("prefix", e.start, e.end, e.missing)] += 1
        elif e.start >= after:
            keys[("suffix", total - e.start, total - e.end, e.missing)] += 1
        else:
            keys[("middle", e.start, e.end, e.missing)] += 1
    return keys


def _before_after(window: Window, middle: str) -> tuple[Counter, Counter, Counter]:
    """(the file's own errors, the hole's errors at the cursor, the splice's errors)."""
    middle_b = middle.encode("utf-8")
    text = window.prefix + middle_b + window.suffix
    after_errors = minimal_errors(window.final_parser.parse(text).root_node)
    cursor = window.cursor
    if window.located_errors is None:  # the window's own, computed once: every final check reads them
        base_total = cursor + len(window.suffix)
        own = _located([e for e in window.baseline if e not in window.cursor_errors], cursor, cursor, base_total)
        window.located_errors = (own, _located(window.cursor_errors, cursor, cursor, base_total))
    own, hole = window.located_errors
    after = _located(after_errors, cursor, cursor + len(middle_b), len(text))
    return own, hole, after


def added_errors(window: Window, middle: str) -> int:
    """Errors of the splice that the file did not have: the final check's measure.

    Errors identical to one the file has elsewhere (same place in the prefix, same
    distance from the end in the suffix) are the file's. The empty hole's own errors
    (`result = ` + newline, `while :`) are not: a middle must repair them, not keep
    them, so `result = ;` is refused. Any error inside the middle is new.

    Outside the middle, with the cursor alone on its line, an error inside one that
    whatever line stands at the cursor has too (the empty line and every line of
    FILLER_LINES that leaves the file no worse: `Window.stays_with_every_line`) is not
    the middle's either: other broken lines of the file put it there, and the middle only
    moved the parser's recovery inside it (a stray `}` left by a lost `if (...) {` line,
    case labels orphaned by a lost `switch` line and split in two by the middle). Not a
    MISSING token: a bracket or a colon the splice leaves unclosed is the middle's own
    (`| (` in a comprehension whose lost `for` line left an error there already)."""
    own, _, after = _before_after(window, middle)
    added = 0
    base_total = window.cursor + len(window.suffix)
    near = window.cursor + _next_line_end(window.suffix)  # in baseline offsets
    for key, n in after.items():
        if key[0] == "middle":
            added += n
            continue
        extra = max(0, n - own.get(key, 0))
        if extra:
            start, end = key[1:3] if key[0] == "prefix" else (base_total - key[1], base_total - key[2])
            missing = key[3]
            # An error on the line right after the middle is the middle's (`return` and a
            # next line starting with `? `): never excused as another line's.
            if missing or window.cursor <= start < near or not window.stays_with_every_line(start, end):
                added += extra
    return added


def _next_line_end(suffix: bytes) -> int:
    """Where the line after the cursor's ends, as an offset into `suffix`."""
    following = suffix.find(b"\n", suffix.find(b"\n") + 1)
    return following if following >= 0 else len(suffix)


def splice_error_balance(window: Window, middle: str, strict: bool = False) -> int:
    """How many more touched errors the splice has than the file had, less those it
    removed: a score for ranking polish's variants of one middle (lower is better).

    `strict`: the hole's own errors count as errors the splice must have removed."""
    own, hole, after = _before_after(window, middle)
    base_all = own if strict else own + hole
    added = sum(n if key[0] == "middle" else max(0, n - base_all.get(key, 0)) for key, n in after.items())
    removed = sum(max(0, n - after.get(key, 0)) for key, n in own.items())
    return added - removed


def stands_on_its_own(window: Window, middle: str) -> bool:
    """The final check's judgement where the file around the cursor is broken elsewhere
    (the window has errors of its own, not the hole's): there an inserted line moves the
    parser's recovery from the other errors, and they come back a few bytes on as "new"
    errors further down, which refused the true line on 87 of 400 real lines of the tuning
    packages (every other sampled line of the file blanked, as in a file being edited;
    `added_errors` excuses those inside an error every line at the cursor leaves, this
    the rest).
    Such a middle stands when no new error overlaps the middle or starts before the end of
    the line after it (`var` + newline shows its error there), no new closer is missing
    (`c,` in a `const {` whose `}` line was the hole), none of the empty hole's errors
    stays where it was (the middle repairs them), and the middle's brackets
    (strings and comments skipped) close within it, or it ends opening one block with `{`:
    `foo (` and a stray `)` are still refused. A file with no errors of its own never gets
    here, so a middle that would break a clean file is refused as before
    (grammars/constraint.py, `_no_new_errors`)."""
    if window.spec.indent_sensitive:
        # Python: a window cut inside a long bracketed literal has errors of its own at its
        # edges, and a lone `lambda` or `,` stood there (CPython refused 6 of 253 such
        # middles on the unseen benchmark's tuning holes); the gain on broken files was 3
        # of 200 true lines. Judged as before.
        return False
    own, hole, after = _before_after(window, middle)
    if not own:
        return False
    middle_b = middle.encode("utf-8")
    total = window.cursor + len(middle_b) + len(window.suffix)
    near = window.cursor + len(middle_b) + _next_line_end(window.suffix)
    for key, n in after.items():
        new = n > own.get(key, 0)
        if key[0] == "middle" or key in hole:
            return False  # an error in the middle, or the hole's own error left unrepaired
        if new and (key[3] or key[0] == "suffix" and total - key[1] < near):
            return False  # a new missing closer, or a new error right after the middle: the middle's
    opened = open_brackets(window.spec, middle)
    if opened is None:
        return False
    if opened and not (len(opened) == 1 and opened[0][0] == "{" and middle.rstrip().endswith("{")):
        return False
    return _parses_alone(window, middle)


# Where a middle's text is parsed on its own (`_parses_alone`): as statements between empty
# ones, inside a loop of an async generator function, so `return`, `yield`, `await`,
# `break` stand, and braces are a block, not an object (`{` + `,` + `}` is one).
_ALONE = (b"async function* _f() {\nfor (;;) {\n;\n", b"\n;\n}\n}\n")
_ALONE_PARSERS = threading.local()  # per thread, a parser per language (tree-sitter parsers are not thread-safe)


def _parses_alone(window: Window, middle: str) -> bool:
    """Whether the middle's lines are statements by themselves (a block it opens closed
    after it, a block it closes opened before it): a lone `,`, an operator left dangling or
    an object literal's `key: value,` is no line that stands on its own."""
    text = middle.strip().encode("utf-8")
    if text.endswith(b"{"):
        text += b"\n}"
    if text.startswith(b"}"):
        text = b"{\n" + text
    parsers = _ALONE_PARSERS.__dict__
    parser = parsers.get(window.spec.name)
    if parser is None:
        parser = parsers[window.spec.name] = IncrementalParser(window.spec.ts_language())
    return not minimal_errors(parser.parse(_ALONE[0] + text + _ALONE[1]).root_node)
