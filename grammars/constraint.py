"""The syntax constraint the sampler consults: `allows`, `accept_final` and `polish`.

The rule behind `allows` (explained at length in docs/grammars.md): the canvas is spliced
between the prefix and suffix windows with every hole (a run of masked positions) replaced
by a neutral filler, and parsed incrementally. A minimal syntax error vetoes the commit only
when it is *sealed*: the error, widened by one token on each side, touches no hole, and
where it reaches into the prefix or suffix the baseline (the empty middle) had no error
there. Anything a hole could still explain is let through; `accept_final` judges the rest.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Optional, Sequence

import tree_sitter as ts

from . import polish as polish_mod
from .early_errors import COMMONJS, MODULE, EarlyError, early_errors
from .headers import header
from .lexical import blank_line
from .python_check import adds_python_error, opens_block, over_indented
from .splice import added_errors, splice_error_balance, stands_on_its_own
from .region import clean_block
from .registry import LanguageSpec
from .syntax import SyntaxErrorSpan, minimal_errors, token_left, token_right
from .window import FILLER_LINES, Window, WindowCache, cursor_alone, indent_width, neutral_line


BRACE_HEADERS = ("javascript", "typescript", "tsx")  # where `opens_block` asks the final check (a `{` the suffix's `}` needs)
ANSWER_CACHE_SIZE = 4096  # remembered `allows` answers (cleared when full)


@dataclass
class ConstraintStats:
    """Counters for the benchmark: how often each check ran and how long it took."""

    allows_calls: int = 0
    allows_rejections: int = 0
    allows_seconds: float = 0.0
    final_calls: int = 0
    final_rejections: int = 0
    final_on_its_own: int = 0  # middles accepted in a file broken elsewhere (splice.stands_on_its_own)
    final_in_block: int = 0  # middles judged in the clean block around the cursor, in a file broken elsewhere (region.py)
    final_seconds: float = 0.0
    polish_calls: int = 0
    polish_changes: int = 0
    polish_seconds: float = 0.0

    @property
    def seconds(self) -> float:
        return self.allows_seconds + self.final_seconds + self.polish_seconds

    def reset(self) -> None:
        self.__init__()  # type: ignore[misc]


@dataclass(frozen=True)
class Probe:
    """The window with the canvas spliced in, and where its holes and canvas lie."""

    text: bytes
    canvas_start: int
    canvas_end: int
    holes: tuple[tuple[int, int], ...]  # byte ranges of the fillers


def _at_line_start(text: bytes) -> bool:
    stripped = text.rstrip(b" \t")
    return not stripped or stripped.endswith(b"\n")


def build_probe(window: Window, pieces: Sequence[Optional[str]]) -> Probe:
    """Splice the canvas; each run of holes becomes one filler.

    The filler is a space (so neighbouring tokens never merge into a new one, such as
    `/` + `/` into a comment), or nothing at the start of a line (so no indentation is
    invented).
    """
    parts = [window.prefix]
    holes: list[tuple[int, int]] = []
    pos = len(window.prefix)
    tail = window.prefix[-64:]
    in_hole = False
    for piece in pieces:
        if piece is None:
            if not in_hole:
                filler = b"" if _at_line_start(tail) else b" "
                parts.append(filler)
                holes.append((pos, pos + len(filler)))
                pos += len(filler)
                tail = (tail + filler)[-64:]
                in_hole = True
            continue
        in_hole = False
        if piece:
            data = piece.encode("utf-8")
            parts.append(data)
            pos += len(data)
            tail = (tail + data)[-64:]
    canvas_end = pos
    parts.append(window.suffix)
    return Probe(b"".join(parts), len(window.prefix), canvas_end, tuple(holes))


_HIDING = {"ERROR", "string", "template_string", "comment", "string_content"}


def _hidden(root: ts.Node, offset: int) -> bool:
    """Whether the code at `offset` is no code in this tree: inside a string, a comment or
    an ERROR, where no early error is looked for."""
    node: Optional[ts.Node] = root.descendant_for_byte_range(offset, offset + 1)
    while node is not None:
        if node.type in _HIDING or node.is_error:
            return True
        node = node.parent
    return False


class TreeSitterConstraint:
    """`engine.types.SyntaxConstraint` for one language, backed by its tree-sitter grammar.
    `module_kind`: for JavaScript, how Node loads the files it judges, where the file's name
    or package says it (early_errors.declared_module_kind); None: read from each text."""

    def __init__(self, spec: LanguageSpec, module_kind: Optional[str] = None) -> None:
        self.spec = spec
        self.module_kind = module_kind
        self.stats = ConstraintStats()
        self._windows = WindowCache(spec, declared_kind=module_kind)
        self._kinds: dict[str, TreeSitterConstraint] = {}  # for_module_kind's, made once
        # One object serves all requests of its language; parsers are not thread-safe.
        self._lock = threading.Lock()
        self._answers: dict[tuple[bytes, bytes, tuple[Optional[str], ...]], bool] = {}
        quote_chars = {q for pair in spec.quotes for q in pair}
        self._closing_bytes = [c.encode() for c in {close for _, close in spec.brackets} | quote_chars]
        self._opening_bytes = [c.encode() for c in {open_ for open_, _ in spec.brackets} | quote_chars]

    @property
    def language(self) -> str:
        """The language's name (engine.types.BlockAwareConstraint)."""
        return self.spec.name

    def for_module_kind(self, kind: str) -> "TreeSitterConstraint":
        """This language's constraint judging every text as JavaScript of module kind `kind`
        ("module" or "commonjs": early_errors.declared_module_kind), one object per kind
        with its own windows; itself for another language or its own kind."""
        if kind not in (MODULE, COMMONJS):
            raise ValueError(f"module kind must be {MODULE!r} or {COMMONJS!r}, not {kind!r}")
        if self.spec.name != "javascript" or kind == self.module_kind:
            return self
        with self._lock:
            if kind not in self._kinds:
                self._kinds[kind] = TreeSitterConstraint(self.spec, kind)
            return self._kinds[kind]

    # -- the commit check -------------------------------------------------------------

    def allows(self, prefix: str, pieces: Sequence[Optional[str]], suffix: str) -> bool:
        started = time.perf_counter()
        try:
            with self._lock:
                window = self._windows.get(prefix, suffix)
                # Passes re-ask the same question (a vetoed token is proposed again while
                # the canvas around it has not changed), so answers are remembered.
                key = (window.prefix, window.suffix, tuple(pieces))
                ok = self._answers.get(key)
                if ok is None and window.string_close is not None and window.inert("".join(p or "" for p in pieces)):
                    ok = True  # text inside the docstring the cursor is in: the file parses as before
                if ok is None:
                    if len(self._answers) >= ANSWER_CACHE_SIZE:
                        self._answers.clear()
                    ok = self._answers[key] = self._allows(window, pieces)
        finally:
            self.stats.allows_calls += 1
            self.stats.allows_seconds += time.perf_counter() - started
        if not ok:
            self.stats.allows_rejections += 1
        return ok

    def _allows(self, window: Window, pieces: Sequence[Optional[str]]) -> bool:
        if not pieces and window.cursor_errors:
            # An end of middle right at the cursor leaves the file as it was, and it was
            # broken right here (`while :`, `f(,)`): the hole needs text, so refuse the end.
            return False
        probe = build_probe(window, pieces)
        root = window.probe_parser.parse(probe.text).root_node
        if not root.has_error:
            return True
        # From the last token before the canvas: the parser often places the hole's own
        # error (`while :` has a MISSING condition) before the space at the cursor.
        lo = max(0, len(probe.text[: probe.canvas_start].rstrip()) - 1)
        for error in minimal_errors(root, lo, probe.canvas_end):
            if self._sealed(window, probe, error):
                return False
        return True

    def _sealed(self, window: Window, probe: Probe, error: SyntaxErrorSpan) -> bool:
        """Whether no filling of the holes can repair `error` (see the module docstring)."""
        text = probe.text
        lo = token_left(text, error.start)
        # A parser may notice an error only at the token after it, so that token (and any
        # hole before it) belongs to the error; not so when the error ends in a closer,
        # which the parser rejects the moment it reads it.
        ends_in_closer = text[error.start : error.end].rstrip()[-1:] in self._closing_bytes
        hi = error.end if ends_in_closer and not error.missing else token_right(text, error.end)
        if self.spec.indent_sensitive:
            line_end = text.find(b"\n", error.end)
            if line_end != -1:
                hi = min(hi, max(line_end, error.end))  # the statement ends at the newline
        if hi < probe.canvas_start or lo > probe.canvas_end:
            return False  # wholly in the context: not the canvas's doing
        holes = probe.holes

        def hole_in(a: int, b: int) -> bool:
            # Half-open [a, b): a hole right after a closer that ended the error is not in it.
            return any(start < b and (end > a or start == end >= a) for start, end in holes)

        # Parsers notice an error a token or more after its cause, so a hole earlier on
        # the error's line, or on the line before (`(p) <hole> {` then `const x`), may be
        # the cause; a later hole cannot be.
        line_start = text.rfind(b"\n", 0, lo) + 1
        previous_start = text.rfind(b"\n", 0, max(0, line_start - 1)) + 1 if line_start else 0
        # In an indentation-sensitive language a newline outside brackets ends the
        # statement, so a hole on the next line cannot repair this one (the bracket rules
        # below still cover `f(` + newline + hole).
        if hole_in(line_start if self.spec.indent_sensitive else previous_start, hi):
            return False
        # A stray closer or quote may get its partner from any earlier hole, an unclosed
        # opener from any later one.
        zone = text[lo:hi]
        if any(c in zone for c in self._closing_bytes) and hole_in(probe.canvas_start, hi):
            return False
        if any(c in zone for c in self._opening_bytes) and hole_in(lo, probe.canvas_end):
            return False
        # Errors that spill into the suffix are usually the unfinished canvas's block
        # structure; judge them only once the canvas has no holes left.
        if hi > probe.canvas_end and holes:
            return False
        canvas_len = probe.canvas_end - probe.canvas_start
        if lo < probe.canvas_start and window.baseline_near(lo, window.cursor):
            # The prefix already had an error here, unless it is the hole's own error
            # (`while :`) and the canvas has put a statement-ending newline between it
            # and every hole: then no later text can fill the hole any more.
            if not (self.spec.indent_sensitive and self._hole_closed_by_newline(window, probe, lo, hi)):
                return False
        if hi > probe.canvas_end and window.baseline_near(window.cursor, hi - canvas_len):
            return False  # the suffix already had an error here
        return True

    @staticmethod
    def _hole_closed_by_newline(window: Window, probe: Probe, lo: int, hi: int) -> bool:
        at_cursor = any(e.start <= hi and e.end >= lo for e in window.cursor_errors)
        first_hole = probe.holes[0][0] if probe.holes else probe.canvas_end
        return at_cursor and b"\n" in probe.text[probe.canvas_start : first_hole]

    # -- the final check --------------------------------------------------------------

    def accept_final(self, prefix: str, middle: str, suffix: str) -> bool:
        with self._lock:
            window = self._windows.get(prefix, suffix)
            if window.inert(middle):  # prose inside the docstring the cursor is in
                return True
        # A doc comment whose closing line was the hole must be closed (window.py,
        # `_runaway_comment`): tree-sitter sees no error in a longer comment.
        closes = window.comment_close is None or window.comment_close in middle
        block = self._clean_block(window) if closes else None
        at_column_0 = not window.prefix_text[window.prefix_text.rfind("\n") + 1 :]
        if block and not at_column_0:
            # The file is broken elsewhere, and its errors' recovery can reach across the
            # cursor either way (refusing the true line, or letting a broken one through):
            # the innermost block around the cursor that parses clean alone judges the
            # splice (grammars/region.py). Its check counts as a call of its own.
            self.stats.final_in_block += 1
            return self.accept_final(block[0], middle, block[1])
        indent = len(middle) - len(middle.lstrip(" \t"))
        if block and indent and middle[indent:indent + 1] not in ("", "\n", "\r"):
            # At column 0 the blocks are found from the wrong level: the middle brings its
            # line's indentation. The same splice, judged from after that indentation.
            return self.accept_final(prefix + middle[:indent], middle[indent:], suffix)
        started = time.perf_counter()
        try:
            with self._lock:
                ok = closes and self._no_new_errors(window, middle) and not self._early_error(window, prefix, middle)
                if ok and self.spec.name == "python":
                    # tree-sitter-python lets through code CPython refuses (a statement
                    # indented deeper than its block): ask CPython too, on the same window.
                    ok = not adds_python_error(window.prefix_text, middle, window.suffix_text)
        finally:
            self.stats.final_calls += 1
            self.stats.final_seconds += time.perf_counter() - started
        if not ok and block and self.accept_final(block[0], middle, block[1]):
            # At column 0 with a middle that starts its line (no indentation of its own):
            # the block gets a second hearing.
            self.stats.final_in_block += 1
            return True
        if not ok:
            self.stats.final_rejections += 1
        return ok

    def _clean_block(self, window: Window) -> tuple:
        """In a window with errors of its own (not the hole's), the innermost block around
        the cursor that parses with no error but the hole's, (prefix, suffix) wrapped
        (grammars/region.py); () where the window has none of its own or no block is
        clean. Looked for once per window, in the window's text (a block reaching past a
        window that wide is not looked for)."""
        if window.clean_block is None:
            found = None
            if any(e not in window.cursor_errors for e in window.baseline):
                found = clean_block(self.spec.name, window.prefix_text, window.suffix_text, self.hold)
            window.clean_block = found or ()
        return window.clean_block

    def _no_new_errors(self, window: Window, middle: str) -> bool:
        """The splice adds no syntax error (grammars/splice.py `added_errors`); in a file
        broken elsewhere, where the other errors move when a line is inserted, the middle's
        own text is judged instead (`stands_on_its_own`)."""
        if added_errors(window, middle) == 0:
            return True
        if stands_on_its_own(window, middle):
            self.stats.final_on_its_own += 1
            return True
        return False

    def _early_error(self, window: Window, prefix: str, middle: str) -> bool:
        """Whether the middle has code the grammar accepts and the compiler refuses
        (`return` outside a function, `break` outside a loop: grammars/early_errors.py).

        Only statements that overlap the middle are judged, and one that the empty hole
        has too is the hole's doing, as with tree-sitter's errors: a deleted
        `} = require(...)` line leaves `const {` + names without an initializer, and `}`
        does not repair it. The one excuse is a `try` being typed (its block still open
        after the middle): the empty hole has it, and it is left to be finished. Where the
        empty hole has early errors further down its construct, the splice must have none
        there either."""
        middle_b = middle.encode("utf-8")
        cursor = window.cursor
        tree = window.final_parser.parse(window.prefix + middle_b + window.suffix)  # added_errors's parse, cached
        found = self._early_errors_in(window, prefix, tree.root_node, cursor, cursor + len(middle_b))
        if found and not all(e.excusable for e in found):
            return True
        if self._hole_early_errors(window, prefix):
            # The empty hole misled the parser below it without an ERROR (a lost `{` closes
            # a method early, and the class body's next `if (...) {` reads as a method
            # `if`): what the suffix of the construct still has, the middle did not repair.
            shift = len(middle_b)
            tree = window.final_parser.parse(window.prefix + middle_b + window.suffix)
            below = self._early_errors_in(window, prefix, tree.root_node, cursor + shift, window.zone_end + shift, cursor + shift)
            files = self._file_early_errors(window, prefix)
            if any(not e.excusable and (e.start - shift, e.message) not in files for e in below):
                return True
        if not found:
            return False
        before = window.final_parser.parse(window.prefix + window.suffix)
        had = {(e.start, e.message) for e in self._early_errors_in(window, prefix, before.root_node, cursor - 1, cursor + 1)}
        return any((e.start, e.message) not in had for e in found)

    def _hole_early_errors(self, window: Window, prefix: str) -> list[EarlyError]:
        """The early errors the empty hole has in the rest of the cursor's construct, below
        the cursor (computed once per window)."""
        if window.hole_early_errors is None:
            root = window.final_parser.parse(window.prefix + window.suffix).root_node
            found = self._early_errors_in(window, prefix, root, window.cursor, window.zone_end, window.cursor)
            window.hole_early_errors = [e for e in found if not e.excusable and (e.start, e.message) not in self._file_early_errors(window, prefix)]
        return window.hole_early_errors

    def _file_early_errors(self, window: Window, prefix: str) -> set[tuple[int, str]]:
        """(start, message) of the early errors below the cursor that stay when its empty line
        holds a neutral statement (grammars/window.py `neutral_line`): another broken line's
        doing, not the hole's, and no middle's to repair. Where the line opens or closes a
        block (no neutral line applies), those that no line of FILLER_LINES at the cursor
        repairs, as `_without_others_by_fillers` judges tree-sitter's errors: a lost
        `def f():` line keeps its `return` outside a function the hole's. A filler that
        only hides the error (in a string, a comment or an ERROR: a triple quote, `f(`) repairs
        nothing. Empty where neither test applies."""
        if window.file_early_errors is None:
            neutral = neutral_line(self.spec, window.prefix, window.suffix)
            if neutral is not None:
                fillers: tuple[bytes, ...] = (neutral,)
            elif cursor_alone(window.prefix, window.suffix):
                fillers = FILLER_LINES.get(self.spec.name, ())
            else:
                fillers = ()
            stays: Optional[set[tuple[int, str]]] = None
            for filler in fillers:
                cursor, shift = window.cursor, len(filler)
                root = window.final_parser.parse(window.prefix + filler + window.suffix).root_node
                found = self._early_errors_in(window, prefix, root, cursor + shift, window.zone_end + shift, cursor + shift)
                these = {(e.start - shift, e.message) for e in found}
                if stays is None:
                    stays = these
                else:
                    stays = {e for e in stays if e in these or _hidden(root, e[0] + shift)}
                if not stays:
                    break
            window.file_early_errors = stays or set()
        return window.file_early_errors

    def _early_errors_in(self, window: Window, prefix: str, root: ts.Node, lo: int, hi: int,
                         middle_end: Optional[int] = None) -> list[EarlyError]:
        return early_errors(self.spec.name, self.spec.ts_language(), root, lo, hi, window.module_kind,
                            lambda: window.starts_at_top_level(prefix), middle_end)

    def hold(self, prefix: str, suffix: str) -> Window:
        """The request's window, for the request to keep while it runs: its checks find it
        even when other requests' windows have pushed it out of the cache (WindowCache)."""
        with self._lock:
            return self._windows.get(prefix, suffix)

    def in_string(self, prefix: str, suffix: str) -> bool:
        """Whether the cursor is inside a multi-line string (a docstring being written):
        there a middle that does not close it is judged inert (`Window.inert`), and the
        engine ends it at its first line (engine/api.py)."""
        with self._lock:
            return self._windows.get(prefix, suffix).string_close is not None

    def no_code_fits(self, prefix: str, suffix: str) -> bool:
        """Whether no middle that starts with code can pass the final check here, whatever
        the model writes: in Python, a cursor line indented where no statement may start
        (python_check.over_indented). Asked once per request, before any pass."""
        return self.spec.name == "python" and over_indented(prefix, suffix)

    def opens_block(self, prefix: str, suffix: str) -> Optional[str]:
        """Where the cursor's line must be a block header: the indentation the header starts
        with ("" when typed already), else None (python_check.opens_block in Python,
        `_opens_brace_block` in JavaScript and TypeScript, None elsewhere). Asked once per
        request, before any pass."""
        if self.spec.name == "python":
            return opens_block(prefix, suffix)
        if self.spec.name in BRACE_HEADERS:
            return self._opens_brace_block(prefix, suffix)
        return None

    def _opens_brace_block(self, prefix: str, suffix: str) -> Optional[str]:
        """`opens_block` in JavaScript and TypeScript: the cursor's line blank, the next
        line of code indented deeper than it (with the cursor at a line's start, than the
        previous code line), and the final check refusing a plain statement there (`x;`: a
        `}` below is left without its `{`) where it accepts an `if` header (grammars/headers.py:
        `if (x.y) {`, not `if (x) {`, which in a class body is a method named `if`)."""
        line = blank_line(prefix, suffix, lambda text: bool(text.strip()) and not text.lstrip().startswith(("//", "/*", "*")), is_previous=str.strip)
        if line is None or indent_width(line.following) <= indent_width(line.indent):
            return None
        write, end = line.write, line.end
        if self.accept_final(prefix, write + "x;" + end, suffix) or not self.accept_final(prefix, write + header(self.spec.name, "if") + end, suffix):
            return None
        return write

    def new_errors(self, prefix: str, middle: str, suffix: str) -> int:
        """Errors the splice adds in the region it touches, less those it removes.

        Errors identical before and after (same place in the prefix, or same distance from
        the end in the suffix) are untouched and ignored. The baseline's errors at the
        cursor are the empty hole itself, so they are not counted as errors the file had.
        """
        with self._lock:
            return splice_error_balance(self._windows.get(prefix, suffix), middle)

    # -- polishing ----------------------------------------------------------------------

    def polish(self, prefix: str, middle: str, suffix: str) -> str:
        started = time.perf_counter()
        try:
            with self._lock:
                polished = polish_mod.polish(self._windows.get(prefix, suffix), middle)
        finally:
            self.stats.polish_calls += 1
            self.stats.polish_seconds += time.perf_counter() - started
        if polished != middle:
            self.stats.polish_changes += 1
        return polished
