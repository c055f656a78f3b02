"""The window of text around the cursor that the syntax checks look at, with its baseline.

Only a window is parsed: the last lines of the prefix and the first lines of the suffix.
Errors elsewhere in the file are never seen, and errors inside the window that the empty
middle already has (the baseline) are not blamed on the completion.
"""
from __future__ import annotations

import re
import weakref
from dataclasses import dataclass, field
from typing import Optional

import tree_sitter as ts

from .early_errors import UNKNOWN, module_kind
from .lexical import bracket_depths, closing_offset, open_brackets, open_multiline_string
from .registry import LanguageSpec
from .syntax import IncrementalParser, SyntaxErrorSpan, minimal_errors, token_left, token_right

PREFIX_WINDOW_CHARS = 3000
SUFFIX_WINDOW_CHARS = 3000
MAX_WINDOW_CHARS = 200_000  # how far a window grows when its edges parse with errors


def prefix_window(prefix: str, limit: int = PREFIX_WINDOW_CHARS) -> str:
    """The tail of the prefix, starting at the start of a line that starts a statement.

    A line that begins with a letter, '@' or '#' at column 0 is preferred: it is unlikely
    to sit inside a bracket or a string, so the window parses like the whole file would.
    """
    if len(prefix) <= limit:
        return prefix
    tail_start = len(prefix) - limit
    first_line = prefix.find("\n", tail_start)
    if first_line < 0:
        return prefix[tail_start:]
    best = first_line + 1
    i = best
    while 0 <= i < len(prefix):
        ch = prefix[i] if i < len(prefix) else ""
        if ch.isalpha() or ch in "@#_":
            return prefix[i:]
        nxt = prefix.find("\n", i)
        i = nxt + 1 if nxt >= 0 else -1
    return prefix[best:]


def suffix_window(suffix: str, limit: int = SUFFIX_WINDOW_CHARS) -> str:
    """The head of the suffix, ending just before a line that starts a top-level statement.

    A cut in the middle of a class or function leaves its brackets unclosed, and the
    parser then reports an error that spans the whole window, blamed on whatever middle
    is tried (even the true one). Ending before a line with a letter, '@', '#' or '_' at
    column 0 keeps the construct around the cursor whole; failing that, the cut is at a
    line end."""
    if len(suffix) <= limit:
        return suffix
    cut = suffix.rfind("\n", 0, limit)
    if cut <= 0:
        return suffix[:limit]
    i = cut
    while i > 0:
        ch = suffix[i + 1] if i + 1 < len(suffix) else ""
        if ch.isalpha() or ch in "@#_":
            return suffix[: i + 1]
        i = suffix.rfind("\n", 0, i)
    return suffix[: cut + 1]


_TOP_LEVEL_LINE = re.compile(rb"\n(?=[^\s])")


LATE_LINES = 8  # a hole's error is reported this many lines after the cursor's line at most (see _cut_tail)


def _cut_tail(text: bytes, cursor: int, error: SyntaxErrorSpan) -> bool:
    """Whether an error is the text's unfinished last statement, not the hole's: it ends on
    the text's last line and starts more than LATE_LINES lines after the cursor's line. A
    file (or a benchmark item, whose suffix is cut at a fixed length) that stops mid-
    statement has such an error whatever the middle is; counted as the hole's, the final
    check refused every middle, the true one too (docs/measurements/2026-12-01-ladder.md:
    on dev, 10 of the 26 items answered empty only under the constraint). A hole's own
    error starts at the cursor or a statement or two later, and an unclosed bracket of the
    hole is a MISSING error at the end, judged before this rule."""
    if error.missing or not text[error.start : error.end].strip(b"})]; \t\n"):
        return False  # a stray closer is a complete line's, whose opener went (`if (x) {` as the hole)
    end = len(text.rstrip())
    if b"\n" in text[error.end : end]:
        return False  # not on the last line
    line_end = text.find(b"\n", cursor)
    return line_end != -1 and text.count(b"\n", line_end, error.start) > LATE_LINES


