"""FamilyModel: a loaded open checkpoint behind the engine's DenoisingModel protocol.

A denoising pass scores the canvas laid out the family's way, e.g. for Dream

    <bos> prefix [canvas: N tokens] suffix <eos>

Because these models attend bidirectionally, the context's keys and values depend on the
canvas, so no cache is exact. Two modes:

* exact (policy.refresh_every == 1): every pass runs the whole sequence — the reference;
* dual cache (Fast-dLLM's "DualCache"): a *refresh* pass runs the whole sequence and keeps
  every layer's keys/values of the context (prefix side and suffix side); the passes after
  it recompute only the canvas rows (plus the row just before the canvas when logits are
  shifted) against those stale context keys/values. A refresh happens whenever the canvas
  length or batch changes — the sampler grows the canvas one block at a time, so that is
  "once per block" — and, optionally, every `refresh_every` passes within a block.
  docs/families.md reports how far the cached logits drift from the exact ones.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import torch

from engine.families.network import BidirectionalDecoder, KVBuffer, LayerKV
from engine.families.spec import FamilySpec
from engine.families.tokens import SpecialIds


@dataclass(frozen=True)
class CachePolicy:
    """refresh_every: 1 = exact (no cache); 0 = refresh only when the canvas length or batch
    changes (once per block); k > 1 = also refresh every k passes within a block."""

    refresh_every: int = 0

    @property
    def exact(self) -> bool:
        return self.refresh_every == 1

    @classmethod
    def parse(cls, text: str) -> "CachePolicy":
        """'exact' | 'block' | 'every:K'."""
        if text == "exact":
            return cls(1)
        if text == "block":
            return cls(0)
        if text.startswith("every:") and text[6:].isdigit() and int(text[6:]) >= 1:
            return cls(int(text[6:]))
        raise ValueError(f"unknown cache policy {text!r}; use exact, block or every:K")

    def describe(self) -> str:
        return "exact" if self.exact else ("block" if self.refresh_every == 0 else f"every:{self.refresh_every}")


@dataclass
class FamilyContext:
    """Per-request state. `head` precedes the canvas, `tail` follows it.

    The request's ids are deliberately not called `prefix_ids` / `suffix_ids`: the engine
    counts context tokens as reused from a previous request when it finds those, and
    nothing carries over between requests here (see encode_context)."""

    prefix_tokens: list[int]
    suffix_tokens: list[int]
    head: list[int]
    tail: list[int]
    # Dual cache: per layer, keys/values of every position outside the recomputed span
    # plus a slot for the span (KVBuffer); valid for one canvas length and batch size.
    kv: Optional[list[KVBuffer]] = None
    kv_shape: tuple[int, int] = (-1, -1)  # (batch, canvas length) the kv was made for
    passes_since_refresh: int = 0
    refreshes: int = 0
    cached_passes: int = 0
    cached_context_tokens: int = 0  # context tokens served from the cache, summed over passes
    _key_mask: dict = field(default_factory=dict)


class FamilyModel:
    """Implements engine.types.DenoisingModel for a family checkpoint."""

    # The family's own prompt layout (spec.before_prefix) decides which tokens precede the
    # prefix; the engine must not add the tokenizer's bos on top (Open-dLLM adds none).
    lays_out_prompt = True

    def __init__(self, net: BidirectionalDecoder, spec: FamilySpec, ids: SpecialIds, tokenizer_vocab: int, policy: CachePolicy = CachePolicy()):
        self.net = net
        self.spec = spec
        self.ids = ids
        self.policy = policy
        # Embedding rows beyond the tokenizer are padding (Qwen pads 151665 -> 151936):
        # never let the sampler pick one.
        self.tokenizer_vocab = min(tokenizer_vocab, net.cfg.vocab_size)

    def with_policy(self, policy: CachePolicy) -> "FamilyModel":
        """The same network (no copy) under another cache policy."""
        return FamilyModel(self.net, self.spec, self.ids, self.tokenizer_vocab, policy)

    # ------------------------------------------------------------------ layout
    def _role_ids(self, roles: tuple[str, ...]) -> list[int]:
        out = []
        for role in roles:
            value = vars(self.ids)[role]  # a role named by the layout: a field of the family's TokenIds
            if value is not None:
                out.append(value)
        return out

    def encode_context(self, prefix_ids: list[int], suffix_ids: list[int], reuse: object = None) -> FamilyContext:
        """Lay out the context. Nothing is computed yet: with bidirectional attention the
        context's keys/values depend on the canvas, so the first pass computes them.
        `reuse` is accepted for the protocol but cannot help for the same reason."""
        lead = self._role_ids(self.spec.before_prefix)
        prefix = list(prefix_ids)
        if lead and prefix[: len(lead)] == lead:  # the caller already added the bos
            lead = []
        head = lead + prefix
        tail = list(suffix_ids) + self._role_ids(self.spec.after_suffix)
        return FamilyContext(prefix_tokens=list(prefix_ids), suffix_tokens=list(suffix_ids), head=head, tail=tail)

    def _sequence(self, ctx: FamilyContext, canvas: torch.Tensor) -> torch.Tensor:
        B = canvas.shape[0]
        dev = canvas.device
        head = torch.tensor(ctx.head, dtype=torch.long, device=dev).expand(B, -1)
        tail = torch.tensor(ctx.tail, dtype=torch.long, device=dev).expand(B, -1)
        return torch.cat([head, canvas, tail], dim=1)  # (B, T)

    def _key_mask(self, ids: torch.Tensor) -> Optional[torch.Tensor]:
        if self.spec.pad_is_attended:
            return None
        return ids != self.ids.pad  # (B, T)

    def _span_start(self, ctx: FamilyContext) -> int:
        """First recomputed position: the canvas, or the row before it when that row's
        hidden state scores canvas position 0 (shifted logits)."""
        P = len(ctx.head)
        return P - 1 if (self.spec.shift_logits and P > 0) else P

    def _rows_to_logits(self, hidden: torch.Tensor, ctx: FamilyContext, offset: int, N: int) -> torch.Tensor:
        """hidden (B, R, C) for sequence positions offset.. -> canvas logits (B, N, V)."""
        P = len(ctx.head)
        if self.spec.shift_logits:
            # Position i scores token i+1; canvas position 0 at the very start of the
            # sequence has no predecessor and uses its own row, as Dream's code does.
            rows = [max(P + j - 1, 0) - offset for j in range(N)]
        else:
            rows = [P + j - offset for j in range(N)]
        index = torch.tensor(rows, device=hidden.device)
        logits = self.net.logits(hidden.index_select(1, index))  # (B, N, V)
        if self.tokenizer_vocab < logits.shape[-1]:
            logits[..., self.tokenizer_vocab :] = float("-inf")
        return logits

    # ------------------------------------------------------------------ passes
    @torch.no_grad()
    def full_logits(self, ctx: FamilyContext, canvas_ids: torch.Tensor, collect: bool = False) -> tuple[torch.Tensor, Optional[list[LayerKV]]]:
        """The reference pass: the whole sequence, no cache. -> (B, N, V), per-layer K/V."""
        canvas_ids = canvas_ids.to(self.net.device)
        seq = self._sequence(ctx, canvas_ids)
        positions = torch.arange(seq.shape[1], device=seq.device)
        hidden, kvs = self.net(seq, positions, key_mask=self._key_mask(seq), collect=collect)
        return self._rows_to_logits(hidden, ctx, 0, canvas_ids.shape[1]), kvs

    @torch.no_grad()
    def canvas_logits(self, cache: FamilyContext, canvas_ids: torch.Tensor) -> torch.Tensor:
        """(B, N) canvas ids -> (B, N, V) float logits."""
        ctx = cache
        canvas_ids = canvas_ids.to(self.net.device)
        B, N = canvas_ids.shape
        if self.policy.exact:
            return self.full_logits(ctx, canvas_ids)[0]
        stale = ctx.kv is None or ctx.kv_shape != (B, N)
        due = self.policy.refresh_every > 1 and ctx.passes_since_refresh >= self.policy.refresh_every
        if stale or due:
            return self._refresh(ctx, canvas_ids)
        return self._cached_pass(ctx, canvas_ids)

    def _refresh(self, ctx: FamilyContext, canvas_ids: torch.Tensor) -> torch.Tensor:
        logits, kvs = self.full_logits(ctx, canvas_ids, collect=True)
        assert kvs is not None
        B, N = canvas_ids.shape
        start, end = self._span_start(ctx), len(ctx.head) + N
        # Keep the context's keys/values (everything outside [start, end)) followed by a
        # slot the cached passes overwrite with the span's fresh keys/values.
        ctx.kv = [KVBuffer(self._slotted(k, start, end), self._slotted(v, start, end), k.shape[2] - (end - start)) for k, v in kvs]
        ctx.kv_shape = (B, N)
        ctx.passes_since_refresh = 1
        ctx.refreshes += 1
        ctx._key_mask.clear()
        return logits

    @staticmethod
    def _slotted(t: torch.Tensor, start: int, end: int) -> torch.Tensor:
        """(B, H, T, D) -> (B, H, T, D) reordered as [before start | after end | span]."""
        return torch.cat([t[:, :, :start], t[:, :, end:], t[:, :, start:end]], dim=2)

    def _cached_pass(self, ctx: FamilyContext, canvas_ids: torch.Tensor) -> torch.Tensor:
        B, N = canvas_ids.shape
        start, P = self._span_start(ctx), len(ctx.head)
        dev = canvas_ids.device
        span = canvas_ids
        if start < P:  # the row before the canvas is recomputed too (shifted logits)
            span = torch.cat([torch.tensor(ctx.head[start:P], dtype=torch.long, device=dev).expand(B, -1), canvas_ids], dim=1)
        positions = torch.arange(start, P + N, device=dev)
        key_mask = None
        if not self.spec.pad_is_attended:
            ctx_ids = ctx._key_mask.get("ids")
            if ctx_ids is None:
                ctx_ids = torch.tensor(ctx.head[:start] + ctx.tail, dtype=torch.long, device=dev)
                ctx._key_mask["ids"] = ctx_ids
            key_mask = torch.cat([(ctx_ids != self.ids.pad).expand(B, -1), span != self.ids.pad], dim=1)
        # Cached keys sit before the span's own keys in the attention; order is irrelevant
        # to attention (no causal mask), positions live in the rotated keys.
        hidden, _ = self.net(span, positions, key_mask=key_mask, past=ctx.kv)
        ctx.passes_since_refresh += 1
        ctx.cached_passes += 1
        ctx.cached_context_tokens += start + len(ctx.tail)
        return self._rows_to_logits(hidden, ctx, start, N)
