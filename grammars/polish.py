"""Syntax-aware finishing of a middle: indentation, no doubled closers, a clean end.

Each step changes the middle only when a rule says the change is safe or when the parse
shows it removes errors, so a middle that is already right comes back unchanged.
"""
from __future__ import annotations

import tree_sitter as ts

from .lexical import bracket_imbalance, open_brackets
from .registry import LanguageSpec
from .splice import added_errors, splice_error_balance
from .window import Window

MAX_TRIM_TRIES = 16


def polish(window: Window, middle: str) -> str:
    if not middle:
        return middle
    middle = drop_loop(middle)
    middle = fix_indentation(window, middle)
    middle = drop_repeated_suffix(window, middle)
    middle = dedupe_closers(window, middle)
    if added_errors(window, middle) > 0:
        middle = close_header(window, middle)
    if added_errors(window, middle) > 0:
        middle = trim_to_unit(window, middle)
    return middle


# -- indentation ------------------------------------------------------------------------


def _indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _width(indent: str, tab: int) -> int:
    return sum(tab if ch == "\t" else 1 for ch in indent)


def file_indent_style(text: str, default_unit: str) -> str:
    """The indent unit the file uses: a tab, or the commonest step between space indents."""
    tabs = spaces = 0
    steps: dict[int, int] = {}
    previous = 0
    for line in text.split("\n"):
        if not line.strip():
            continue
        indent = _indent_of(line)
        if indent.startswith("\t"):
            tabs += 1
        elif indent:
            spaces += 1
        width = len(indent.replace("\t", "    "))
        if width > previous:
            steps[width - previous] = steps.get(width - previous, 0) + 1
        previous = width
    if tabs > spaces:
        return "\t"
    if spaces == 0:
        return default_unit
    step = max(steps, key=lambda s: (steps[s], -s)) if steps else len(default_unit)
    return " " * step


def fix_indentation(window: Window, middle: str) -> str:
    """Make the middle's indentation agree with the file and the enclosing block.

    Three fixes, each only where the middle is plainly off:
    - tabs where the file indents with spaces (or the reverse) are converted;
    - a first line indented again although the cursor already sits at the block's
      indentation loses the extra indent (and so does the rest, if all of it has it);
    - a block body that starts at or left of its opening line is moved one unit right.
    """
    spec = window.spec
    unit = file_indent_style(window.prefix_text, spec.indent_unit)
    tab = len(unit) if unit != "\t" else 4
    lines = middle.split("\n")
    lines = [lines[0]] + [_convert_indent(line, unit, tab) for line in lines[1:]]

    before_cursor = window.prefix_text.rsplit("\n", 1)
    cursor_line = before_cursor[-1]
    earlier = before_cursor[0] if len(before_cursor) > 1 else ""
    opener_line = next((l for l in reversed(earlier.split("\n")) if l.strip()), "")
    opener_indent = _width(_indent_of(opener_line), tab)
    opens_block = any(opener_line.rstrip().endswith(o) for o in spec.block_openers)
    expected = opener_indent + (_width(unit, tab) if opens_block else 0)
    lines = _drop_doubled_indent(lines, cursor_line, expected, tab)
    lines = _indent_block_body(lines, cursor_line, spec, unit, tab)
    return "\n".join(lines)


