"""Training examples for the infilling objective, built on the fly from corpus files.

An example is (prefix, middle, suffix) cut at *character* positions and tokenized
separately, exactly as the engine tokenizes a request at run time. Middles are mostly
whole lines (the common editor completion and HumanEval's single-line task), some are
several lines, the rest of a line from a cursor inside it, or a random span; a few are
empty. The canvas holds the middle followed by end-of-middle (EOM) tokens up to a
multiple of the block size; sometimes the canvas is shorter than the middle and holds
only its beginning, which is what the sampler sees before it grows the canvas.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Optional

import torch

from engine.model import SEG_CANVAS, SEG_PAD, SEG_PREFIX, SEG_SUFFIX, BlockLayout
from engine.tokenizer import Tokenizer


@dataclass(frozen=True)
class DataConfig:
    prefix_tokens: int = 256
    suffix_tokens: int = 96
    canvas_max: int = 64
    block_size: int = 16
    edit_corruption: float = 0.1  # share of unmasked canvas tokens swapped for random ones (in half the examples)
    clean_weight: float = 0.1  # loss weight on unmasked, uncorrupted canvas tokens
    chars_per_token_budget: int = 6  # characters cut around the cursor per token of budget
    # Noised copies of each canvas after one context (copy 2 masks the complement of
    # copy 1, so every middle token carries a masked loss once): the context is computed
    # once for all of them, which raises the share of computed positions that teach the
    # diffusion objective (docs/training.md).
    canvas_copies: int = 2


@dataclass
class Example:
    prefix: list[int]  # starts with BOS
    canvas: list[int]  # true canvas: middle tokens then EOM padding (or a truncated middle)
    suffix: list[int]
    # Where the canvas starts instead of all masks (same length as `canvas`, mask ids
    # allowed): a near line to edit (lab/training/near_lines.py). None: plain noising.
    noisy_canvas: Optional[list[int]] = None


def _line_starts(text: str) -> list[int]:
    starts = [0]
    idx = text.find("\n")
    while idx != -1:
        starts.append(idx + 1)
        idx = text.find("\n", idx + 1)
    return starts


def choose_middle(text: str, rng: random.Random) -> tuple[int, int]:
    """Character span [a, b) of the middle."""
    if not text:
        return 0, 0
    starts = _line_starts(text)
    n_lines = len(starts)
    line = rng.randrange(n_lines)
    line_start = starts[line]
    line_end = starts[line + 1] if line + 1 < n_lines else len(text)
    kind = rng.random()
    if kind < 0.45:  # one whole line, with its newline
        # Prefer non-blank lines: blank middles teach little.
        for _ in range(4):
            if text[line_start:line_end].strip():
                break
            line = rng.randrange(n_lines)
            line_start, line_end = starts[line], starts[line + 1] if line + 1 < n_lines else len(text)
        return line_start, line_end
    if kind < 0.65:  # several whole lines
        last = min(n_lines - 1, line + rng.randint(1, 7))
        end = starts[last + 1] if last + 1 < n_lines else len(text)
        return line_start, end
    if kind < 0.82:  # rest of the line from a cursor inside it
        cut = rng.randint(line_start, max(line_start, line_end - 1))
        return cut, line_end
    if kind < 0.97:  # a random span, possibly mid-token on both sides
        a = rng.randrange(len(text))
        return a, min(len(text), a + rng.randint(1, 160))
    a = rng.randrange(len(text) + 1)  # empty middle: nothing to insert here
    return a, a


def make_example(text: str, tok: Tokenizer, cfg: DataConfig, rng: random.Random) -> Example:
    a, b = choose_middle(text, rng)
    prefix_text = text[max(0, a - cfg.prefix_tokens * cfg.chars_per_token_budget) : a]
    suffix_text = text[b : b + cfg.suffix_tokens * cfg.chars_per_token_budget]
    prefix = tok.encode(prefix_text)[-(cfg.prefix_tokens - 1) :] if prefix_text else []
    suffix = tok.encode(suffix_text)[: cfg.suffix_tokens]
    middle = tok.encode(text[a:b])
    bos = [tok.bos_id] if tok.bos_id is not None else []
    L, B = len(middle), cfg.block_size
    if L >= cfg.canvas_max or (L >= B and rng.random() < 0.1):
        # Canvas shorter than the middle: only its beginning, no EOM (the sampler grows it).
        n = min(cfg.canvas_max, B * max(1, L // B)) if L < cfg.canvas_max else cfg.canvas_max
        canvas = middle[:n]
    else:
        n = B * math.ceil((L + 1) / B)
        if rng.random() < 0.25:
            n += B
        n = min(n, cfg.canvas_max)
        canvas = middle + [tok.eom_id] * (n - L)
    return Example(bos + prefix, canvas, suffix)


@dataclass
class Batch:
    ids: torch.Tensor  # (B, T) model input (canvas noised)
    positions: torch.Tensor  # (B, T)
    segments: torch.Tensor  # (B, T)
    targets: torch.Tensor  # (B, T) true token at canvas rows; next token at prefix rows; -1 elsewhere
    weights: torch.Tensor  # (B, T) canvas loss weights (0 outside the canvas)
    canvas_lengths: torch.Tensor  # (B,)
    masked: torch.Tensor  # (B, T) bool: canvas rows that were masked
    tokens: int  # non-pad tokens in the batch
    layout: Optional[BlockLayout] = None  # aligned blocks (collate always makes them)


def _noise_masks(N: int, t: float, copies: int, rng: random.Random) -> list[tuple[torch.Tensor, float]]:
    """(mask, rate) per canvas copy: copy 0 masks each position with probability t, copy
    1 masks exactly the positions copy 0 kept (rate 1 - t), later copies draw their own
    rate. Every copy masks at least one position."""
    first = torch.rand(N) < t
    out = [(first, t)]
    for c in range(1, copies):
        if c == 1:
            mask, rate = ~first, 1.0 - t
        else:
            rate = rng.random() * 0.98 + 0.02
            mask = torch.rand(N) < rate
        out.append((mask, max(rate, 0.02)))
    for mask, _ in out:
        if not mask.any():
            mask[rng.randrange(N)] = True
    return out


KEEP_WEIGHT = 0.5  # loss weight on a canvas start's tokens that are already right (lab/training/near_lines.py)
START_MASK_RATES = ((0.0, 0.0), (0.1, 0.5))  # per canvas copy: share of the start's tokens masked too (uniform in the range)


def _start_noise(start: torch.Tensor, canvas: torch.Tensor, copy: int, mask_id: int, rng: random.Random) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(input, loss weights, masked) of one copy of a canvas that starts from `start`.

    Copy 0 is the start as the engine sets it; later copies mask a share of its tokens
    as well, so the model also meets starts it has half denoised. Weights: 1 where the
    input is a mask or a wrong token (the edit to learn), KEEP_WEIGHT where the start's
    token is already right (keeping it is learned too)."""
    low, high = START_MASK_RATES[min(copy, len(START_MASK_RATES) - 1)]
    rate = low + (high - low) * rng.random()
    noisy = start.clone()
    if rate > 0:
        noisy[torch.rand(len(start)) < rate] = mask_id
    mask = noisy == mask_id
    w = torch.where(noisy == canvas, KEEP_WEIGHT, 1.0)
    return noisy, w, mask


