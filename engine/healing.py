"""Token healing: the cursor backed off to a token boundary, once per request, and the
one way back to the user's text (`Healing`).

The model writes after the healed prefix; the user gets the middle from the real cursor.
`Healing.at_cursor` decides what is cut (spaces and tabs, or a word's last tokens), the
sampler reads `first_text` (the tokens a healed word's first position may hold) and the
checks judge the user's text through `Healing.judging`; `Healing.user_middle` /
`user_pieces` turn the model's text back into the user's.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from engine.types import SyntaxConstraint

# The tokenizer (byte-level BPE) glues a space to the word after it (" return", "  " +
# " x") and writes an indentation as one run of spaces followed by a spaced word
# ("       " + " return" for 8 spaces). A cursor right after whitespace therefore cuts a
# token in two: the prefix then ends in a whitespace token the model almost never saw
# last in training, and it must write a word with no leading space, which it rarely
# does. Measured (docs/ladder.md): on HumanEval lines with the cursor after the
# indentation (where an editor puts it after Enter) the embedded model answered empty
# 79/300 (constrained) and 143/300 (unconstrained) times; with the cursor at the line
# start, 27 and 4. Healing backs the cursor off to the token boundary before the
# whitespace, lets the model write the whitespace itself, and hands back the middle
# relative to the real cursor.
HEALED_WHITESPACE = " \t"  # horizontal whitespace only: a newline is a token boundary


def heal_cursor(prefix: str) -> tuple[str, str]:
    """(the prefix the model sees, the text removed from its end). The removed text is
    the run of spaces and tabs at the end of the prefix, after a line start or mid-line;
    "" when the prefix ends otherwise. A cursor inside a word (`retu|`) is healed by
    `heal_word` instead."""
    kept = prefix.rstrip(HEALED_WHITESPACE)
    return kept, prefix[len(kept):]


# A cursor inside a word (`while len(entri|`) cuts a token in two as well: the prefix
# ends in `ent` + `ri`, pieces the model saw before `es` almost never, so it writes
# something else (`entri` + `e):`), and an editor asks at every keystroke, mostly inside
# words (the typing replay of docs/lsp.md: 245 of 380 keystrokes, 137 of them answered
# empty). Healing backs off the word's last tokens and makes the middle's first token
# write them again: only tokens whose text starts with the removed text may stand at the
# middle's first position (engine/sampler.py, `first_allowed`), so `entri` comes back as
# `entries`.
HEALED_WORD_TOKENS = 3  # at most this many tokens backed off


def heal_word(prefix: str, tok) -> tuple[str, str]:
    """(the prefix the model sees, the text removed from its end) for a prefix that ends
    inside a word (a letter, digit or `_` last): its last tokens, up to HEALED_WORD_TOKENS
    on the cursor's line, as long as some token of the vocabulary starts with their
    text (`Tokenizer.starting_with`), so that the middle can write them again. (prefix,
    "") otherwise."""
    if not prefix or not (prefix[-1].isalnum() or prefix[-1] == "_"):
        return prefix, ""
    line_start = prefix.rfind("\n") + 1
    line = prefix[max(line_start, len(prefix) - 200) :]  # the tokens at the end need only the line's tail
    cut_short = len(line) < len(prefix) - line_start  # then its first token may be a piece of a longer one
    ids = tok.encode(line)
    removed = ""
    for k in range(1, min(HEALED_WORD_TOKENS, len(ids)) + 1):
        text = tok.decode(ids[-k:])
        if not text or not line.endswith(text) or (cut_short and len(text) >= len(line)) or not tok.starting_with(text):
            break
        removed = text
    return prefix[: len(prefix) - len(removed)], removed


def unheal_middle(middle: str, removed: str, exact: bool = False) -> str:
    """The middle relative to the real cursor, for a middle written after the healed
    prefix. Whitespace equivalence: the spaces and tabs the user typed before the cursor
    stand for whatever run of spaces and tabs the model writes first, so that run is
    dropped whole (the model writing 4 spaces where the user has 8 is not doubled, nor
    re-indented: the user chose the indentation by where the cursor is). A middle that
    starts with a newline or anything else is returned as written. A healed word
    (`exact`): the middle starts with the removed text, which is dropped; one that does
    not (none could, by construction) is no answer."""
    if not removed:
        return middle
    if exact:
        return middle[len(removed):] if middle.startswith(removed) else ""
    return middle.lstrip(HEALED_WHITESPACE)


def completed_indentation(middle: str, removed: str) -> "str | None":
    """The middle from the user's cursor when the spaces and tabs the user typed are the
    start of a longer run the model wrote (the user is still typing the indentation): the
    rest of the model's run and its text. None otherwise (the user's indentation stands,
    `unheal_middle`). Asked only for a middle refused at the user's indentation."""
    if not removed or removed.strip(HEALED_WHITESPACE):
        return None
    run = middle[: len(middle) - len(middle.lstrip(HEALED_WHITESPACE))]
    if len(run) <= len(removed) or not run.startswith(removed):
        return None
    return middle[len(removed):]


