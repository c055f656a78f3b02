"""The syntax constraint the sampler consults: `allows`, `accept_final` and `polish`.

The rule behind `allows` (explained at length in docs/grammars.md): the canvas is spliced
between the prefix and suffix windows with every hole (a run of masked positions) replaced
by a neutral filler, and parsed incrementally. A minimal syntax error vetoes the commit only
when it is *sealed*: the error, widened by one token on each side, touches no hole, and
where it reaches into the prefix or suffix the baseline (the empty middle) had no error
there. Anything a hole could still explain is let through; `accept_final` judges the rest.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Optional, Sequence

from . import polish as polish_mod
from .splice import splice_error_balance
from .registry import LanguageSpec
from .syntax import SyntaxErrorSpan, minimal_errors, token_left, token_right
from .window import Window, WindowCache


@dataclass
class ConstraintStats:
    """Counters for the benchmark: how often each check ran and how long it took."""

    allows_calls: int = 0
    allows_rejections: int = 0
    allows_seconds: float = 0.0
    final_calls: int = 0
    final_rejections: int = 0
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


class TreeSitterConstraint:
    """`engine.types.SyntaxConstraint` for one language, backed by its tree-sitter grammar."""

    def __init__(self, spec: LanguageSpec) -> None:
        self.spec = spec
        self.stats = ConstraintStats()
        self._windows = WindowCache(spec)

    # -- the commit check -------------------------------------------------------------

    def allows(self, prefix: str, pieces: Sequence[Optional[str]], suffix: str) -> bool:
        started = time.perf_counter()
        try:
            ok = self._allows(self._windows.get(prefix, suffix), pieces)
        finally:
            self.stats.allows_calls += 1
            self.stats.allows_seconds += time.perf_counter() - started
        if not ok:
            self.stats.allows_rejections += 1
        return ok

    def _allows(self, window: Window, pieces: Sequence[Optional[str]]) -> bool:
        probe = build_probe(window, pieces)
        root = window.probe_parser.parse(probe.text).root_node
        if not root.has_error:
            return True
        for error in minimal_errors(root, probe.canvas_start, probe.canvas_end):
            if self._sealed(window, probe, error):
                return False
        return True

    def _sealed(self, window: Window, probe: Probe, error: SyntaxErrorSpan) -> bool:
        """Whether no filling of the holes can repair `error` (see the module docstring)."""
        text = probe.text
        lo, hi = token_left(text, error.start), token_right(text, error.end)
        if hi < probe.canvas_start or lo > probe.canvas_end:
            return False  # wholly in the context: not the canvas's doing
        if any(start <= hi and end >= lo for start, end in probe.holes):
            return False
        canvas_len = probe.canvas_end - probe.canvas_start
        if lo < probe.canvas_start and window.baseline_near(lo, window.cursor):
            return False  # the prefix already had an error here
        if hi > probe.canvas_end and window.baseline_near(window.cursor, hi - canvas_len):
            return False  # the suffix already had an error here
        return True

    # -- the final check --------------------------------------------------------------

    def accept_final(self, prefix: str, middle: str, suffix: str) -> bool:
        started = time.perf_counter()
        try:
            ok = self.new_errors(prefix, middle, suffix) <= 0
        finally:
            self.stats.final_calls += 1
            self.stats.final_seconds += time.perf_counter() - started
        if not ok:
            self.stats.final_rejections += 1
        return ok

    def new_errors(self, prefix: str, middle: str, suffix: str) -> int:
        """Errors the splice adds in the region it touches, less those it removes.

        Errors identical before and after (same place in the prefix, or same distance from
        the end in the suffix) are untouched and ignored. The baseline's errors at the
        cursor are the empty hole itself, so they are not counted as errors the file had.
        """
        window = self._windows.get(prefix, suffix)
        return splice_error_balance(window, middle)

    # -- polishing ----------------------------------------------------------------------

    def polish(self, prefix: str, middle: str, suffix: str) -> str:
        started = time.perf_counter()
        try:
            window = self._windows.get(prefix, suffix)
            polished = polish_mod.polish(window, middle)
        finally:
            self.stats.polish_calls += 1
            self.stats.polish_seconds += time.perf_counter() - started
        if polished != middle:
            self.stats.polish_changes += 1
        return polished
