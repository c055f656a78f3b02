"""Train the embedded model's byte-level BPE tokenizer on the corpus's training split.

Newlines are split off as tokens of their own before BPE, so a line boundary is always a
token boundary: line-level middles (the common completion) are exact token spans, and a
cursor at the start of a line never splits a token.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

from engine.tokenizer import SPECIAL_TOKENS
from lab.training.corpus import read_split


def new_tokenizer() -> Tokenizer:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(r"\n"), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    return tok


def train_tokenizer(texts: Iterator[str], vocab_size: int) -> Tokenizer:
    tok = new_tokenizer()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        min_frequency=2,
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    return tok


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m lab tokenizer", description="Train the BPE tokenizer on the corpus.")
    parser.add_argument("--corpus", type=Path, default=Path("data/corpus"))
    parser.add_argument("--vocab-size", type=int, default=8192)
    parser.add_argument("--out", type=Path, required=True, help="tokenizer.json to write")
    args = parser.parse_args(argv)
    docs = read_split(args.corpus, "train")
    tok = train_tokenizer((d["text"] for d in docs), args.vocab_size)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tok.save(str(args.out))
    print(f"tokenizer: {tok.get_vocab_size()} tokens -> {args.out}")
    return 0
