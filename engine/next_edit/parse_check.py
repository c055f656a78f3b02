"""The document's syntax for next-edit: edits never break the code, and replays stay
out of strings and comments.

A suggestion that turns code which parses into code which does not is worse than no
suggestion (on real release diffs the replay rules once deleted part of
`# type: ignore[operator]` and left `prep],[operator]`). So, as a finished middle is
judged by the syntax constraint (grammars/), each proposed edit is judged by the
language's tree-sitter grammar (`Syntax.keep`):

* the region judged is the whole document when it parses clean, else the window around
  the cursor when no syntax error touches it (a document broken elsewhere, mid-edit, is
  the common case while typing), else nothing: where the window is already broken,
  nothing tells an edit's error from the one there;
* edits are taken most confident first, each kept only when the document with it and
  the edits kept before it still parses clean in the judged region: two edits that each
  parse can break the code together.

The same tree answers whether an offset lies in a string or a comment (`Syntax.in_text`):
a docstring's inner lines carry no quote, so a look at the line alone cannot tell.

Languages without a grammar (or no language named and none detected) are not judged;
the tree is parsed once, on first use (a request without proposals parses nothing).
"""
from __future__ import annotations

from typing import Optional, Protocol, Sequence, TypeVar

import tree_sitter as ts

import grammars
from grammars.syntax import IncrementalParser, minimal_errors

# Node types that hold text rather than code, across the registered grammars ...
TEXT_NODES = frozenset({"string", "string_content", "string_fragment", "template_string", "comment", "line_comment",
                        "block_comment", "regex", "regex_pattern", "heredoc_body", "raw_string_literal", "string_literal",
                        "interpreted_string_literal", "char_literal", "character_literal", "text_block"})
COMMENT_NODES = frozenset({"comment", "line_comment", "block_comment"})
# ... and the code inside them (`f"{x}"`, `${x}`): a name there is a use like any other.
CODE_IN_TEXT = frozenset({"interpolation", "template_substitution", "string_interpolation", "interpolated_expression"})


class Edit(Protocol):
    start: int  # offsets (code points) in the document
    end: int
    text: str
    confidence: float


E = TypeVar("E", bound=Edit)


def _utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _applied(document: str, edits: Sequence[Edit]) -> str:
    out = document
    for edit in sorted(edits, key=lambda e: e.start, reverse=True):
        out = out[: edit.start] + edit.text + out[edit.end :]
    return out


def language_of(language: Optional[str], document: str, window: tuple[int, int]) -> Optional[str]:
    """The grammar's name for `language` (a registry name or LSP id; None: detected from
    the window's text), or None where no grammar applies."""
    name = language
    if not name:
        from grammars.detect import detect  # tree-sitter parses: only for requests that name no language

        name = detect(document[window[0] : window[1]]).language
    if not name:
        return None
    try:
        return grammars.get(name).name
    except grammars.UnknownLanguageError:
        return None


class Syntax:
    """One request's document as its grammar sees it (parsed on first use)."""

    def __init__(self, language: Optional[str], document: str, window: tuple[int, int]) -> None:
        self.document = document
        self.window = window
        self._language = language
        self._resolved = False
        self._parser: Optional[IncrementalParser] = None
        self._root: Optional[ts.Node] = None
        self._scope: Optional[str] = None
        self._ascii = document.isascii()  # offsets are byte offsets: no encoding per lookup

    def _tree(self) -> Optional[ts.Node]:
        if not self._resolved:
            self._resolved = True
            name = language_of(self._language, self.document, self.window)
            if name is not None:
                self._parser = IncrementalParser(grammars.get(name).ts_language())
                self._root = self._parser.parse(self.document.encode("utf-8", "surrogatepass")).root_node
        return self._root

    @property
    def scope(self) -> str:
        """What must keep parsing clean: "document", "window" or "none" (the module
        docstring)."""
        if self._scope is None:
            root = self._tree()
            if root is None:
                self._scope = "none"
            elif not root.has_error:
                self._scope = "document"
            else:
                lo, hi = (_utf8_len(self.document[:w]) for w in self.window)
                self._scope = "none" if minimal_errors(root, lo, hi) else "window"
        return self._scope

    def text_kind(self, offset: int) -> Optional[str]:
        """What the character at `offset` is part of: "code" (code inside an
        interpolation included), "doc" (a comment, or a string standing alone as a
        statement: a docstring), "string"; None where no grammar applies."""
        root = self._tree()
        if root is None:
            return None
        at = offset if self._ascii else _utf8_len(self.document[:offset])
        node: Optional[ts.Node] = root.descendant_for_byte_range(at, at)
        while node is not None:
            if node.type in CODE_IN_TEXT:
                return "code"
            if node.type in COMMENT_NODES:
                return "doc"
            if node.type in TEXT_NODES and node.start_byte < at:  # a string's opening quote is still code's edge
                while node.parent is not None and node.parent.type in TEXT_NODES:
                    node = node.parent
                return "doc" if node.parent is not None and node.parent.type == "expression_statement" and node.parent.named_child_count == 1 else "string"
            node = node.parent
        return "code"

    def in_text(self, offset: int) -> Optional[bool]:
        """Whether the character at `offset` lies in a string or a comment; None where no
        grammar applies."""
        kind = self.text_kind(offset)
        return None if kind is None else kind != "code"

    def parses(self, edits: Sequence[Edit]) -> bool:
        """Whether the document with `edits` applied still parses clean where it did."""
        if self.scope == "none" or not edits:
            return True
        assert self._parser is not None
        text = _applied(self.document, edits)
        root = self._parser.parse(text.encode("utf-8", "surrogatepass")).root_node
        if self.scope == "document":
            return not root.has_error
        lo, hi = self.window
        # The window's end moves by what the edits inside it add or remove.
        shift = sum(len(e.text) - (e.end - e.start) for e in edits if lo <= e.start and e.end <= hi)
        return not minimal_errors(root, _utf8_len(text[:lo]), _utf8_len(text[: hi + shift]))

    def keep(self, edits: Sequence[E]) -> tuple[list[E], int]:
        """(the edits kept, how many were dropped): most confident first, each kept when
        the code with it and the ones kept before still parses (the module docstring)."""
        if not edits or self.scope == "none":
            return list(edits), 0
        kept: list[E] = []
        for edit in sorted(edits, key=lambda e: (-e.confidence, e.start)):
            if self.parses(kept + [edit]):
                kept.append(edit)
        return sorted(kept, key=lambda e: e.start), len(edits) - len(kept)


def breaks_parse(language: Optional[str], document: str, window: tuple[int, int], edits: Sequence[Edit]) -> bool:
    """Whether `edits` together turn a parseable document (or window) unparseable: the
    benchmark's measure (lab/evaluation/real_edits.py) and the engine's rule share it."""
    return not Syntax(language, document, window).parses(edits)
