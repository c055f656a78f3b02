"""Editing a near workspace line into the line that fits (the canvas starts from it).

The run-time half of lab/training/near_lines.py: the canvas is the near line's tokens
(after the indentation), a newline, then masks up to `edit_canvas_length`, and the
model's token-to-token edits turn it into the line the place needs.

The numbers below were chosen, not fitted: with today's embedded model no edited line came
out right on the tuning packages' real lines, so there was nothing to fit them on, and
`edit_drafts` is off by default (docs/measurements/2026-12-07-near-edit-training.md).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Optional, Sequence

import torch

if TYPE_CHECKING:
    from engine.drafts import Verification
    from engine.tokenizer import Tokenizer
    from engine.types import SamplerSettings

EDIT_SLACK = 3  # masks at least after the start's newline: room for a longer line


def edit_canvas_length(start_tokens: int, block_size: int) -> int:
    """Canvas length for a start of `start_tokens` tokens (its newline included): whole
    blocks with at least EDIT_SLACK masks after it. Training and the engine share it, so
    the model sees at run time the canvases it learned on."""
    return block_size * math.ceil((start_tokens + EDIT_SLACK) / block_size)


# When the first pass keeps no workspace draft, the likeliest judged one starts the canvas
# if the accept rule (engine/drafts.py `probability`) rates it at least EDIT_FLOOR.
EDIT_FLOOR = 0.02
# Its passes rewrite a token the model is at least this sure of another (rule 4), for up
# to EDIT_PASSES passes once the line is closed (the request's own settings otherwise).
EDIT_THRESHOLD = 0.5
EDIT_PASSES = 1
# Forward passes the edit candidate may spend in all, the first (verification) pass
# included: then its canvas is judged as it stands.
MAX_FORWARDS = 3
# The edited line is kept when the model's mean log-probability of its tokens (the end of
# middle included), in the last pass it read, is at least KEEP_LOGP; else the request's
# own candidate follows, replaying its first pass.
KEEP_LOGP = -1.0


def start_for(check: "Verification", enabled: bool) -> "int | None":
    """Which judged draft starts an edit canvas (the likeliest), or None: not enabled, or
    none rated EDIT_FLOOR."""
    if not enabled or not check.probabilities:
        return None
    best = max(range(len(check.probabilities)), key=check.probabilities.__getitem__)
    return best if check.probabilities[best] >= EDIT_FLOOR else None


def editing_settings(settings: "SamplerSettings") -> "SamplerSettings":
    """The edit candidate's sampler settings: the request's, editing at EDIT_THRESHOLD."""
    return settings.replace(edit_threshold=min(settings.edit_threshold, EDIT_THRESHOLD), max_edit_passes=max(settings.max_edit_passes, EDIT_PASSES))


def line_logp(tok: "Tokenizer", canvas: Sequence[int], logits: "Optional[torch.Tensor]") -> Optional[float]:
    """The mean log-probability the last pass's (N, V) `logits` give the canvas's tokens up
    to and including its end of middle; None when there is no pass or a hole is left."""
    if logits is None:
        return None
    ids = list(canvas)
    end = ids.index(tok.eom_id) + 1 if tok.eom_id in ids else len(ids)
    ids = ids[: min(end, logits.shape[0])]
    if not ids or tok.mask_id in ids:
        return None
    logp = torch.log_softmax(logits[: len(ids)].float(), dim=-1)[torch.arange(len(ids)), torch.tensor(ids)]
    return float(logp.mean())


def keeps(tok: "Tokenizer", canvas: Sequence[int], logits: "Optional[torch.Tensor]", floor: Optional[float] = None) -> bool:
    """Whether the model stands by the edited canvas: `line_logp` at least KEEP_LOGP."""
    logp = line_logp(tok, canvas, logits)
    return logp is not None and logp >= (KEEP_LOGP if floor is None else floor)
