"""Drafts from the workspace, judged by the model in the pass it runs anyway.

The workspace proposes whole lines (engine/workspace/retrieve.py: what followed the same
line elsewhere, what sat before the same next line, the lines near the cursor, the imports
a file lacks), best
ranked first. A request with drafts starts from a canvas wide enough for the likely ones
(`candidates`), and the model's first pass over it — the all-masked canvas every request begins with, its context
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
log-probabilities and its end-of-middle log-probability, the draft's length, and the
workspace's evidence through the draft's retrieval rank and how far that rank stands above
the other judged drafts'. The kept draft is the middle, after the
same final syntax check as every middle (engine/api.py); refused there, the model's own
candidates follow.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

import torch

from engine.tokenizer import Tokenizer
from engine.workspace.retrieve import Draft, rank_features

MAX_DRAFT_TOKENS = 31  # a longer draft is not judged (the first canvas would be too wide)
# The best-ranked drafts (retrieve.py `rank`) that the model's first pass judges. Measured on
# the 167 held tuning lines (lab/workspace/recall.py --verify): the line among them 113 with
# 6, 116 with 8, 118 with 12, 121 with 16, 124 with 24; right ones kept about the same from 8
# on (lab/workspace/fit_drafts.py), and each more costs only its gather in that pass (the
# canvas is no wider for them: WIDTH_DRAFTS).
VERIFIED_DRAFTS = 16
# The first canvas is widened (from the sampler's block) only for the first WIDTH_DRAFTS
# drafts whose rank (a logit) is at least WIDEN_RANK; the others are judged only when they
# fit. Every request has drafts now (the lines near the cursor), and a canvas sized by the
# longest of them (21.8 positions on average over the tuning lines, 14.6 before) cost the
# answers the model writes itself 11-22% more forwards; at -4 it is 13.4 and 108 of the 167
# held lines keep their line among the judged drafts (118 unwidened by rank, 102 at -3).
# With look-alike neighbours (2026-12-07): the line among the judged drafts 120 at -4, 129
# at -5, 131 at -6; right answers end to end at the same count of wrong drafts kept, none
# more (-5: 87 at 0.11, as -4), so the canvas stays as narrow.
WIDTH_DRAFTS = 6
WIDEN_RANK = -4.0

# The accept rule: P(draft is the line) = sigmoid(w . features); kept when >= ACCEPT and
# it is the best draft. Fitted by `python -m lab.workspace.fit_drafts` (docs/workspace.md).
# The workspace's evidence comes in through the retrieval rank (retrieve.py `rank`, fitted
# on the same lines), and how far the draft's rank stands above the best other judged
# draft's (`rank_margin`, clipped to +-MARGIN_CLIP; MARGIN_CLIP for a draft judged alone):
# with the eleven features before (the evidence counts one by one) beside the rank and
# margin, 77 right at 5% against 80 (fit_drafts.py, leave-one-package-out, 16 drafts).
FEATURES = ("mean_logp", "min_logp", "eom_logp", "log_tokens", "rank", "rank_margin")
WEIGHTS = (0.0877, 0.0837, 0.3227, 0.3678, 0.5209, 0.6903)
BIAS = -0.4195
MARGIN_CLIP = 3.0
# Leave-one-package-out on the 400 tuning lines (each package scored by a rule fitted on
# the other three; the drafts with look-alike neighbours, 2026-12-07): keeping the best
# draft whenever one was offered, 87 right of 396 kept; at 0.05, 84 of 279; at 0.1, 75 of
# 198 (71 of 190 before those drafts); at 0.15, 69 of 151. The rule fitted on all four
# keeps, from the stored first passes, 80 right and 128 wrong at 0.1, 79 and 112 at 0.11,
# 79 and 105 at 0.12 (78 and 118 before look-alike neighbours, at 0.1): at 0.12 no more
# wrong drafts are kept than before. End to end (`real_lines --set tune --workspace`) 0.11
# and 0.12 answered the same 87 held lines right.
ACCEPT = 0.12


@dataclass(frozen=True)
class Candidates:
    """The drafts a request's first pass judges, as the model's tokens (healed text + draft
    text, then the end of middle), and the first canvas's width that holds them all."""

    drafts: tuple[Draft, ...]
    tokens: tuple[tuple[int, ...], ...]
    width: int


def candidates(tok: Tokenizer, drafts: Sequence[Draft], healed: str, block: int, max_tokens: int) -> Optional[Candidates]:
    """The best-ranked drafts that fit (None when none does). `healed` is the text the
    engine cut from the user's prefix (token healing): the model's middle starts with it.
    The width is the sampler's block, widened to the least multiple of it that holds the
    longest of the first WIDTH_DRAFTS whose rank is at least WIDEN_RANK; every other draft
    is judged only when it fits that width."""
    encoded = []
    for draft in drafts[:VERIFIED_DRAFTS]:
        ids = tok.encode(healed + draft.text)
        if 0 < len(ids) < min(MAX_DRAFT_TOKENS, max_tokens):  # room for its end of middle too
            encoded.append((draft, tuple(ids) + (tok.eom_id,)))
    block = max(1, block)
    width = min(block, max_tokens)
    for draft, ids in encoded[:WIDTH_DRAFTS]:
        if draft.rank >= WIDEN_RANK:
            width = max(width, min(max_tokens, math.ceil(len(ids) / block) * block))
    chosen = [(draft, ids) for draft, ids in encoded if len(ids) <= width]
    if not chosen:
        return None
    return Candidates(tuple(d for d, _ in chosen), tuple(ids for _, ids in chosen), width)


def features(draft: Draft, logps: Sequence[float]) -> dict[str, float]:
    """The accept rule's inputs for one draft, given the log-probability the first pass gave
    each of its tokens at its position (the end of middle last): the model's, and the
    workspace's evidence as the retrieval rank reads it (retrieve.py RANK_FEATURES) with
    the rank itself (the rule uses the FEATURES among them)."""
    return {
        **rank_features(draft), "rank": draft.rank,
        "mean_logp": sum(logps) / len(logps), "min_logp": min(logps), "eom_logp": logps[-1], "log_tokens": math.log(len(logps)),
    }


def with_margins(feats: list[dict[str, float]]) -> None:
    """Each judged draft's `rank_margin`: its rank less the best other judged draft's."""
    for i, f in enumerate(feats):
        others = [g["rank"] for j, g in enumerate(feats) if j != i]
        f["rank_margin"] = max(-MARGIN_CLIP, min(MARGIN_CLIP, f["rank"] - max(others))) if others else MARGIN_CLIP


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
    with_margins(feats)
    probs = tuple(probability(f) for f in feats)
    best = max(range(len(probs)), key=probs.__getitem__)
    return Verification(found, tuple(feats), probs, best if probs[best] >= ACCEPT else None)
