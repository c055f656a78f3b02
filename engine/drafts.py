"""Drafts from the workspace, judged by the model in the pass it runs anyway.

The workspace proposes whole lines (engine/workspace/retrieve.py: what followed the same
line elsewhere, what sat before the same next line). A
request with drafts starts from a canvas wide enough for the longest of them, and the
model's first pass over it — the all-masked canvas every request begins with, its context
encoded in the same forward — is the verification: at each position, the probability the
model gives the draft's token there, and the end of middle right after it. No forward is
added: a kept draft answers the request in that one pass; otherwise the sampler goes on
from the same logits.

(A left-to-right reading of every draft, one row per token, was tried first: one batched
forward of ~50 rows cost ~0.5 s on this CPU, and fitted on the same lines it kept no more
right drafts than the one-row marginals: 67 vs 70 of 400, leave-one-package-out.)

A draft is kept when a small logistic rule, fitted on the model's own verdicts over the
tuning packages (lab/workspace/fit_drafts.py; its command and figures in
docs/workspace.md), says it is likely the line: the model's mean and weakest token
log-probabilities and its end-of-middle log-probability, the workspace's evidence (same
neighbours, how the code around its places resembles the code around the cursor) and
whether its places lie in the file being edited. The kept draft is the middle, after the
same final syntax check as every middle (engine/api.py); refused there, the model's own
candidates follow.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

import torch

from engine.tokenizer import Tokenizer
from engine.workspace.retrieve import Draft

MAX_DRAFT_TOKENS = 31  # a longer draft is not judged (the first canvas would be too wide)
VERIFIED_DRAFTS = 6  # the strongest drafts by evidence that the model's first pass judges

# The accept rule: P(draft is the line) = sigmoid(w . features); kept when >= ACCEPT and
# it is the best draft. Fitted by `python -m lab.workspace.fit_drafts` (docs/workspace.md).
FEATURES = ("mean_logp", "min_logp", "eom_logp", "both", "after_prev2", "after_prev", "before_next", "same_indent", "in_buffer", "context_match", "log_tokens")
WEIGHTS = (0.2884, 0.0292, 0.5149, 0.5964, 0.6763, -0.0740, 0.4411, 1.1959, 1.2133, 4.3664, 0.4622)
BIAS = -5.7497
# Leave-one-package-out on the 400 tuning lines (each package scored by a rule fitted on
# the other three): keeping the best draft whenever one was offered, 68 right; at 0.01, 65
# right with 19 fewer drafts shown; at 0.02, 61; at 0.1, 47. Under 1% it is mostly a `}`
# or `else:` that follows anything.
ACCEPT = 0.01


@dataclass(frozen=True)
class Candidates:
    """The drafts a request's first pass judges, as the model's tokens (healed text + draft
    text, then the end of middle), and the first canvas's width that holds them all."""

    drafts: tuple[Draft, ...]
    tokens: tuple[tuple[int, ...], ...]
    width: int


def candidates(tok: Tokenizer, drafts: Sequence[Draft], healed: str, block: int, max_tokens: int) -> Optional[Candidates]:
    """The strongest drafts that fit (None when none does). `healed` is the text the engine
    cut from the user's prefix (token healing): the model's middle starts with it. The
    width is the sampler's block, or the least multiple of it that holds the longest."""
    chosen, tokens = [], []
    for draft in drafts[:VERIFIED_DRAFTS]:
        ids = tok.encode(healed + draft.text)
        if 0 < len(ids) < min(MAX_DRAFT_TOKENS, max_tokens):  # room for its end of middle too
            chosen.append(draft)
            tokens.append(tuple(ids) + (tok.eom_id,))
    if not chosen:
        return None
    block = max(1, block)
    width = min(max_tokens, math.ceil(max(len(t) for t in tokens) / block) * block)
    return Candidates(tuple(chosen), tuple(tokens), max(width, min(block, max_tokens)))


def features(draft: Draft, logps: Sequence[float]) -> dict[str, float]:
    """The accept rule's inputs for one draft, given the log-probability the first pass gave
    each of its tokens at its position (the end of middle last)."""
    return {
        "mean_logp": sum(logps) / len(logps), "min_logp": min(logps), "eom_logp": logps[-1],
        "both": math.log1p(draft.both), "after_prev2": math.log1p(draft.after_prev2), "after_prev": math.log1p(draft.after_prev),
        "before_next": math.log1p(draft.before_next), "same_indent": float(draft.same_indent > 0), "in_buffer": float(draft.in_buffer > 0),
        "context_match": draft.context_match, "log_tokens": math.log(len(logps)),
    }


def probability(feats: dict[str, float], weights: Sequence[float] = WEIGHTS, bias: float = BIAS) -> float:
    z = bias + sum(w * feats[name] for w, name in zip(weights, FEATURES))
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))


@dataclass(frozen=True)
class Verification:
    """What the first pass said of each draft: its features and probability, and the kept
    one (or None)."""

    candidates: Candidates
    features: tuple[dict[str, float], ...]
    probabilities: tuple[float, ...]
    kept: Optional[int]


def verify(logits: torch.Tensor, found: Candidates) -> Verification:
    """The accept rule's verdict from the first pass's (W, V) logits over the all-masked canvas."""
    logp = torch.log_softmax(logits.float(), dim=-1)
    feats = []
    for draft, ids in zip(found.drafts, found.tokens):
        positions = torch.arange(len(ids))
        feats.append(features(draft, logp[positions, torch.tensor(ids)].tolist()))
    probs = tuple(probability(f) for f in feats)
    best = max(range(len(probs)), key=probs.__getitem__)
    return Verification(found, tuple(feats), probs, best if probs[best] >= ACCEPT else None)