def unheal_pieces(pieces: list, removed: str, exact: bool = False) -> list:
    """A streamed canvas (token texts, None while masked) as seen from the real cursor:
    the leading spaces and tabs of its first committed pieces are dropped, up to the
    first masked position or the first piece with something else in it; for a healed
    word (`exact`), the removed text's characters from the first pieces."""
    if not removed:
        return pieces
    out = list(pieces)
    left = len(removed)
    for i, piece in enumerate(out):
        if piece is None:
            break
        if exact:
            out[i], left = piece[left:], max(0, left - len(piece))
            if not left:
                break
            continue
        out[i] = piece.lstrip(HEALED_WHITESPACE)
        if out[i]:
            break
    return out


@dataclass(frozen=True)
class Healing:
    """What was cut from the end of the user's prefix (nothing, spaces and tabs, or a
    word's last tokens), decided once per request (`at_cursor`); every later step asks it
    how to turn the model's text into the user's."""

    removed: str = ""  # the text cut from the end of the user's prefix
    word: bool = False  # a word's last tokens (the middle's first token must write them again), else spaces and tabs

    @classmethod
    def at_cursor(cls, prefix: str, tok, *, whitespace: bool, word: bool) -> tuple[str, "Healing"]:
        """(the prefix the model sees, the healing) for a request: spaces and tabs before
        the cursor (`heal_cursor`), else, inside a word, its last tokens (`heal_word`)."""
        if whitespace:
            kept, removed = heal_cursor(prefix)
            if removed:
                return kept, cls(removed)
        if word:
            kept, removed = heal_word(prefix, tok)
            if removed:
                return kept, cls(removed, word=True)
        return prefix, cls()

    def __bool__(self) -> bool:
        return bool(self.removed)

    @property
    def first_text(self) -> str:
        """Text the middle's first token must start with ("" when any token may stand)."""
        return self.removed if self.word else ""

    def user_prefix(self, prefix: str) -> str:
        """The user's prefix, from the prefix the model saw."""
        return prefix + self.removed

    def user_middle(self, middle: str) -> str:
        """The model's middle from the user's cursor (`unheal_middle`)."""
        return unheal_middle(middle, self.removed, exact=self.word)

    def user_pieces(self, pieces: list) -> list:
        """A streamed canvas from the user's cursor (`unheal_pieces`)."""
        return unheal_pieces(pieces, self.removed, exact=self.word)

    def indentation_completed(self, middle: str) -> Optional[str]:
        """The rest of the model's indentation run when the user is still typing it
        (`completed_indentation`); None for a healed word or no such run."""
        return None if self.word else completed_indentation(middle, self.removed)

    def judging(self, constraint: SyntaxConstraint) -> SyntaxConstraint:
        """`constraint` judging the user's text for the sampler's checks (HealedConstraint);
        the constraint itself when nothing was healed."""
        return HealedConstraint(constraint, self) if self else constraint


class HealedConstraint:
    """A syntax constraint that judges a healed request's text as the user will get it.

    The model writes after the healed prefix (its trailing spaces and tabs cut), so its
    middle starts with its own idea of the indentation; the answer is unhealed to the
    user's cursor (`unheal_middle`: the user's indentation wins). The checks must judge
    that same text, the user's prefix plus the unhealed middle: judged as written, a
    middle indented 20 spaces where the user's cursor sits at 24 was refused (a dedent
    the suffix does not match), and the answer came back empty although the text shown
    would have been valid (docs/ladder.md, "Empty answers under the constraint")."""

    def __init__(self, inner: SyntaxConstraint, healing: Healing) -> None:
        self.inner, self.healing = inner, healing

    def allows(self, prefix: str, pieces: Sequence[Optional[str]], suffix: str) -> bool:
        return self.inner.allows(self.healing.user_prefix(prefix), self.healing.user_pieces(list(pieces)), suffix)

    def accept_final(self, prefix: str, middle: str, suffix: str) -> bool:
        return self.inner.accept_final(self.healing.user_prefix(prefix), self.healing.user_middle(middle), suffix)

    def polish(self, prefix: str, middle: str, suffix: str) -> str:
        return self.inner.polish(self.healing.user_prefix(prefix), self.healing.user_middle(middle), suffix)
