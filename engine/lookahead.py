"""Draft and verify: the canvases the sampler will probably ask for next, computed in the
forward it runs anyway.

A pass over canvas X usually commits one token at X's first masked position p, so the
next pass reads X with p filled. Drafts guess that token (and the ones after it); each
guess is a canvas: X + guess at p, X + guesses at p and p+1, ... These canvases ride in
the same forward as X (`canvas_logits` over a (1 + width, N) batch: one context, one read
of every weight, a few more rows). When the sampler's next canvas is one of them, its
logits are there: the pass is replayed without a forward (engine/request.py, InfillRun). The
sampler itself is untouched, so every middle is the one it writes without drafts, bit for
bit (a row's logits do not depend on the rows beside it from 4 rows on, engine/batching.py);
only the forwards spent change. A wrong draft costs its rows and nothing else.

A guess that fills X's last masked position is a full canvas, which the sampler never
reads: with no end written it grows the canvas by a block of masks first. That grown
canvas is the guess then (`_grown`), one block longer than X, so it cannot share X's
(B, N) batch: the pass runs as a packed one (`canvas_logits_many`, rows of several
lengths, attention per canvas, as batching packs requests), not on the first pass (which
encodes the context with (B, N) canvases).

The guesses come from the draft sources (engine/draft_sources.py: the copy rule's chains,
the workspace's lines, the model's own top token); `InfillResult.lookahead` counts, by
source, the tokens committed by passes replayed from their canvases
(`InfillResult.lookahead_passes` counts the passes).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Sequence

import torch

from engine.draft_sources import CHAIN, CanvasView, DraftSource

if TYPE_CHECKING:
    from engine.sampler import Denoising


@dataclass(frozen=True)
class Guess:
    """A canvas the next pass may read, and the source of the tokens that differ from the
    canvas being computed."""

    canvas: tuple[int, ...]
    source: str
    depth: int = 1  # how many of its tokens are guessed (the length of its chain's prefix)


def _grown(run: "Denoising", canvas: tuple[int, ...]) -> Optional[tuple[int, ...]]:
    """The canvas the next pass reads after a pass that fills `canvas`'s last masked
    position with no end: the same ids and the next block of masks (sampler.grow), or
    None where the sampler would stop instead (an end written, max_tokens reached)."""
    tok = run.canvas.tok
    if tok.eom_id in canvas or len(canvas) >= run.max_tokens:
        return None
    return canvas + (tok.mask_id,) * min(run.settings.block_size, run.max_tokens - len(canvas))


def guesses(run: "Denoising", ids: Sequence[int], previous: Optional[torch.Tensor], sources: Sequence[DraftSource], width: int, grown: bool = False) -> list[Guess]:
    """Up to `width` canvases the pass after the one over `ids` may read: `ids` with its
    first masked position (and the next ones) filled by each source's proposals, one
    canvas per prefix of a proposal. A guess that fills the last masked position is
    the grown canvas the sampler reads next (`_grown`: one block longer, so only where
    the forward can take canvases of several lengths, `grown`); without it, never a full
    canvas. `previous`: the logits of the pass that produced `ids`, None on the first."""
    tok = run.canvas.tok
    if width <= 0 or tok.mask_id not in ids:
        return []
    p = list(ids).index(tok.mask_id)
    view = CanvasView(run, tuple(ids), p, previous)
    chains = [(proposal.source, list(proposal.tokens)) for source in sources for proposal in source.propose(view)]
    if p == 0 and run.first_allowed is not None:  # a healed word: position 0 holds only its continuations
        chains = [(source, chain) for source, chain in chains if chain[0] < run.first_allowed.shape[0] and bool(run.first_allowed[chain[0]])]
    out: list[Guess] = []
    seen = {tuple(ids)}
    for depth in range(1, CHAIN + 1):  # every source's first guess before anyone's second
        for source, chain in chains:
            if len(chain) < depth or len(out) >= width:
                continue
            canvas = list(ids)
            ok = True
            for k, token in enumerate(chain[:depth]):
                position = p + k
                if position >= len(canvas) or canvas[position] != tok.mask_id:
                    ok = False
                    break
                canvas[position] = token
            filled = tuple(canvas)
            key = filled if tok.mask_id in filled else _grown(run, filled) if grown else None
            if ok and key is not None and key not in seen:
                seen.add(key)
                out.append(Guess(key, source, depth))
    return out
