"""Drafts from the workspace, verified by the model in one pass.

The workspace proposes whole lines (engine/workspace/retrieve.py: what followed the same
line elsewhere, what sat before the same next line). The model checks each draft
left to right in ONE batched forward: row j of a draft's rows holds its first j tokens
with masks after them, so the row's logits at position j are the model's probability of
the draft's next token given everything before it and the suffix — the same left-to-right
reading the sampler's own candidates use, for every token of every draft at once.

A draft is kept when a small logistic rule, fitted on the model's own verdicts over the
tuning packages (lab/workspace/fit_drafts.py, its command and figures in
docs/workspace.md), says it is likely the line: the model's mean and weakest token
log-probabilities, the workspace's evidence (same neighbours, how the code around its
places resembles the code around the cursor) and whether its places lie in the file being
edited. The kept draft is the middle, after the same final syntax check as every middle
(engine/api.py); when none is kept the request's denoising goes on from the pass it
already has, so a draft costs one forward and never an answer.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

import torch

from engine.tokenizer import Tokenizer
from engine.types import DenoisingModel
from engine.workspace.retrieve import Draft

MAX_DRAFT_TOKENS = 48  # a longer draft is not verified (its rows would cost more than it saves)
VERIFIED_DRAFTS = 4  # the strongest drafts by evidence that the model reads

# The accept rule: P(draft is the line) = sigmoid(w . features); kept when >= ACCEPT and
# it is the best draft. Fitted by `python -m lab.workspace.fit_drafts` (docs/workspace.md).
FEATURES = ("mean_logp", "min_logp", "eom_logp", "both", "after_prev2", "after_prev", "before_next", "same_indent", "in_buffer", "context_match", "log_tokens")
WEIGHTS = (0.0681, 0.1542, 0.1006, 0.7739, 0.6376, -0.1444, 0.3708, 1.1077, 1.0900, 4.0676, 0.5257)
BIAS = -5.5284
# Leave-one-package-out on the 400 tuning lines: keeping the best draft whenever one was
# offered gave 66 right (16.5%), at 0.02 61 (15.2%) with 40 fewer drafts shown, at 0.1 51.
# A draft the rule gives under 2% is mostly a `}` or `else:` that follows anything.
ACCEPT = 0.02


@dataclass(frozen=True)
class DraftRows:
    """The rows that verify some drafts: (R, W) canvas ids, and for each draft its token ids
    (the model's middle: healed text + draft text, then the end of middle) and first row."""

    rows: torch.Tensor
    drafts: tuple[Draft, ...]
    tokens: tuple[tuple[int, ...], ...]
    starts: tuple[int, ...]


def verification_rows(tok: Tokenizer, drafts: Sequence[Draft], healed: str, first_width: int) -> Optional[DraftRows]:
    """Left-to-right rows for the strongest drafts (None when no draft fits). `healed` is
    the text the engine cut from the user's prefix (token healing): the model's middle
    starts with it. Rows are `first_width` (the sampler's first canvas) wide, or a multiple
    of it when a draft is longer: then the first row, all masks, is that canvas."""
    chosen, tokens = [], []
    for draft in drafts[:VERIFIED_DRAFTS]:
        ids = tok.encode(healed + draft.text)
        if 0 < len(ids) <= MAX_DRAFT_TOKENS:
            chosen.append(draft)
            tokens.append(tuple(ids) + (tok.eom_id,))
    if not chosen:
        return None
    width = math.ceil(max(len(t) for t in tokens) / first_width) * first_width
    rows, starts = [], []
    for ids in tokens:
        starts.append(len(rows))
        for j in range(len(ids)):
            rows.append(list(ids[:j]) + [tok.mask_id] * (width - j))
    return DraftRows(torch.tensor(rows, dtype=torch.long), tuple(chosen), tuple(tokens), tuple(starts))


def features(draft: Draft, logps: Sequence[float]) -> dict[str, float]:
    """The accept rule's inputs for one draft, given the log-probability the model gave each
    of its tokens (the end of middle last)."""
    return {
        "mean_logp": sum(logps) / len(logps), "min_logp": min(logps), "eom_logp": logps[-1],
        "both": math.log1p(draft.both), "after_prev2": math.log1p(draft.after_prev2), "after_prev": math.log1p(draft.after_prev),
        "before_next": math.log1p(draft.before_next), "same_indent": float(draft.same_indent > 0), "in_buffer": float(draft.in_buffer > 0),
        "context_match": draft.context_match, "log_tokens": math.log(len(logps)),
    }


def token_logps(logits: torch.Tensor, rows: DraftRows) -> list[list[float]]:
    """Per draft, the model's log-probability of each of its tokens at its row."""
    out = []
    for ids, start in zip(rows.tokens, rows.starts):
        positions = torch.arange(len(ids))
        picked = torch.log_softmax(logits[start + positions, positions].float(), dim=-1)
        out.append(picked[positions, torch.tensor(ids)].tolist())
    return out


def probability(feats: dict[str, float], weights: Sequence[float] = WEIGHTS, bias: float = BIAS) -> float:
    z = bias + sum(w * feats[name] for w, name in zip(weights, FEATURES))
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))


@dataclass(frozen=True)
class Verification:
    """What the verification pass found: each verified draft's features and probability,
    the kept one (or None), and the logits of the all-masked first row."""

    rows: DraftRows
    features: tuple[dict[str, float], ...]
    probabilities: tuple[float, ...]
    kept: Optional[int]
    first_logits: torch.Tensor  # (W, V): the all-masked canvas's pass

    @property
    def kept_ids(self) -> tuple[int, ...]:
        """The kept draft's tokens without the end of middle (() when none is kept)."""
        return self.rows.tokens[self.kept][:-1] if self.kept is not None else ()


def verify(model: DenoisingModel, context: object, tok: Tokenizer, drafts: Sequence[Draft], healed: str, first_width: int, device: torch.device | str = "cpu") -> Optional[Verification]:
    """One forward over the drafts' rows against the request's encoded context, and the
    accept rule's verdict; None when no draft fits a row."""
    rows = verification_rows(tok, drafts, healed, max(1, first_width))
    if rows is None:
        return None
    logits = model.canvas_logits(context, rows.rows.to(device))
    feats = tuple(features(d, lp) for d, lp in zip(rows.drafts, token_logps(logits, rows)))
    probs = tuple(probability(f) for f in feats)
    best = max(range(len(probs)), key=probs.__getitem__)
    return Verification(rows, feats, probs, best if probs[best] >= ACCEPT else None, logits[0])