def _canvas_copies(ex: Example, canvas: torch.Tensor, t: float, copies: int, cfg: DataConfig, tok: Tokenizer, rng: random.Random):
    """(input, loss weights, masked) of each noised copy of an example's canvas: from its
    `noisy_canvas` when it has one (`_start_noise`), else masked at rate t (complementary
    copies, `_noise_masks`) with random tokens swapped in for a share of the rest in half
    the copies (so token-to-token edits are learned)."""
    N = len(canvas)
    if ex.noisy_canvas is not None:
        start = torch.tensor(ex.noisy_canvas, dtype=torch.long)
        for c in range(copies):
            yield _start_noise(start, canvas, c, tok.mask_id, rng)
        return
    n_special = 16  # ids below this are special tokens: never used as random corruption
    for mask, rate in _noise_masks(N, t, copies, rng):
        noisy = canvas.clone()
        noisy[mask] = tok.mask_id
        corrupt = torch.zeros(N, dtype=torch.bool)
        if rng.random() < 0.5 and cfg.edit_corruption > 0:
            corrupt = (~mask) & (torch.rand(N) < cfg.edit_corruption)
            noisy[corrupt] = torch.randint(n_special, tok.vocab_size, (int(corrupt.sum()),))
        w = torch.full((N,), cfg.clean_weight)
        w[corrupt] = 1.0
        w[mask] = 1.0 / rate
        yield noisy, w, mask