def _string_at_cursor(spec: LanguageSpec, prefix: str, parser: IncrementalParser, text: bytes) -> Optional[str]:
    """The closing delimiter of the multi-line string the cursor is inside, if the lexer
    says so and the parser agrees: at the opening delimiter it sees a string or an error
    (an unterminated string it could not place; it often recovers by pairing the quotes
    with a later docstring's, which the node at the cursor then does not show)."""
    found = open_multiline_string(spec, prefix)
    if found is None:
        return None
    close, opened = found
    at = len(prefix[:opened].encode("utf-8"))
    node = parser.parse(text).root_node.descendant_for_byte_range(at, at)
    while node is not None:
        if "string" in node.type or node.type == "ERROR":
            return close
        node = node.parent
    return None


def _runaway_string(language: ts.Language, text: bytes, cursor: int, baseline: list[SyntaxErrorSpan], close: str) -> bool:
    """Whether the multi-line string the cursor is in was meant to close at the cursor: the
    hole was its closing line (the quotes after a docstring), so it runs on to the next
    string's opening quotes and the code below flips between code and string. Then the
    window with `close` put at the cursor has fewer errors than without; prose there is not
    inert, and the middle must close the string (on the tune part of the unseen packages, 10
    of the 14 Python middles CPython refused were such prose). Where the string goes on (a
    line of a docstring as the hole), closing it at the cursor makes the rest of it code,
    and more errors. A window that parses clean is not asked."""
    if not baseline:
        return False
    closed = text[:cursor] + close.encode("utf-8") + text[cursor:]
    return len(minimal_errors(ts.Parser(language).parse(closed).root_node)) < len(baseline)


def _runaway_comment(spec: LanguageSpec, root: ts.Node, text: bytes, cursor: int) -> Optional[str]:
    """The block comment's closer when the cursor is inside a doc comment (`/**`, each line
    starting with `*`) that runs on past a line of code: the hole was its ` */` line, and
    the comment swallows the code below to the next comment's closer. tree-sitter sees a
    longer comment and no error (`* @private` + newline + `function isBlob(value) {` was
    shown, and Node stops at the code after that next closer). None elsewhere."""
    block = spec.block_comment
    node = root.descendant_for_byte_range(cursor, cursor)
    if not block or node is None or node.type != "comment" or not node.start_byte < cursor < node.end_byte:
        return None
    opener, closer = block[0].encode(), block[1].encode()
    if not text.startswith(opener + b"*", node.start_byte):
        return None
    line_end = text.find(b"\n", cursor)
    if line_end == -1:
        return None
    above = text[node.start_byte : cursor].split(b"\n")[1:-1]
    below = text[line_end + 1 : node.end_byte].split(b"\n")
    starred = all(line.lstrip().startswith(b"*") for line in above if line.strip())
    code = any(line.strip() and not line.lstrip().startswith((b"*", closer)) for line in below)
    return block[1] if starred and code else None


