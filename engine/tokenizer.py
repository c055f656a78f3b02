"""Byte-level BPE tokenizer (Hugging Face `tokenizers`) plus the special ids the sampler needs."""
from __future__ import annotations

import bisect
import re
from pathlib import Path
from typing import Optional, Sequence

from tokenizers import Tokenizer as HFTokenizer

# Special tokens of the embedded model, in id order (ids 0..len-1). The extras are
# reserved so later recipes (language tags, edit history markers) need no vocabulary change.
SPECIAL_TOKENS = ["<pad>", "<mask>", "<eom>", "<bos>", "<sep>", "<file>", "<edit>", "<old>", "<new>"] + [
    f"<extra_{i}>" for i in range(7)
]


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def replace_lone_surrogates(text: str) -> str:
    """`text` with every lone surrogate (U+D800..U+DFFF, which JSON's "\\udc80" escapes
    and Python's surrogateescape produce) replaced by U+FFFD. Such text cannot be encoded
    as UTF-8, so the tokenizer and tree-sitter refuse it; one character stays one
    character, so offsets into the text keep their meaning."""
    if text.isascii():
        return text
    return _LONE_SURROGATE.sub("\ufffd", text)


class Tokenizer:
    """What the sampler needs from a tokenizer: text <-> ids and the special ids.

    `eom_id` marks the end of the middle: canvas positions after the middle hold it.
    `bos_id` (None if the model has none) starts the prefix stream.
    """

    def __init__(self, hf: HFTokenizer, mask_id: int, eom_id: int, pad_id: int, bos_id: Optional[int]):
        self.hf = hf
        # Text is text: "<mask>" typed in a user's file must never become the mask token.
        hf.encode_special_tokens = True
        self.mask_id = mask_id
        self.eom_id = eom_id
        self.pad_id = pad_id
        self.bos_id = bos_id
        self.special_ids = frozenset(i for i in (mask_id, eom_id, pad_id, bos_id) if i is not None)
        self._piece_cache: dict[int, str] = {}
        self._sorted_pieces: Optional[tuple[list[str], list[int]]] = None  # for starting_with, built on first use

    @classmethod
    def from_file(cls, path: Path) -> "Tokenizer":
        hf = HFTokenizer.from_file(str(path))
        ids = {tok: hf.token_to_id(tok) for tok in ("<mask>", "<eom>", "<pad>", "<bos>")}
        missing = [tok for tok, i in ids.items() if i is None and tok != "<bos>"]
        if missing:
            raise ValueError(f"tokenizer {path} lacks special token(s) {missing}")
        return cls(hf, ids["<mask>"], ids["<eom>"], ids["<pad>"], ids["<bos>"])

    @property
    def vocab_size(self) -> int:
        return self.hf.get_vocab_size()

    def token_id(self, token: str) -> Optional[int]:
        """The id of a token of the vocabulary (e.g. a special token), or None."""
        return self.hf.token_to_id(token)

    def encode(self, text: str) -> list[int]:
        if not text:
            return []
        return self.hf.encode(text, add_special_tokens=False).ids

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [e.ids for e in self.hf.encode_batch(list(texts), add_special_tokens=False)]

    def decode(self, ids: Sequence[int]) -> str:
        return self.hf.decode([i for i in ids if i not in self.special_ids], skip_special_tokens=False)

    def starting_with(self, text: str) -> list[int]:
        """The text tokens whose piece starts with `text` (token healing: the tokens that
        can write a word the user has begun). A sorted index of the pieces, built once."""
        if self._sorted_pieces is None:
            added = set(self.hf.get_added_tokens_decoder())  # <mask>, <sep>, ...: never text
            pairs = sorted((self.piece(i), i) for i in range(self.vocab_size) if i not in added and i not in self.special_ids)
            pairs = [(p, i) for p, i in pairs if p and "\ufffd" not in p]  # no partial UTF-8 pieces: they cannot be matched as text
            self._sorted_pieces = ([p for p, _ in pairs], [i for _, i in pairs])
        pieces, ids = self._sorted_pieces
        start = bisect.bisect_left(pieces, text)
        end = start
        while end < len(pieces) and pieces[end].startswith(text):
            end += 1
        return ids[start:end]

    def piece(self, token_id: int) -> str:
        """The text of one token on its own (for streaming a canvas position)."""
        text = self._piece_cache.get(token_id)
        if text is None:
            text = "" if token_id in self.special_ids else self.hf.decode([token_id], skip_special_tokens=False)
            self._piece_cache[token_id] = text
        return text
