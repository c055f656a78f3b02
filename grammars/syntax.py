"""Tree-sitter helpers: incremental reparsing, error listing, token-sized steps over bytes.

All positions here are byte offsets into UTF-8 text, as tree-sitter reports them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

import tree_sitter as ts


@dataclass(frozen=True)
class SyntaxErrorSpan:
    """One minimal syntax error: an ERROR node with no ERROR inside it, or a MISSING token."""

    start: int
    end: int
    missing: bool  # True for a zero-width token the parser had to invent


def _point(text: bytes, offset: int) -> tuple[int, int]:
    row = text.count(b"\n", 0, offset)
    line_start = text.rfind(b"\n", 0, offset) + 1
    return row, offset - line_start


def common_prefix_len(a: bytes, b: bytes) -> int:
    """Length of the longest common prefix, by binary search over C-level slice compares."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def common_suffix_len(a: bytes, b: bytes, limit: int) -> int:
    """Length of the longest common suffix, at most `limit` bytes."""
    lo, hi = 0, min(len(a), len(b), limit)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[len(a) - mid :] == b[len(b) - mid :]:
            lo = mid
        else:
            hi = mid - 1
    return lo


class IncrementalParser:
    """A parser that remembers its last text and tree and reparses only what changed.

    Successive probes of one request differ only inside the canvas, so tree-sitter can
    reuse every subtree of the prefix and suffix windows.
    """

    def __init__(self, language: ts.Language) -> None:
        self._parser = ts.Parser(language)
        self._text: Optional[bytes] = None
        self._tree: Optional[ts.Tree] = None

    def parse(self, text: bytes) -> ts.Tree:
        old_text, old_tree = self._text, self._tree
        if old_tree is None or old_text is None:
            tree = self._parser.parse(text)
        elif old_text == text:
            return old_tree
        else:
            start = common_prefix_len(old_text, text)
            tail = common_suffix_len(old_text, text, min(len(old_text), len(text)) - start)
            old_end, new_end = len(old_text) - tail, len(text) - tail
            old_tree.edit(
                start_byte=start,
                old_end_byte=old_end,
                new_end_byte=new_end,
                start_point=_point(old_text, start),
                old_end_point=_point(old_text, old_end),
                new_end_point=_point(text, new_end),
            )
            tree = self._parser.parse(text, old_tree)
        self._text, self._tree = text, tree
        return tree


def minimal_errors(root: ts.Node, lo: int = 0, hi: Optional[int] = None) -> list[SyntaxErrorSpan]:
    """The innermost ERROR nodes and all MISSING tokens that intersect [lo, hi].

    Only subtrees flagged `has_error` are visited, so a clean tree costs one check.
    """
    if hi is None:
        hi = root.end_byte
    found: list[SyntaxErrorSpan] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.end_byte < lo or node.start_byte > hi:
            continue
        if node.is_missing:
            found.append(SyntaxErrorSpan(node.start_byte, node.end_byte, True))
            continue
        if not node.has_error:
            continue
        children = node.children
        if node.is_error and not any(child.has_error for child in children):
            found.append(SyntaxErrorSpan(node.start_byte, node.end_byte, False))
            continue
        stack.extend(children)
    found.sort(key=lambda span: (span.start, span.end))
    return found


_WORD_LEFT = re.compile(rb"[\w$]+$")
_WORD_RIGHT = re.compile(rb"[\w$]+")
_SPACE = b" \t\r\n\f"


def token_left(text: bytes, offset: int) -> int:
    """The start of the token just before `offset` (whitespace skipped): a word or one symbol."""
    i = offset
    while i > 0 and text[i - 1] in _SPACE:
        i -= 1
    if i == 0:
        return 0
    match = _WORD_LEFT.search(text, max(0, i - 64), i)
    return match.start() if match else i - 1


def token_right(text: bytes, offset: int) -> int:
    """The end of the token just after `offset` (whitespace skipped): a word or one symbol."""
    i, n = offset, len(text)
    while i < n and text[i] in _SPACE:
        i += 1
    if i >= n:
        return n
    match = _WORD_RIGHT.match(text, i)
    return match.end() if match else i + 1