def collate(examples: list[Example], tok: Tokenizer, cfg: DataConfig, rng: random.Random, t_values: list[float] | None = None, copies: int = 1) -> Batch:
    """Lay examples out as aligned blocks [suffix | prefix | canvas copies] and noise
    their canvases.

    Each segment is right-padded to the batch's longest (`engine.model.BlockLayout`:
    attention then runs per block). Noise level t per example is stratified over the
    batch (lower variance than i.i.d., as in MDLM's antithetic sampling) unless
    `t_values` fixes it (validation). Canvas copy c has segment id SEG_CANVAS + c."""
    Bn = len(examples)
    if t_values is None:
        offset = rng.random()
        t_values = [((i + offset) / Bn) * 0.98 + 0.02 for i in range(Bn)]
        rng.shuffle(t_values)
    layout = BlockLayout(
        suffix=max(len(e.suffix) for e in examples), prefix=max(len(e.prefix) for e in examples),
        canvas=max(len(e.canvas) for e in examples), copies=copies,
    )
    T = layout.context + copies * layout.canvas
    ids = torch.full((Bn, T), tok.pad_id, dtype=torch.long)
    positions = torch.zeros((Bn, T), dtype=torch.long)
    segments = torch.full((Bn, T), SEG_PAD, dtype=torch.long)
    targets = torch.full((Bn, T), -1, dtype=torch.long)
    weights = torch.zeros((Bn, T))
    masked = torch.zeros((Bn, T), dtype=torch.bool)
    lengths = torch.zeros(Bn, dtype=torch.long)
    tokens = 0
    for row, (ex, t) in enumerate(zip(examples, t_values)):
        S, P, N = len(ex.suffix), len(ex.prefix), len(ex.canvas)
        tokens += S + P + copies * N
        ids[row, :S] = torch.tensor(ex.suffix, dtype=torch.long)
        positions[row, :S] = torch.arange(P + N, P + N + S)
        segments[row, :S] = SEG_SUFFIX
        o = layout.suffix
        ids[row, o : o + P] = torch.tensor(ex.prefix, dtype=torch.long)
        positions[row, o : o + P] = torch.arange(P)
        segments[row, o : o + P] = SEG_PREFIX
        if P > 1:
            targets[row, o : o + P - 1] = torch.tensor(ex.prefix[1:], dtype=torch.long)
        canvas = torch.tensor(ex.canvas, dtype=torch.long)
        for c, (noisy, w, mask) in enumerate(_canvas_copies(ex, canvas, t, copies, cfg, tok, rng)):
            o = layout.context + c * layout.canvas
            ids[row, o : o + N] = noisy
            positions[row, o : o + N] = torch.arange(P, P + N)
            segments[row, o : o + N] = SEG_CANVAS + c
            targets[row, o : o + N] = canvas
            weights[row, o : o + N] = w
            masked[row, o : o + N] = mask
        lengths[row] = copies * N
    return Batch(ids, positions, segments, targets, weights, lengths, masked, tokens, layout)


def sampling_weight(doc: dict) -> float:
    """How often a corpus file is drawn: its length damped (len ** 0.8, so the largest
    files do not dominate) times the structure weight the corpus stored for it
    (lab/training/structure.py: documented definitions, tests and examples up, generated
    and data-only files down; 1.0 for corpora built before it existed)."""
    return len(doc["text"]) ** 0.8 * float(doc.get("weight", 1.0))


