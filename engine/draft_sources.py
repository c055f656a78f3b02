"""Where drafts come from: every source proposes tokens, with the evidence for them.

A draft is a guess the model is asked to confirm, never text shown unconfirmed. Each
source implements one method, `propose(view)`: token sequences that continue the canvas
at its first masked position, each a `Proposal` naming its source and its evidence. The
sources a request uses:

- `CopyChains` ("copy"): the copy rule's guesses chained (engine/copying.py: the token
  that followed the last 2-4 tokens where they occur in the workspace, prefix or suffix);
- `WorkspaceLines` ("workspace"): the workspace's whole lines for the cursor's line
  (engine/workspace/retrieve.py) that agree with the canvas so far;
- `ModelTop` ("model"): the model's own likeliest token there in the previous pass;
- `HeaderKeywords` ("header"): where the cursor's line must open a block, the keyword a
  block header starts with (grammars/headers.py), scored by the first pass.

Verification is the model's, in the forward it runs anyway:
- a proposal's canvas rides as extra rows of the pass (engine/lookahead.py); when the
  sampler asks for that canvas next, its pass is replayed from those rows: the sampler's
  own decision, so the middle is the one it writes without drafts, bit for bit;
- a whole line (the workspace's, ended by the end of middle) is judged by the first pass
  over the all-masked canvas: the accept rule (engine/drafts.py `verify`) reads the
  model's log-probabilities of its tokens with the source's evidence, and a kept line is
  the first candidate's middle;
- a header keyword seeds a candidate's canvas: the likeliest keyword by the first pass
  whose header the final syntax check accepts.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Mapping, Optional, Protocol, Sequence

import torch

from engine.copying import COPY_NGRAMS
from engine.drafts import Candidates
from grammars.headers import HEADER_WORDS

if TYPE_CHECKING:
    from engine.healing import Healing
    from engine.sampler import Denoising
    from engine.tokenizer import Tokenizer
    from engine.types import SyntaxConstraint

CHAIN = 5  # the longest run of tokens one source proposes per pass (each prefix of it is a canvas)
MODEL_GUESSES = 1  # the model's own guesses at p: its top tokens (on the dev lines its 2nd-4th were asked for 1 time in 25)


@dataclass(frozen=True)
class Proposal:
    """Tokens a source proposes from the canvas's first masked position on."""

    tokens: tuple[int, ...]
    source: str
    evidence: Mapping[str, float] = field(default_factory=dict)  # what the source knows of it (a draft's index, a log-probability)


@dataclass(frozen=True)
class CanvasView:
    """What a source sees of the pass to come: the sampler's state, the canvas being
    computed, its first masked position, and the previous pass's (N, V) logits (None on
    the first)."""

    run: "Denoising"
    ids: tuple[int, ...]
    first_masked: int
    previous: Optional[torch.Tensor]


class DraftSource(Protocol):
    name: str

    def propose(self, view: CanvasView) -> list[Proposal]: ...


class CopyChains:
    """The copy rule's guess at the first masked position, chained up to CHAIN tokens
    (ending after a new line, as the sampler's copy run does)."""

    name = "copy"

    def propose(self, view: CanvasView) -> list[Proposal]:
        run = view.run
        index = run.copy_index
        if index is None:
            return []
        tok = run.canvas.tok
        left = list(index.source[-COPY_NGRAMS[0]:]) + list(view.ids[: view.first_masked])
        chain: list[int] = []
        while len(chain) < CHAIN:
            token = index.guess(left[-COPY_NGRAMS[0]:])
            if token is None or token in tok.special_ids:
                break
            chain.append(token)
            left.append(token)
            if "\n" in tok.piece(token):
                break
        return [Proposal(tuple(chain), self.name)] if chain else []


class WorkspaceLines:
    """The workspace's whole lines for the cursor's line (`Candidates`, engine/drafts.py),
    each as the rest of its tokens where it agrees with the canvas so far."""

    name = "workspace"

    def __init__(self, found: Optional[Candidates]) -> None:
        self.found = found

    def propose(self, view: CanvasView) -> list[Proposal]:
        if self.found is None:
            return []
        p, eom = view.first_masked, view.run.canvas.tok.eom_id
        out = []
        for index, draft in enumerate(self.found.tokens):
            if len(draft) > p and tuple(draft[:p]) == tuple(view.ids[:p]):
                chain = list(draft[p : p + CHAIN])
                chain = chain[: chain.index(eom)] if eom in chain else chain
                if chain:
                    out.append(Proposal(tuple(chain), self.name, {"draft": index}))
        return out


class ModelTop:
    """The model's own likeliest tokens at the first masked position in the previous pass
    (it was masked then too: one pass stale); never the mask or the end (an end closes the
    canvas: no next pass to draft for)."""

    name = "model"

    def __init__(self, count: int) -> None:
        self.count = count

    def propose(self, view: CanvasView) -> list[Proposal]:
        previous, p, run = view.previous, view.first_masked, view.run
        if previous is None or p >= previous.shape[0] or self.count <= 0:
            return []
        tok = run.canvas.tok
        row = previous[p].float().clone()
        row[tok.mask_id] = float("-inf")
        row[tok.eom_id] = float("-inf")
        if p == 0 and run.first_allowed is not None and run.first_allowed.shape[0] == row.shape[0]:
            row[~run.first_allowed] = float("-inf")
        top = row.topk(min(self.count, row.shape[0]))
        return [Proposal((int(t),), self.name, {"logit": float(v)}) for v, t in zip(top.values.tolist(), top.indices.tolist())]


def lookahead_sources(found: Optional[Candidates]) -> list[DraftSource]:
    """The sources whose proposals ride in each pass, in the order their first guesses are
    taken (engine/lookahead.py)."""
    return [CopyChains(), WorkspaceLines(found), ModelTop(MODEL_GUESSES)]


@dataclass(frozen=True)
class HeaderKeywords:
    """Where the cursor's line must open a block: the tokens a header there starts with
    (its indentation still to write, then a keyword of HEADER_WORDS[language])."""

    language: str
    lead: str  # what the header writes before its keyword (the healed cut, then the indentation)
    opener: str  # the indentation a header on the cursor's line writes first ("" when typed)

    def seed(self, tok: "Tokenizer", first_logits: torch.Tensor, constraint: Optional["SyntaxConstraint"], healing: "Healing", prefix: str, suffix: str) -> Optional[list[int]]:
        """The tokens of the keyword the first pass (`first_logits`, all positions masked)
        finds likeliest among those that fit the first canvas and whose header the final
        check accepts (a line of its own before the suffix's code); None when none does."""
        width = first_logits.shape[0]
        logp = torch.log_softmax(first_logits.float(), dim=-1)
        user_prefix = healing.user_prefix(prefix)
        end = "\n" if suffix.split("\n", 1)[0].strip() else ""
        best: Optional[tuple[float, list[int]]] = None
        for word, rest in HEADER_WORDS.get(self.language, {}).items():
            ids = tok.encode(self.lead + word)
            if not ids or len(ids) >= width or tok.decode(ids) != self.lead + word:
                continue
            if constraint is not None and not constraint.accept_final(user_prefix, self.opener + word + rest + end, suffix):
                continue
            score = sum(float(logp[i, t]) for i, t in enumerate(ids))
            if best is None or score > best[0]:
                best = (score, ids)
        return None if best is None else best[1]