def _convert_indent(line: str, unit: str, tab: int) -> str:
    """The line with its indentation in the file's style: tabs for a tab unit, else spaces."""
    indent = _indent_of(line)
    if unit == "\t" and " " in indent and not indent.startswith("\t"):
        return "\t" * (len(indent) // tab) + line[len(indent) :]
    if unit != "\t" and "\t" in indent:
        return indent.replace("\t", unit) + line[len(indent) :]
    return line


def _drop_doubled_indent(lines: list[str], cursor_line: str, expected: int, tab: int) -> list[str]:
    """Doubled indentation: the cursor is on a blank line already indented to `expected`."""
    if not cursor_line.strip() and cursor_line and lines[0].strip():
        extra = _indent_of(lines[0])
        if extra and _width(cursor_line, tab) >= expected:
            rest = [l for l in lines[1:] if l.strip()]
            lines[0] = lines[0][len(extra) :]
            if rest and all(_indent_of(l).startswith(cursor_line + extra) for l in rest):
                lines = [lines[0]] + [
                    l[len(extra) :] if l.startswith(cursor_line + extra) else l for l in lines[1:]
                ]
    return lines


def _indent_block_body(lines: list[str], cursor_line: str, spec: LanguageSpec, unit: str, tab: int) -> list[str]:
    """Under-indented body: the cursor ends a line that opens a block, the body comes next."""
    current = cursor_line.rstrip()
    if current.strip() and any(current.endswith(o) for o in spec.block_openers) and len(lines) > 1:
        body = next((l for l in lines[1:] if l.strip()), None)
        line_indent = _width(_indent_of(cursor_line), tab)
        closers = tuple(spec.closers)
        if body is not None and not body.strip().startswith(closers):
            shift = line_indent + _width(unit, tab) - _width(_indent_of(body), tab)
            if _width(_indent_of(body), tab) <= line_indent and shift > 0:
                pad = unit if unit == "\t" else " " * shift
                shifted = [lines[0]]
                for index, line in enumerate(lines[1:], start=1):
                    if line.strip().startswith(closers):  # the block's own closer stays put
                        shifted.extend(lines[index:])
                        break
                    shifted.append(pad + line if line.strip() else line)
                lines = shifted
    return lines


# -- the suffix's text, not repeated ----------------------------------------------------------


LOOP_PERIODS = 4  # longest block of lines (in lines) whose immediate repetition counts as a loop


def drop_loop(middle: str) -> str:
    """Cut the middle where it starts repeating the block of 1-4 lines just before.

    Small models fall into copy loops (`"%d.%m.%Y",` three times, a class header again and
    again until max_tokens); the first pass through is what the model meant. A block must
    hold a few non-blank characters, so a run of `}` or blank lines is never a loop."""
    lines = middle.split("\n")
    for i in range(1, len(lines)):
        for k in range(1, min(LOOP_PERIODS, i) + 1):
            block = lines[i - k : i]
            if lines[i : i + k] == block and sum(len(line.strip()) for line in block) >= 4:
                return "\n".join(lines[:i]) + "\n"
    return middle


def drop_repeated_suffix(window: Window, middle: str) -> str:
    """Cut whole lines at the end of the middle that the suffix starts with anyway."""
    if "\n" not in middle:
        return middle
    suffix_lines = window.suffix_text.lstrip("\n").split("\n")
    for count in range(min(len(suffix_lines), 8), 0, -1):
        chunk = "\n".join(suffix_lines[:count]).rstrip()
        if sum(1 for ch in chunk if not ch.isspace()) < 3:
            continue
        body = middle.rstrip()
        if body.endswith(chunk):
            start = len(body) - len(chunk)
            if start == 0 or body[start - 1] == "\n":
                kept = body[:start]
                return kept.rstrip() if window.suffix_text.startswith("\n") else kept
    return middle


# -- closers and quotes the suffix already has ------------------------------------------------


def _closer_chars(window: Window) -> set[str]:
    spec = window.spec
    chars = {close for _, close in spec.brackets} | {close for _, close in spec.quotes}
    return {c for c in chars if len(c) == 1}


def dedupe_closers(window: Window, middle: str) -> str:
    """Drop closing brackets/quotes at the middle's end that the suffix starts with.

    The middle keeps its closers unless dropping k of them gives fewer syntax errors, or
    as many errors and better-balanced brackets and quotes.
    """
    closers = _closer_chars(window)
    body = middle.rstrip(" \t")
    head = window.suffix_text.lstrip(" \t")
    overlap = 0
    while (
        overlap < len(body)
        and overlap < len(head)
        and body[len(body) - overlap - 1] in closers
    ):
        overlap += 1
    best_k = 0
    while best_k < overlap and not head.startswith(body[len(body) - overlap :]):
        overlap -= 1
    if overlap == 0:
        return middle
    scored = []
    for k in range(overlap + 1):
        candidate = body[: len(body) - k] if k else middle
        errors = splice_error_balance(window, candidate)
        imbalance = bracket_imbalance(window.spec, window.prefix_text, candidate, window.suffix_text)
        scored.append((errors, imbalance, k, candidate))
    return min(scored, key=lambda item: (item[0], item[1], item[2]))[3]


# -- a clean end --------------------------------------------------------------------------------


def close_header(window: Window, middle: str) -> str:
    """A block's header line that the middle ends with its block opener but with brackets
    still open gets them closed right before the opener: `def lookup(self, uri: str,` +
    ` suffix: str:` -> ` suffix: str):`, `if (a > b {` -> `if (a > b) {`. Only on the
    cursor's line (the text before the cursor on it, then the middle's first line, which
    must end with the opener; in the brace languages the middle must be that line alone),
    and kept only if the splice then adds no error: the model wrote the header and forgot
    its closing bracket."""
    opener = ":" if window.spec.indent_sensitive else "{"
    first, newline, rest = middle.partition("\n")
    head = first.rstrip()
    if not head.endswith(opener) or (newline and rest.strip() and not window.spec.indent_sensitive):
        return middle
    line_before = window.prefix_text[window.prefix_text.rfind("\n") + 1 :]
    still_open = open_brackets(window.spec, line_before + head[: -len(opener)])
    if not still_open:
        return middle
    closers = "".join(window.spec.openers[ch] for ch, _ in reversed(still_open))
    body = head[: -len(opener)]
    kept = body.rstrip()  # the closers go after the header's last character, its spacing kept
    candidate = kept + closers + body[len(kept) :] + opener + first[len(head) :] + newline + rest
    return candidate if added_errors(window, candidate) == 0 else middle


def trim_to_unit(window: Window, middle: str) -> str:
    """Cut the middle back to the end of the last complete syntactic unit (units.scm) that
    leaves the splice with no added errors; the middle unchanged if there is none."""
    query = window.spec.query("units")
    if query is None:
        return middle
    middle_b = middle.encode("utf-8")
    text = window.prefix + middle_b + window.suffix
    tree = window.final_parser.parse(text)
    cursor = window.cursor
    end = cursor + len(middle_b)
    qc = ts.QueryCursor(query)
    qc.set_byte_range(max(0, cursor - 1), end)
    # Statement-level cuts first: cutting `return total * (a +` back to `return total`
    # would parse, but change what the code means.
    ends: dict[str, set[int]] = {"unit": set(), "inline": set()}
    for name, nodes in qc.captures(tree.root_node).items():
        for node in nodes:
            if name in ends and cursor < node.end_byte < end and not node.has_error:
                ends[name].add(node.end_byte)
    cuts = sorted(ends["unit"], reverse=True) + sorted(ends["inline"] - ends["unit"], reverse=True)
    for cut in cuts[:MAX_TRIM_TRIES]:
        candidate = middle_b[: cut - cursor].decode("utf-8", errors="ignore")
        if added_errors(window, candidate) == 0:
            return candidate
    return middle