class ExampleStream:
    """Endless examples from corpus documents, sampled by `sampling_weight`.

    A share `edit_fraction` of examples are next-edit examples (lab/training/edits.py:
    the edit history in the prefix, the span after the next edit on the canvas), so one
    recipe trains both infilling and editing; a document with no edit to make falls
    back to an ordinary infilling example. A share `near_fraction` of the others start
    their canvas from a near line of the same file (lab/training/near_lines.py), and a
    share `context_fraction` of the rest read snippets of the same file before their
    prefix (lab/training/context_snippets.py)."""

    def __init__(self, docs: list[dict], tok: Tokenizer, cfg: DataConfig, seed: int, edit_fraction: float = 0.0, near_fraction: float = 0.0, context_fraction: float = 0.0):
        kept = [d for d in docs if d["text"].strip()]
        self.texts = [d["text"] for d in kept]
        self.languages = [d.get("language", "python") for d in kept]
        self.weights = [sampling_weight(d) for d in kept]
        self.tok, self.cfg = tok, cfg
        self.edit_fraction = edit_fraction
        self.near_fraction = near_fraction
        self.context_fraction = context_fraction
        self.rng = random.Random(seed)

    def example(self, index: int) -> Example:
        text = self.texts[index]
        if self.edit_fraction and self.rng.random() < self.edit_fraction:
            from lab.training.edits import make_edit_example

            edit = make_edit_example(text, self.tok, self.cfg, self.rng, language=self.languages[index])
            if edit is not None:
                return edit
        elif self.near_fraction and self.rng.random() < self.near_fraction:
            from lab.training.near_lines import near_line_example

            near = near_line_example(text, self.tok, self.cfg, self.rng)
            if near is not None:
                return near
        elif self.context_fraction and self.rng.random() < self.context_fraction:
            from lab.training.context_snippets import context_example

            read = context_example(text, self.tok, self.cfg, self.rng)
            if read is not None:
                return read
        return make_example(text, self.tok, self.cfg, self.rng)

    def batches(self, size: int, pool: int = 32):
        """Endless batches of examples of similar shape: `pool` batches' worth of
        examples are sorted by (canvas, prefix, suffix) length and cut into batches (in
        random order), so each block of a batch is padded to lengths like its own.
        Measured on the corpus (batch 16, aligned blocks, 2 canvas copies): padding falls
        from ~16% of the computed positions (pool 1) to ~8% (pool 32)."""
        while True:
            indices = self.rng.choices(range(len(self.texts)), weights=self.weights, k=size * pool)
            examples = sorted((self.example(i) for i in indices), key=lambda e: (len(e.canvas), len(e.prefix), len(e.suffix)))
            groups = [examples[i : i + size] for i in range(0, len(examples), size)]
            self.rng.shuffle(groups)
            for group in groups:
                yield collate(group, self.tok, self.cfg, self.rng, copies=self.cfg.canvas_copies)


class _BatchDataset(torch.utils.data.IterableDataset):
    """Endless batches from an ExampleStream per worker process (each its own seed)."""

    def __init__(self, docs: list[dict], tok: Tokenizer, cfg: DataConfig, seed: int, edit_fraction: float, batch_size: int, near_fraction: float = 0.0, context_fraction: float = 0.0):
        super().__init__()
        self.docs, self.tok, self.cfg = docs, tok, cfg
        self.seed, self.edit_fraction, self.batch_size = seed, edit_fraction, batch_size
        self.near_fraction, self.context_fraction = near_fraction, context_fraction

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        worker = info.id if info is not None else 0
        stream = ExampleStream(self.docs, self.tok, self.cfg, seed=self.seed * 1009 + worker, edit_fraction=self.edit_fraction, near_fraction=self.near_fraction, context_fraction=self.context_fraction)
        yield from stream.batches(self.batch_size)


def batch_source(docs: list[dict], tok: Tokenizer, cfg: DataConfig, seed: int, edit_fraction: float, batch_size: int, workers: int = 0, near_fraction: float = 0.0, context_fraction: float = 0.0):
    """An endless iterator of training batches.

    workers = 0 builds them in the training process (CPU training: data costs ~5% of a
    step there). On a GPU the model outruns one process's tokenization and noising
    (~0.3M tokens/s), so `workers` processes prepare batches ahead of the GPU."""
    if workers <= 0:
        return ExampleStream(docs, tok, cfg, seed=seed, edit_fraction=edit_fraction, near_fraction=near_fraction, context_fraction=context_fraction).batches(batch_size)
    loader = torch.utils.data.DataLoader(
        _BatchDataset(docs, tok, cfg, seed, edit_fraction, batch_size, near_fraction, context_fraction),
        batch_size=None, num_workers=workers, prefetch_factor=4, persistent_workers=True,
    )
    return iter(loader)
