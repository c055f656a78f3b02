"""The context window: which text around the cursor the model sees. Decided here, once.

Front ends hand the engine everything they have — the whole text before and after the
cursor, and context from other files — and `context_window` cuts it to what the model
was trained on (`SamplerSettings.context_tokens` / `suffix_tokens`, set from the model
directory's training recipe by `engine.load`). Cross-file context gets a budget *inside*
the prefix window (`cross_file_share` of it, at most): it goes first, as the front end
wrote it (comment lines), and the code right before the cursor fills the rest, so
neither crowds the other out. Before this, the language server kept 16,000 characters of
prefix after its cross-file block and the engine kept the last ~870 of them: cross-file
context reached the model only when the local prefix was short.

Windows are cut in characters first (a tokenizer call on a megabyte costs time) with a
measured chars-per-token budget, at line boundaries, then in tokens by the engine.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

CHARS_PER_TOKEN_BUDGET = 3.4  # measured on the corpus's validation split (chars per token)
CUT_GRID = 256  # the prefix window's left edge moves in steps of this many chars (cache reuse)


@dataclass(frozen=True)
class ContextWindow:
    """The texts the model sees: `cross_file` then `prefix` before the canvas, `suffix` after."""

    prefix: str  # the tail of the text before the cursor
    suffix: str  # the head of the text after the cursor
    cross_file: str = ""  # the part of the cross-file context that fits its budget


def prefix_tail(prefix: str, max_tokens: int) -> str:
    """The tail of the prefix worth `max_tokens` tokens, cut at a line start.

    The cut moves in steps of CUT_GRID chars, so while the user types the window's left
    edge stays put and the cached keys/values of the prefix stay valid."""
    budget = int(max_tokens * CHARS_PER_TOKEN_BUDGET)
    if len(prefix) <= budget:
        return prefix
    target = len(prefix) - budget
    target = (target // CUT_GRID + 1) * CUT_GRID
    line_start = prefix.find("\n", target)
    return prefix[line_start + 1 :] if line_start != -1 else prefix[target:]


def suffix_head(suffix: str, max_tokens: int) -> str:
    """The head of the suffix worth `max_tokens` tokens, cut after a line end."""
    budget = int(max_tokens * CHARS_PER_TOKEN_BUDGET)
    if len(suffix) <= budget:
        return suffix
    line_end = suffix.rfind("\n", 0, budget)
    return suffix[: line_end + 1] if line_end > 0 else suffix[:budget]


def cross_file_head(context: str, max_tokens: int) -> str:
    """The first whole lines of cross-file context worth at most `max_tokens` tokens
    (the front end puts the most relevant first)."""
    budget = int(max_tokens * CHARS_PER_TOKEN_BUDGET)
    if len(context) <= budget:
        return context
    line_end = context.rfind("\n", 0, budget)
    return context[: line_end + 1] if line_end != -1 else ""


def context_window(prefix: str, suffix: str, *, prefix_tokens: int, suffix_tokens: int, cross_file: str = "", cross_file_share: float = 0.0) -> ContextWindow:
    """The window for one request (module docstring). Without cross-file context the
    prefix window is the whole `prefix_tokens` budget."""
    cross = cross_file_head(cross_file, int(prefix_tokens * cross_file_share)) if cross_file else ""
    local_tokens = prefix_tokens - cross_file_tokens(cross)
    return ContextWindow(prefix_tail(prefix, local_tokens), suffix_head(suffix, suffix_tokens), cross)


def cross_file_tokens(cross: str) -> int:
    """The part of the prefix budget (in tokens) that `cross` uses up."""
    return math.ceil(len(cross) / CHARS_PER_TOKEN_BUDGET)


# ---------------------------------------------------------------- token healing
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


class HealedConstraint:
    """A syntax constraint that judges a healed request's text as the user will get it.

    The model writes after the healed prefix (its trailing spaces and tabs cut), so its
    middle starts with its own idea of the indentation; the answer is unhealed to the
    user's cursor (`unheal_middle`: the user's indentation wins). The checks must judge
    that same text, the user's prefix plus the unhealed middle: judged as written, a
    middle indented 20 spaces where the user's cursor sits at 24 was refused (a dedent
    the suffix does not match), and the answer came back empty although the text shown
    would have been valid (docs/ladder.md, "Empty answers under the constraint")."""

    def __init__(self, inner, healed: str, exact: bool = False) -> None:
        self.inner, self.healed, self.exact = inner, healed, exact  # exact: a healed word (unheal_middle)

    def __getattr__(self, name: str):  # stats, spec: the inner constraint's
        return getattr(self.inner, name)

    def allows(self, prefix: str, pieces, suffix: str) -> bool:
        return self.inner.allows(prefix + self.healed, unheal_pieces(list(pieces), self.healed, self.exact), suffix)

    def accept_final(self, prefix: str, middle: str, suffix: str) -> bool:
        return self.inner.accept_final(prefix + self.healed, unheal_middle(middle, self.healed, self.exact), suffix)

    def accept_complete(self, prefix: str, middle: str, suffix: str) -> bool:
        return self.inner.accept_complete(prefix + self.healed, unheal_middle(middle, self.healed, self.exact), suffix)

    def polish(self, prefix: str, middle: str, suffix: str) -> str:
        """The polished middle, unhealed (unheal_middle of it is itself)."""
        return self.inner.polish(prefix + self.healed, unheal_middle(middle, self.healed), suffix)