def indent_width(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def closing_tail(spec: LanguageSpec, prefix: str, suffix: str) -> str:
    """Closers for the brackets a window's text leaves open where it stops inside the
    construct around the cursor, far below it: a newline and the closers, innermost
    first, to be parsed after the suffix; "" when that is not the case.

    Benchmark items cut their suffix at a fixed length, and a file being written often
    stops inside its last construct: `export default defineLocale('it', {` ... 1,500
    characters of properties, then the end. The parser reports one error from the opener
    to the end, over the cursor; a middle changes where it ends, so every middle, the true
    one too, was refused as adding it (57 of the 360 dev items refused their true middle,
    most of them so). Closed, the text parses and a middle is judged on its own.

    Only where the open brackets cannot be the hole's to close: none was opened on the
    cursor's line, the text goes on more than LATE_LINES lines after it, and for every open
    bracket each non-blank line below both it and the cursor's line is indented deeper
    than the bracket's own line (the text never came back out to that construct's level;
    one that does, `if (x) {` + hole + `} else {` below, needs the middle to close it)."""
    text = prefix + suffix
    line_start = prefix.rfind("\n") + 1
    if text.count("\n", len(prefix)) <= LATE_LINES:
        return ""
    stack = open_brackets(spec, text)
    if not stack or any(line_start <= at < len(prefix) for _, at in stack):
        return ""
    below_cursor = text.find("\n", len(prefix)) + 1
    for _, at in stack:
        own_line = text.rfind("\n", 0, at) + 1
        rest = text[max(below_cursor, text.find("\n", at) + 1):]
        if any(line.strip() and indent_width(line) <= indent_width(text[own_line:at + 1]) for line in rest.split("\n")):
            return ""
    return "\n" + "".join(spec.openers[opener] for opener, _ in reversed(stack))


def _only_trivia(spec: LanguageSpec, text: bytes) -> bool:
    """Whether `text` is whitespace and comments only."""
    line, block = (spec.line_comment or "").encode(), tuple(c.encode() for c in spec.block_comment or ())
    i, n = 0, len(text)
    while i < n:
        if text[i] in b" \t\r\n\f":
            i += 1
        elif line and text.startswith(line, i):
            end = text.find(b"\n", i)
            i = n if end == -1 else end
        elif len(block) == 2 and text.startswith(block[0], i):
            end = text.find(block[1], i + len(block[0]))
            if end == -1:
                return False
            i = end + len(block[1])
        else:
            return False
    return True


def _from_the_hole(spec: LanguageSpec, text: bytes, cursor: int, error: SyntaxErrorSpan, zone_end: int) -> bool:
    """Whether a baseline error is the empty hole's doing, to be repaired by the middle and
    never excused as one the file had: it touches the cursor's token (or the last token
    before it, only comments between), or it lies after the cursor's line start within the
    same top-level construct (`zone_end`: up to the next line that starts at column 0, or
    through it when it starts with a closer; at least until the brackets open at the cursor
    close). Parsers report a hole's error late: `if  {` in Rust at the `else` two lines on,
    `x = ` in TypeScript at the next statement, a removed `{` line at the `}();` that ends
    the construct; an error before the cursor's line cannot be the hole's."""
    if token_left(text, error.start) <= cursor <= token_right(text, error.end):
        return True
    if error.end <= cursor and _only_trivia(spec, text[error.end : cursor]):
        return True  # at the last token before the hole, comments between: `0 // 112 - 127` + hole for `];`
    if error.missing and error.end >= len(text.rstrip()):
        return True  # a bracket left open to the very end: the hole's recovery often puts it there
    if _cut_tail(text, cursor, error):
        return False
    line_start = text.rfind(b"\n", 0, cursor) + 1
    return error.start <= zone_end and error.end >= line_start


# A statement that is no error wherever a line of code may stand: what an empty line at
# the cursor is tried with to tell its errors from the file's (`_without_others`).
_CONTINUED = re.compile(rb"(&&|\|\||\band|\bor|\bnot)$")  # a condition going on to the next line
_CONTINUATION = re.compile(rb"(}\s*)?(else|elif|except|finally|catch)\b")
NEUTRAL_LINE = {"python": b"pass", "javascript": b";", "typescript": b";", "tsx": b";", "rust": b";", "go": b";"}


def neutral_line(spec: LanguageSpec, prefix: bytes, suffix: bytes) -> Optional[bytes]:
    """The neutral statement the empty line at the cursor is tried with (`_without_others`,
    and the early errors below it in grammars/constraint.py), or None when that test does
    not apply: the cursor is not alone on its line, or its line opens or closes a block by
    the indentation around it, or the language has none."""
    neutral = NEUTRAL_LINE.get(spec.name)
    line_start = prefix.rfind(b"\n") + 1
    line_end = suffix.find(b"\n")
    if neutral is None or prefix[line_start:].strip() or line_end < 0 or suffix[:line_end].strip():
        return None
    indent = len(prefix) - line_start
    before = [ln for ln in prefix[:line_start].split(b"\n")[-40:] if ln.strip()]
    after = [ln for ln in suffix[line_end + 1 :].split(b"\n", 40)[:40] if ln.strip()]
    depth = lambda line: len(line) - len(line.lstrip())  # noqa: E731
    if not before or not after or depth(before[-1]) > indent or depth(after[0]) > indent:
        return None
    # A line that goes on from the one before (`this.a &&` then `this.b) {`) is part of an
    # expression, where the indentation says nothing of the blocks it opens.
    if _CONTINUED.search(before[-1].rstrip()) is not None:
        return None
    return neutral


# What the empty line at the cursor may have been where it opens or closes a block or a
# bracket (`neutral_line` does not apply): an error below the cursor's line that stays
# with every one of these on it is another broken line's (`_without_others`). Each must
# parse as a line on its own, and together they must repair any one lost line: one that
# does repair the hole's errors keeps them the hole's.
FILLER_LINES = {
    "python": (b"pass", b"if x:", b"else:", b"try:", b"except:", b"def f():", b"class C:", b"def f(", b"f(", b"if (", b"x = [",
               b"x = {", b"x = (", b")", b"]", b"}", b"):", b'"""', b"'''", b"for x in y", b"x,"),
    "javascript": (b";", b"{", b"}", b"} else {", b"if (x) {", b"try {", b"f() {", b"f(() => {", b"f(", b"f({", b"if (", b"x = [",
                   b"x = {", b")", b"})", b"]", b");", b"case 0:", b"/*", b"`"),
}


_SWALLOWING = {"string", "template_string", "comment", "string_content"}


def _swallowed(root: ts.Node, cursor: int, length: int, to_hole) -> Optional[tuple[int, int]]:
    """The stretch (in the empty window's offsets) of the outermost string, comment or
    ERROR that starts in the filler at [cursor, cursor + length), if any."""
    node = root.descendant_for_byte_range(cursor, cursor + max(0, length - 1))
    found = None
    while node is not None:
        if cursor <= node.start_byte < cursor + length and (node.is_error or node.type in _SWALLOWING):
            found = (to_hole(node.start_byte), to_hole(node.end_byte))
        node = node.parent
    return found


def cursor_alone(prefix: bytes, suffix: bytes) -> bool:
    """Whether the cursor is alone on its line: only indentation before it, nothing after."""
    line_end = suffix.find(b"\n")
    return not prefix[prefix.rfind(b"\n") + 1 :].strip() and line_end >= 0 and not suffix[:line_end].strip()


def _stays(parser: IncrementalParser, prefix: bytes, filler: bytes, suffix: bytes) -> set[tuple[int, int, bool]]:
    """The errors after the cursor with `filler` at it, in the empty hole's offsets."""
    cursor, shift = len(prefix), len(filler)
    return {(e.start - shift, e.end - shift, e.missing) for e in minimal_errors(parser.parse(prefix + filler + suffix).root_node) if e.start >= cursor + shift}


def _without_others(spec: LanguageSpec, parser: IncrementalParser, prefix: bytes, suffix: bytes, at_cursor: list[SyntaxErrorSpan]) -> list[SyntaxErrorSpan]:
    """The hole's errors less those other broken lines make. With the cursor alone on its
    line (only indentation before it, nothing after) and a line that, by the indentation
    around it, neither opens a block (the next line is no deeper) nor closes one (the
    previous line is no deeper), an error after the cursor's line that stays when the line
    holds a neutral statement (`pass`, `;`) is not the empty line's doing: no middle can
    repair it, and counting it as the hole's refused every middle there. (A file being
    edited has other broken lines: on real lines of the tuning packages with their other
    sampled lines blanked, the true line was refused on 24-67% of them, on none alone.)
    A removed `{` line keeps its error at the construct's closer: the line after it is
    deeper; a removed `if x:` line keeps its orphan `else:`."""
    neutral = neutral_line(spec, prefix, suffix)
    if neutral is None:
        return _without_others_by_fillers(spec, parser, prefix, suffix, at_cursor)
    if not at_cursor:
        return at_cursor
    line_end = suffix.find(b"\n")
    after = [ln for ln in suffix[line_end + 1 :].split(b"\n", 40)[:40] if ln.strip()]
    cursor = len(prefix)
    # An `else:` or `except` right below the empty line is what a lost `if x:` or `try:`
    # line leaves: the next line's errors stay the hole's then. (Keeping every next line's
    # errors the hole's refused 11 more true lines of the 400 tuning lines.)
    next_start = len(prefix) + line_end + 1 + suffix[line_end + 1 :].find(after[0])
    continues = _CONTINUATION.match(after[0].lstrip()) is not None
    others = [e for e in at_cursor if e.start > (next_start + len(after[0]) if continues else len(prefix) + line_end)]
    if not others:
        return at_cursor
    filled = prefix + neutral + suffix
    shift = len(neutral)
    stays = {(e.start - shift, e.end - shift, e.missing) for e in minimal_errors(parser.parse(filled).root_node) if e.start >= cursor + shift}
    return [e for e in at_cursor if e not in others or (e.start, e.end, e.missing) not in stays]


def _without_others_by_fillers(spec: LanguageSpec, parser: IncrementalParser, prefix: bytes, suffix: bytes,
                               at_cursor: list[SyntaxErrorSpan]) -> list[SyntaxErrorSpan]:
    """`_without_others` where the empty line at the cursor opens or closes a block (the
    next line is deeper, or the previous one): no one neutral line stands there, so an
    error below the cursor's line is another broken line's only when it stays whatever
    line of FILLER_LINES is put at the cursor. Where one of them repairs it (the lost line
    was `if (x) {`, and `{` closes the construct again), it stays the hole's."""
    fillers = FILLER_LINES.get(spec.name)
    if not fillers or not at_cursor or not cursor_alone(prefix, suffix):
        return at_cursor
    line_end = len(prefix) + suffix.find(b"\n")
    others = [e for e in at_cursor if e.start > line_end]
    for filler in fillers:
        if not others:
            return at_cursor
        # Matched by overlap: the parser's recovery moves an error's edges a token or so
        # from one filler to the next.
        stays = _stays(parser, prefix, filler, suffix)
        others = [e for e in others if any(start <= e.end and end >= e.start for start, end, _ in stays)]
    return [e for e in at_cursor if e not in others]


def _construct_end(text: bytes, cursor: int) -> int:
    """Where the top-level construct around the cursor ends: before the next line that
    starts at column 0, or after it when that line starts with a closer (`}();` ending
    `var Dayjs = function () {`), or further when that line opens again (`} else {`). A
    hole that unbalances the construct's brackets shows its error at that closer; left
    out, the error was excused as the file's, and a middle that left the file broken was
    shown (issue 35: `_proto = Dayjs;`)."""
    at = cursor
    while True:
        top = _TOP_LEVEL_LINE.search(text, at)
        if top is None:
            return len(text)
        if text[top.end() : top.end() + 1] not in (b"}", b")", b"]"):
            return top.start()
        line_end = text.find(b"\n", top.end())
        if line_end == -1:
            return len(text)
        if text[top.end() : line_end].rstrip()[-1:] not in (b"{", b"(", b"["):
            return line_end
        at = line_end  # `} else {`: the construct goes on


def _bracket_end(spec: LanguageSpec, wp: str, ws: str) -> int:
    """For a cursor at column 0: where the innermost bracket open at it closes (byte offset
    in the window text, at the end of that line), or the text's end when it never does;
    the cursor when none is open or the cursor is not at column 0. Code that is not
    indented (an array of numbers, a file wrapped in `(function () {`) has no column-0 line
    to end the construct: `0 // 127` + a hole for `];` left the array open to the end, its
    errors were excused as the file's, and a middle ` *` that made `0 * function ...` of the
    next function was shown. At a deeper column the indentation rule (`_construct_end`)
    serves, and a bracket left open by the file's own error above (`def broken(:`) must
    not make every error below the hole's."""
    cursor = len(wp.encode("utf-8"))
    if wp[wp.rfind("\n") + 1 :]:
        return cursor
    stack = open_brackets(spec, wp)
    if not stack:
        return cursor
    at = closing_offset(spec, ws, 1)
    line_end = -1 if at is None else ws.find("\n", at)
    return cursor + len((ws if line_end == -1 else ws[:line_end]).encode("utf-8"))


def _edges_outside_blocks(spec: LanguageSpec, wp: str, ws: str, prefix: str, suffix: str) -> bool:
    """Whether a cut window starts and ends between top-level constructs: at an unindented
    line where it was cut, with brackets that never close more than they opened and are
    all closed by its end (the hole's own brackets are balanced: `f(` + `)` in the suffix)."""
    if len(wp) < len(prefix) and wp[:1] in (" ", "\t"):
        return False
    rest = suffix[len(ws):]
    if rest and rest[:1] in (" ", "\t", "}", ")", "]"):
        return False
    last = ws.rstrip().rsplit("\n", 1)[-1].strip()
    if rest and not spec.indent_sensitive and last and not last.endswith(("}", ";")) and not last.startswith(("//", "#", "/*", "*")):
        return False  # `impl ... for X` + `where` at column 0: the item goes on
    lowest, final = bracket_depths(spec, wp + ws)
    return lowest >= 0 and final == 0


def _starts_at_top_level(spec: LanguageSpec, prefix: str, wp: str) -> bool:
    """Whether the prefix window starts outside every block of the file: it is the whole
    prefix, or it starts at column 0 with every bracket before it closed (a file wrapped
    in `(function () {` has its body at column 0 too)."""
    if len(wp) == len(prefix):
        return True
    if wp[:1] in (" ", "\t"):
        return False
    return bracket_depths(spec, prefix[: len(prefix) - len(wp)])[1] == 0


@dataclass
class Window:
    """The per-request state: window text, the baseline parse and a reusable parser."""

    spec: LanguageSpec
    prefix: bytes
    suffix: bytes
    baseline: list[SyntaxErrorSpan]
    probe_parser: IncrementalParser
    final_parser: IncrementalParser
    prefix_text: str = ""
    suffix_text: str = ""
    cursor_errors: list[SyntaxErrorSpan] = field(default_factory=list)
    # The closing delimiter of the multi-line string (a docstring) the cursor is inside,
    # by both the lexer and the parser; None elsewhere. Text that does not close it is
    # inert there: the file parses as before, whatever the middle says (`inert`).
    string_close: Optional[str] = None
    # For the early-error check (grammars/early_errors.py): JavaScript's module kind, of
    # the whole file's text, or as the file's name or package declares it (WindowCache).
    module_kind: str = UNKNOWN
    _at_top_level: Optional[bool] = None  # `starts_at_top_level`, once asked
    # Where the cursor's construct ends (`_from_the_hole`), and the early errors
    # (grammars/early_errors.py) the empty hole has between the cursor and there, once asked.
    zone_end: int = 0
    hole_early_errors: Optional[list] = None
    # The early errors below the cursor that are the file's, not the hole's (grammars/
    # constraint.py `_file_early_errors`), once asked.
    file_early_errors: Optional[set] = None
    _filler_errors: Optional[list] = None  # `filler_errors`, once asked
    # grammars/splice.py: the baseline's errors other than the hole's, and the hole's, as
    # `_located` counts them (computed at the first final check; read-only after).
    located_errors: Optional[tuple] = None
    # The closer of the block comment the cursor is in when the hole was its closing line
    # (`_runaway_comment`): a middle must close it. None elsewhere.
    comment_close: Optional[str] = None
    # grammars/region.py: the innermost block around the cursor that parses clean alone,
    # (prefix, suffix) wrapped, or () when there is none (or the window has no errors of
    # its own); None until the window's first final check asks (grammars/constraint.py
    # `_clean_block`).
    clean_block: Optional[tuple] = None

    @property
    def cursor(self) -> int:
        return len(self.prefix)

    @property
    def size(self) -> int:
        """Bytes of text the window's checks parse (engine.types.HeldWindow)."""
        return len(self.prefix) + len(self.suffix)

    @classmethod
    def build(cls, spec: LanguageSpec, prefix: str, suffix: str) -> "Window":
        language: ts.Language = spec.ts_language()
        final_parser = IncrementalParser(language)
        prefix_limit, suffix_limit = PREFIX_WINDOW_CHARS, SUFFIX_WINDOW_CHARS
        while True:
            wp, ws = prefix_window(prefix, prefix_limit), suffix_window(suffix, suffix_limit)
            if len(ws) == len(suffix):  # the text's real end (a cut window is widened instead)
                ws += closing_tail(spec, wp, ws)
            wp_b, ws_b = wp.encode("utf-8"), ws.encode("utf-8")
            text = wp_b + ws_b
            baseline = minimal_errors(final_parser.parse(text).root_node)
            cursor = len(wp_b)
            # Errors at the cursor are the hole the middle is meant to fill, not the file's.
            zone_end = max(_construct_end(text, cursor), _bracket_end(spec, wp, ws))
            at_cursor = [e for e in baseline if _from_the_hole(spec, text, cursor, e, zone_end)]
            at_cursor = _without_others(spec, final_parser, wp_b, ws_b, at_cursor)
            cut = len(wp) < len(prefix) or len(ws) < len(suffix)
            whole = len(at_cursor) == len(baseline) and _edges_outside_blocks(spec, wp, ws, prefix, suffix)
            if not cut or whole or prefix_limit >= MAX_WINDOW_CHARS:
                break
            # A window that starts or ends inside a block (or a string) parses with errors of
            # its own, and a middle's error can hide inside them, or a true middle show them
            # (the hole's error masked a missing `}` at the window's end): widen it until its
            # edges are clean or the file's own errors are all that is left.
            prefix_limit, suffix_limit = prefix_limit * 4, suffix_limit * 4
        string_close = _string_at_cursor(spec, wp, final_parser, text)
        # Only for a cursor alone on its line: one after prose typed on it is someone writing
        # the docstring (the typing replay: 285 -> 155 suggestions delivered when every
        # unclosed docstring was taken for a lost closing line).
        alone = not wp[wp.rfind("\n") + 1 :].strip()
        if string_close is not None and alone and _runaway_string(language, text, cursor, baseline, string_close):
            # The hole was the string's closing line: every error after the cursor is the
            # string running on, the hole's to repair (by closing it), not the file's.
            string_close = None
            at_cursor = [e for e in baseline if e in at_cursor or e.end >= cursor]
        return cls(
            spec=spec,
            prefix=wp_b,
            suffix=ws_b,
            baseline=baseline,
            probe_parser=IncrementalParser(language),
            final_parser=final_parser,
            prefix_text=wp,
            suffix_text=ws,
            cursor_errors=at_cursor,
            string_close=string_close,
            zone_end=zone_end,
            comment_close=_runaway_comment(spec, final_parser.parse(text).root_node, text, cursor),
            module_kind=module_kind(prefix + suffix) if spec.name == "javascript" else UNKNOWN,
        )

    def starts_at_top_level(self, prefix: str) -> bool:
        """Whether this window (of the request's whole `prefix`) starts outside every block
        of the file; computed when first asked (a scan of the prefix above the window, tens
        of milliseconds in a 150 kB file), which only an early-error candidate outside every
        function does."""
        if self._at_top_level is None:
            self._at_top_level = _starts_at_top_level(self.spec, prefix, self.prefix_text)
        return self._at_top_level

    def inert(self, middle: str) -> bool:
        """Whether `middle`, at the cursor inside this window's multi-line string, stays
        string content: it neither closes the string (not even with the quotes around the
        cursor), nor opens code inside it (`${` in a template literal), nor ends in a
        backslash that would escape what follows."""
        close = self.string_close
        if close is None or middle.endswith("\\"):
            return False
        around = self.prefix_text[-(len(close) - 1) :] if len(close) > 1 else ""
        after = self.suffix_text[: len(close) - 1] if len(close) > 1 else ""
        text = around + middle + after
        return close not in text and not (close == "`" and "${" in self.prefix_text[-1:] + middle)

    def filler_errors(self) -> list[tuple[list[tuple[int, int]], Optional[tuple[int, int]]]]:
        """With the cursor alone on its line: the errors of the window with its empty line,
        then with each line of FILLER_LINES at the cursor that leaves no more errors than
        the empty line (one that makes the file worse is not what was lost there), as spans
        in the empty window's offsets (one that covers the filler covers the cursor), each
        with the stretch the filler swallows, if any: a string, a comment or an ERROR that
        starts at it (a triple quote, `/*`) runs over the text below, hiding its errors
        rather than repairing them. The first filler, the neutral line, is always kept.
        Empty elsewhere. Computed once, when first asked: only a splice with an error the
        file has not asks (each filler is a parse of the window)."""
        if self._filler_errors is None:
            self._filler_errors = []
            fillers = FILLER_LINES.get(self.spec.name)
            if fillers and cursor_alone(self.prefix, self.suffix):
                cursor = self.cursor
                self._filler_errors.append(([(e.start, e.end) for e in self.baseline], None))
                for i, filler in enumerate(fillers):
                    shift = len(filler)
                    root = self.final_parser.parse(self.prefix + filler + self.suffix).root_node
                    errors = minimal_errors(root)
                    if i and len(errors) > len(self.baseline):
                        continue
                    to_hole = lambda at: at if at <= cursor else max(cursor, at - shift)  # noqa: E731
                    self._filler_errors.append(([(to_hole(e.start), to_hole(e.end)) for e in errors], _swallowed(root, cursor, shift, to_hole)))
        return self._filler_errors

    def stays_with_every_line(self, start: int, end: int) -> bool:
        """Whether an error at [start, end] (the empty window's offsets) lies inside an
        error whatever line stands at the cursor (`filler_errors`; a filler that swallows
        it says nothing): no middle's doing, and none for a middle to repair."""
        spans = self.filler_errors()
        return bool(spans) and all(
            (swallowed is not None and swallowed[0] <= start and swallowed[1] >= end) or any(s <= start and e >= end for s, e in errors)
            for errors, swallowed in spans
        )

    def baseline_near(self, lo: int, hi: int) -> bool:
        """Whether the baseline has an error touching [lo, hi] (baseline byte offsets)."""
        return any(e.start <= hi and e.end >= lo for e in self.baseline)


class WindowCache:
    """Windows of the requests in flight, keyed by the window texts themselves.

    One constraint object serves every request of its language, and a batched pass asks
    about every request in flight in turn: the cache must hold them all, or each pass
    rebuilds (and re-parses) the windows the others pushed out. It was 8 windows, first in
    first out: with 16 Python requests in flight every lookup missed, and window builds
    were an eighth of a batched run's time. Least recently used windows go first, beyond
    `size` windows (the engine's default batch holds 64 requests) or `max_bytes` of window
    text. A window costs far more memory than its text: its two parsers' trees, about
    0.5 MB of RSS for a 6 kB window (measured: 160 windows +82 MB), so the byte budget is
    what bounds a few windows widened over big files (up to 400 kB of text each).

    A window a request in flight holds (`TreeSitterConstraint.hold`) is found even once
    the budget pushed it out: with real files' windows (10-200 kB) a batch's windows
    outgrew the budget, and a batched pass, asking about every request in turn, rebuilt
    each window at each of its checks (issue 35: on 80 real lines with a budget that held
    most of them, 493 window builds instead of 80, half the batch's CPU time)."""

    def __init__(self, spec: LanguageSpec, size: int = 72, max_bytes: int = 1 << 20, declared_kind: Optional[str] = None) -> None:
        self._spec = spec
        # JavaScript's module kind where the file's name or package says it (early_errors.
        # declared_module_kind): it replaces the one a window reads from its text.
        self._declared_kind = declared_kind
        self._size = size
        self._max_bytes = max_bytes
        self._bytes = 0
        self._windows: dict[tuple, Window] = {}  # insertion order = recency
        self._held: "weakref.WeakValueDictionary[tuple, Window]" = weakref.WeakValueDictionary()  # every window someone still holds

    def __len__(self) -> int:
        return len(self._windows)

    def get(self, prefix: str, suffix: str) -> Window:
        # The text beyond the first windows counts too: a window is widened over it when
        # its edges fall inside a block, and the module kind is read from the whole file;
        # keyed by the near text alone, a request got a window built from another's file.
        key = (prefix_window(prefix), suffix_window(suffix), len(prefix), len(suffix), hash(prefix), hash(suffix))
        window = self._windows.pop(key, None)
        if window is None:  # not cached: one a request holds, else built now
            window = self._held.get(key)
            if window is None:
                window = Window.build(self._spec, prefix, suffix)
                if self._declared_kind is not None:
                    window.module_kind = self._declared_kind
                self._held[key] = window
            self._bytes += _window_bytes(window)
        self._windows[key] = window  # now the most recent
        while len(self._windows) > 1 and (len(self._windows) > self._size or self._bytes > self._max_bytes):
            oldest = next(iter(self._windows))
            self._bytes -= _window_bytes(self._windows.pop(oldest))
        return window


def _window_bytes(window: Window) -> int:
    return len(window.prefix) + len(window.suffix)
