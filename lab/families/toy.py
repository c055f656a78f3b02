"""A small Dream-layout model trained for a minute on code, for measuring the dual cache
on weights that have learned *something* (random weights attend uniformly and are the
worst case for a stale context). Measurement tooling only; not a model to use.

    python -m lab.families.fidelity --toy-trained     # trains one, then measures
"""
from __future__ import annotations

import random
from pathlib import Path
from typing import Sequence

import torch
import torch.nn.functional as F

from engine.families.adapter import FamilyModel
from engine.families.arch import ArchConfig
from engine.families.network import BidirectionalDecoder
from engine.families.spec import family_by_name
from engine.families.tokens import SpecialIds
from engine.tokenizer import Tokenizer

SPECIAL = ["<|endoftext|>", "<|beginoftext|>", "<|mask|>"]


def code_texts(root: Path, limit_chars: int = 400_000) -> list[str]:
    """Python sources under `root` (this repository), up to limit_chars in total."""
    texts, total = [], 0
    for path in sorted(root.rglob("*.py")):
        if ".venv" in path.parts or "site-packages" in path.parts:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        texts.append(text)
        total += len(text)
        if total >= limit_chars:
            break
    return texts


def train_toy_model(texts: Sequence[str], steps: int = 300, seq_len: int = 128, batch: int = 16, seed: int = 0) -> tuple[FamilyModel, Tokenizer, list[int], list[float]]:
    """Masked-diffusion training with Dream's shifted objective: the row before a masked
    position predicts it. Half the batches mask one contiguous span (infill-shaped), the
    rest mask uniformly at a random rate. Returns the model, its tokenizer, the token
    stream of the last 10% of `texts` (held out, for prompts) and the training losses."""
    random.seed(seed)
    torch.manual_seed(seed)
    hf = _tokenizer(texts)
    eos, bos, mask = (hf.token_to_id(t) for t in SPECIAL)
    stream: list[int] = []
    for text in texts:
        stream += hf.encode(text).ids + [eos]
    split = int(len(stream) * 0.9)
    train, held = stream[:split], stream[split:]
    vocab = hf.get_vocab_size()
    cfg = ArchConfig(hidden_size=128, num_layers=4, num_heads=4, num_kv_heads=2, head_dim=32, ffn_hidden=352, vocab_size=vocab, norm_eps=1e-6, rope_theta=10000.0, tie_embeddings=False, qkv_bias=True)
    net = BidirectionalDecoder(cfg)
    for name, p in net.named_parameters():
        if p.dim() > 1:
            torch.nn.init.normal_(p, std=0.02)
    opt = torch.optim.AdamW(net.parameters(), lr=3e-3, weight_decay=0.01)
    positions = torch.arange(seq_len + 1)
    losses: list[float] = []
    for step in range(steps):
        starts = [random.randrange(0, len(train) - seq_len) for _ in range(batch)]
        x0 = torch.tensor([[bos] + train[s : s + seq_len] for s in starts])  # (B, L+1)
        noisy = torch.zeros_like(x0, dtype=torch.bool)
        for b in range(batch):
            if step % 2:
                width = random.randint(1, seq_len // 2)
                lo = random.randint(1, seq_len + 1 - width)
                noisy[b, lo : lo + width] = True
            else:
                noisy[b, 1:] = torch.rand(seq_len) < random.uniform(0.1, 0.9)
        xt = torch.where(noisy, torch.full_like(x0, mask), x0)
        hidden, _ = net(xt, positions)
        logits = net.logits(hidden[:, :-1])  # row i scores token i+1
        target = x0[:, 1:].masked_fill(~noisy[:, 1:], -100)
        loss = F.cross_entropy(logits.reshape(-1, vocab), target.reshape(-1), ignore_index=-100)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    net.eval().requires_grad_(False)
    ids = SpecialIds(mask=mask, eom=eos, pad=eos, eos=eos, bos=bos)
    return FamilyModel(net, family_by_name("dream"), ids, vocab), Tokenizer(hf, mask, eos, eos, bos), held, losses


def _tokenizer(texts: Sequence[str]):
    from tokenizers import Regex, Tokenizer as HFTokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    from lab.fixtures.family_checkpoints import QWEN2_SPLIT

    tok = HFTokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated"), pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=1024, special_tokens=SPECIAL, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer)
    return tok


def held_out_prompts(held: list[int], n: int = 8, prefix_len: int = 96, middle_len: int = 24, suffix_len: int = 48, bos: int | None = None) -> list[tuple[list[int], list[int]]]:
    """(prefix, suffix) pairs cut from the held-out stream, a middle of `middle_len` removed."""
    span = prefix_len + middle_len + suffix_len
    step = max(1, (len(held) - span) // n)
    out = []
    for i in range(n):
        s = i * step
        window = held[s : s + span]
        out.append((([bos] if bos is not None else []) + window[:prefix_len], window[prefix_len + middle_len :]))
    return out
