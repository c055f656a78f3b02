"""The infill transformer: a masked-diffusion model over a canvas between prefix and suffix.

Sequence layout (one forward pass, training form):

    [ suffix tokens | prefix tokens | canvas tokens ]

with RoPE positions in *document* order: the prefix sits at 0..P-1, the canvas at
P..P+N-1 and the suffix at P+N..P+N+S-1. The order in the sequence only matters for the
attention layout, which is what makes the context cache exact:

* prefix tokens attend causally to the prefix only (a plain causal LM stream, so typing
  at the cursor only appends to its cache, and every prefix position also trains a
  next-token head: signal on every computed position, not only on the canvas);
* suffix tokens attend bidirectionally within the suffix only (their keys and values do
  not depend on the prefix or the canvas, so they are cached before RoPE and rotated to
  wherever the canvas ends);
* canvas tokens attend to everything: suffix, prefix and the whole canvas.

So the context's keys and values never depend on the canvas, and a denoising pass
computes only the N canvas rows. See DESIGN.md ("Exact, reusable KV cache").
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Callable, NamedTuple, Optional, Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F

SEG_PAD, SEG_SUFFIX, SEG_PREFIX, SEG_CANVAS = 0, 1, 2, 3


@dataclass(frozen=True)
class ModelConfig:
    vocab_size: int = 8192
    d_model: int = 256
    n_layers: int = 6
    n_heads: int = 8
    ffn_hidden: int = 688  # SwiGLU width, ~8/3 d rounded to a multiple of 16
    max_position: int = 4096  # RoPE table size; positions beyond it are an error
    rope_theta: float = 10000.0
    norm_eps: float = 1e-5
    tie_embeddings: bool = True

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    @classmethod
    def from_dict(cls, data: dict) -> "ModelConfig":
        names = {f.name for f in fields(cls)}
        unknown = set(data) - names
        if unknown:
            raise ValueError(f"unknown model config keys: {sorted(unknown)}")
        return cls(**data)

    def to_dict(self) -> dict:
        return asdict(self)

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_dict(), indent=2) + "\n")


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Statistics in fp32 whatever the input; the residual stream is fp32 here, so this
        # is the fused kernel (input and weight of one dtype).
        return F.rms_norm(x.float(), (x.shape[-1],), self.weight.float(), self.eps).to(x.dtype)


def rope_tables(cfg: ModelConfig) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-position rotation tables at full head width: cos twice, and -sin | +sin.

    Full width lets `apply_rope` rotate with two multiplies and one add, in the input's
    own dtype (bf16 under autocast): measured 2.5x faster than slicing both halves up
    to fp32 and back, and RoPE runs twice per layer per step.
    """
    half = cfg.head_dim // 2
    inv_freq = 1.0 / (cfg.rope_theta ** (torch.arange(0, half, dtype=torch.float32) / half))
    angles = torch.outer(torch.arange(cfg.max_position, dtype=torch.float32), inv_freq)  # (Tmax, half)
    cos, sin = angles.cos(), angles.sin()
    return torch.cat((cos, cos), dim=-1), torch.cat((-sin, sin), dim=-1)  # (Tmax, Dh) each


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate pairs (x[..., i], x[..., i + Dh/2]) by per-position angles.

    x: (B, H, T, Dh); cos, sin: (B, 1, T, Dh) from `rope_tables`, gathered at the tokens'
    positions. out = x * cos + (x2 | x1) * (-sin | sin), i.e. (x1 cos - x2 sin, x2 cos + x1 sin).
    """
    half = x.shape[-1] // 2
    swapped = torch.cat((x[..., half:], x[..., :half]), dim=-1)
    return x * cos.to(x.dtype) + swapped * sin.to(x.dtype)


class Attention(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.n_heads = cfg.n_heads
        self.head_dim = cfg.head_dim
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model, bias=False)
        self.out = nn.Linear(cfg.d_model, cfg.d_model, bias=False)

    def project(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=-1)
        shape = (B, T, self.n_heads, self.head_dim)
        return (q.view(shape).transpose(1, 2), k.view(shape).transpose(1, 2), v.view(shape).transpose(1, 2))  # (B, H, T, Dh)

    def merge(self, y: torch.Tensor) -> torch.Tensor:
        B, H, T, D = y.shape  # (B, H, Tq, Dh) -> (B, Tq, C), then the output projection
        return self.out(y.transpose(1, 2).reshape(B, T, H * D))


@dataclass(frozen=True)
class BlockLayout:
    """Training rows as aligned blocks: [suffix | prefix | canvas copy 0 | copy 1 | ...].

    Every row has the same block sizes (each segment right-padded to the batch's
    longest), so attention can run per block instead of over the whole (T, T) square:
    the suffix attends within itself, the prefix causally (no mask: its pads come after
    it), each canvas copy to the context and itself. That is the same attention as
    `InfillTransformer.attention_mask` (a test checks it) at about half the work, and
    attention's backward pass was the largest single cost of a CPU training step.
    """

    suffix: int
    prefix: int
    canvas: int
    copies: int = 1

    @property
    def context(self) -> int:
        return self.suffix + self.prefix

    def masks(self, segments: torch.Tensor) -> tuple[Optional[torch.Tensor], list[torch.Tensor]]:
        """(suffix mask (B,1,S,S) or None, one (B,1,N,S+P+N) mask per canvas copy).

        A pad query may always see itself, so no softmax row is empty."""
        S, P, N = self.suffix, self.prefix, self.canvas
        real = segments != SEG_PAD  # (B, T)
        eye_n = torch.eye(N, dtype=torch.bool, device=segments.device)
        suffix_mask = None
        if S:
            eye_s = torch.eye(S, dtype=torch.bool, device=segments.device)
            suffix_mask = (real[:, None, None, :S] | eye_s).contiguous()
        context_keys = real[:, None, None, : S + P].expand(-1, 1, N, -1)
        canvas_masks = []
        for c in range(self.copies):
            own = self.context + c * N
            own_keys = real[:, None, None, own : own + N] | eye_n
            canvas_masks.append(torch.cat((context_keys, own_keys.expand(-1, 1, N, -1)), dim=-1))
        return suffix_mask, canvas_masks

    def attention(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, masks) -> torch.Tensor:
        """Per-block scaled dot-product attention; (B, H, T, Dh) in and out."""
        suffix_mask, canvas_masks = masks
        S, N = self.suffix, self.canvas
        context, prefix = slice(0, self.context), slice(S, self.context)
        parts = []
        if S:
            parts.append(F.scaled_dot_product_attention(q[:, :, :S], k[:, :, :S], v[:, :, :S], attn_mask=suffix_mask))
        parts.append(F.scaled_dot_product_attention(q[:, :, prefix], k[:, :, prefix], v[:, :, prefix], is_causal=True))
        for c, mask in enumerate(canvas_masks):
            own = slice(self.context + c * N, self.context + (c + 1) * N)
            keys = torch.cat((k[:, :, context], k[:, :, own]), dim=2)
            values = torch.cat((v[:, :, context], v[:, :, own]), dim=2)
            parts.append(F.scaled_dot_product_attention(q[:, :, own], keys, values, attn_mask=mask))
        return torch.cat(parts, dim=2)


class FeedForward(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.gate_up = nn.Linear(cfg.d_model, 2 * cfg.ffn_hidden, bias=False)
        self.down = nn.Linear(cfg.ffn_hidden, cfg.d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = self.gate_up(x).chunk(2, dim=-1)
        return self.down(F.silu(gate) * up)


# How a block's queries meet their keys: `attend(q, k, v)` gets this block's queries, keys
# and values, (B, H, T, Dh) each, q and k rotated (unless the block was told to hand k over
# unrotated), and returns the attended values (B, H, T, Dh) for the output projection. The
# strategy is what differs between the model's passes: which other keys and values to
# gather (a cache, a mask, a layout of blocks) and which to keep. Returning None says the
# caller wanted only this layer's keys and values (the last layer of a context encoding,
# whose attention output and FFN would feed nothing): the block then stops there.
Attend = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], Optional[torch.Tensor]]


def _attention_inputs(block: "Block", x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    q, k, v = block.attn.project(block.attn_norm(x))
    return apply_rope(q, cos, sin), apply_rope(k, cos, sin), v


def _attention_output_and_ffn(block: "Block", x: torch.Tensor, attended: torch.Tensor) -> torch.Tensor:
    x = x + block.attn.merge(attended)
    return x + block.ffn(block.ffn_norm(x))


class Block(nn.Module):
    """One pre-norm transformer layer: RoPE attention, then a SwiGLU FFN, each residual."""

    # The per-layer work around attention (norms, projections, RoPE, FFN, residuals) as two
    # plain functions of (block, ...), so InfillTransformer.compile_for_training can swap in
    # one compiled copy shared by every block.
    inputs_step = staticmethod(_attention_inputs)
    output_step = staticmethod(_attention_output_and_ffn)

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.attn_norm = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.attn = Attention(cfg)
        self.ffn_norm = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.ffn = FeedForward(cfg)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, attend: Attend, rotate_keys: bool = True) -> torch.Tensor:
        """x (B, T, C) at the positions whose RoPE tables are cos, sin -> x after this layer.

        `attend` is the attention strategy (see `Attend`). With `rotate_keys` False it gets
        the keys before RoPE and rotates them itself: the suffix cache stores them so,
        since where the suffix will sit is known only once the canvas size is."""
        if rotate_keys:
            q, k, v = self.inputs_step(self, x, cos, sin)
        else:
            q, k, v = self.attn.project(self.attn_norm(x))
            q = apply_rope(q, cos, sin)
        attended = attend(q, k, v)
        if attended is None:
            return x
        return self.output_step(self, x, attended)


@dataclass
class LayerKV:
    """Keys and values of context tokens for one layer.

    Prefix keys are stored rotated (their positions 0..P-1 never move). Suffix keys are
    stored *before* RoPE, because where the suffix starts depends on the canvas length.
    """

    prefix_k: torch.Tensor  # (1, H, P, Dh) rotated
    prefix_v: torch.Tensor  # (1, H, P, Dh)
    suffix_k: torch.Tensor  # (1, H, S, Dh) not rotated
    suffix_v: torch.Tensor  # (1, H, S, Dh)


@dataclass
class EncodedContext:
    """One request's encoded context: the ids it encoded and each layer's keys and values
    (an engine.types.ReusableContext; engine/context_cache.py keeps them for reuse)."""

    prefix_ids: list[int]
    suffix_ids: list[int]
    layers: list[LayerKV]
    # Suffix keys rotated for one particular suffix start position, reused across passes.
    _rotated_for: int = -1
    _rotated: Optional[list[torch.Tensor]] = None
    # Per canvas size, per layer, [rotated suffix | prefix | canvas slot] keys and values,
    # and views of their canvas rows, so a batched pass copies only the canvas rows in
    # (canvas_logits_many). Two sizes at most: a pass with a grown canvas drafted beside it
    # (engine/lookahead.py) reads this size and the next.
    _slots: Optional[dict[int, list["CanvasSlot"]]] = None

    @property
    def prefix_len(self) -> int:
        return len(self.prefix_ids)

    @property
    def suffix_len(self) -> int:
        return len(self.suffix_ids)

    @property
    def nbytes(self) -> int:
        """Memory held by the cached keys and values (what an engine's cache budget counts)."""
        return sum(t.nelement() * t.element_size() for layer in self.layers for t in (layer.prefix_k, layer.prefix_v, layer.suffix_k, layer.suffix_v))

    def release_scratch(self) -> None:
        """Drop the buffers a batched pass built (`_slots`), once no pass needs them."""
        self._slots = None


def _kept_prefix(reuse: Optional["EncodedContext"], prefix_ids: list[int]) -> int:
    """How many leading prefix tokens a cached context still holds exactly (the prefix is
    causal: its keys up to the first changed token stay valid)."""
    keep = 0
    if reuse is not None:
        limit = min(len(reuse.prefix_ids), len(prefix_ids))
        while keep < limit and reuse.prefix_ids[keep] == prefix_ids[keep]:
            keep += 1
    return keep


class CanvasSlot(NamedTuple):
    """One layer's keys and values for a batched pass, (1, H, S+P+N, Dh) each, and views of
    their last N rows, where each pass writes its canvas keys and values."""

    keys: torch.Tensor
    values: torch.Tensor
    canvas_keys: torch.Tensor
    canvas_values: torch.Tensor


class ContextToEncode(NamedTuple):
    """A request of `InfillTransformer.encode_with_canvas_many` whose context is new (or
    grew): its window's token ids, its first canvases (B, N) (the asked one and the drafted
    ones beside it, engine/lookahead.py) and the cached context it builds on. Any 4-tuple
    in this order will do."""

    prefix_ids: list[int]
    suffix_ids: list[int]
    canvases: torch.Tensor  # (B, N)
    reuse: Optional["EncodedContext"] = None


class _FirstPass(NamedTuple):
    """One request's rows of a packed forward that encodes its context with its first
    canvases: [prefix tail | fresh suffix | B canvases] (T, S, B*N of them), and what its
    attention needs."""

    prefix_ids: list[int]
    suffix_ids: list[int]
    reuse: Optional["EncodedContext"]
    keep: int  # prefix tokens whose keys and values come from the reused cache
    parts: tuple[int, int, int]  # (T, S, B*N): B canvases of N rows
    canvases: int  # B
    reuse_suffix: bool
    ids: torch.Tensor  # (T+S+B*N,)
    positions: torch.Tensor  # (T+S+B*N,): the tail at keep..P-1, the suffix at 0..S-1, each canvas at P..P+N-1
    suffix_rope: Optional[tuple[torch.Tensor, torch.Tensor]]  # the whole suffix at P+N.., None without one
    tail_mask: torch.Tensor  # (1, 1, T, keep+T), causal
    empty: torch.Tensor  # (1, H, 0, Dh): no suffix keys or values

    @property
    def rows(self) -> int:
        return sum(self.parts)


def _packed_results(logits: torch.Tensor, firsts: Sequence["_FirstPass"], layers: Sequence[list["LayerKV"]], rotated: Sequence[list[torch.Tensor]],
                    lengths: Sequence[int]) -> tuple[list[tuple["EncodedContext", torch.Tensor]], list[torch.Tensor]]:
    """A packed pass's (canvas rows, V) `logits` handed back per request: each new
    context's cache (its layers' keys and values, its suffix keys rotated for the next
    pass of the same canvas size) with its canvases' logits, then each cached context's
    canvas logits, in the order the rows were packed."""
    encoded, at = [], 0
    for first, kv, suffix_keys in zip(firsts, layers, rotated):
        B, rows = first.canvases, first.parts[2]
        cache = EncodedContext(list(first.prefix_ids), list(first.suffix_ids), kv)
        cache._rotated_for, cache._rotated = len(first.prefix_ids) + rows // B, suffix_keys  # the next pass of this canvas size reuses them
        encoded.append((cache, logits[at : at + rows].view(B, rows // B, -1)))
        at += rows
    others = []
    for n in lengths:
        others.append(logits[at : at + n])
        at += n
    return encoded, others


class InfillTransformer(nn.Module):
    several_canvases = True  # canvas_logits reads (B, N) canvases over one context (engine/lookahead.py)

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.final_norm = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        if cfg.tie_embeddings:
            self.lm_head.weight = self.embed.weight
        cos, sin = rope_tables(cfg)
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)
        self.apply(self._init_weights)
        # Scaled init of residual projections (GPT-2) keeps early training stable.
        for name, p in self.named_parameters():
            if name.endswith("attn.out.weight") or name.endswith("ffn.down.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * cfg.n_layers))

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def _rope(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if not torch.compiler.is_compiling() and int(positions.max()) >= self.cfg.max_position:
            raise ValueError(f"position {int(positions.max())} exceeds max_position {self.cfg.max_position}")
        return self.rope_cos[positions].unsqueeze(1), self.rope_sin[positions].unsqueeze(1)  # (B, 1, T, Dh)

    # ----------------------------------------------------------------- training form
    @staticmethod
    def attention_mask(segments: torch.Tensor) -> torch.Tensor:
        """Boolean (B, 1, T, T) mask from per-token segment ids (see module docstring).

        Training may put several noised copies of one canvas after the context, with
        segment ids SEG_CANVAS, SEG_CANVAS + 1, ...: each copy sees the context and
        itself only, so the context is computed once for several canvas losses.
        """
        q = segments.unsqueeze(2)  # (B, T, 1)
        k = segments.unsqueeze(1)  # (B, 1, T)
        T = segments.shape[1]
        causal = torch.ones(T, T, dtype=torch.bool, device=segments.device).tril()
        context = (k == SEG_SUFFIX) | (k == SEG_PREFIX)
        allowed = (
            ((q == SEG_SUFFIX) & (k == SEG_SUFFIX))
            | ((q == SEG_PREFIX) & (k == SEG_PREFIX) & causal)
            | ((q >= SEG_CANVAS) & (context | (k == q)))
        )
        allowed = allowed | torch.eye(T, dtype=torch.bool, device=segments.device)  # pads see themselves: no NaN rows
        return allowed.unsqueeze(1)

    def forward(self, ids: torch.Tensor, positions: torch.Tensor, segments: torch.Tensor, layout: Optional[BlockLayout] = None) -> torch.Tensor:
        """Hidden states for a packed [suffix | prefix | canvas] batch.

        ids, positions, segments: (B, T) -> (B, T, C) after the final norm. With a
        `layout` (rows built as aligned blocks) attention runs per block; without one it
        runs over the whole sequence with `attention_mask` (any row layout).
        Logits are left to the caller so training can project only the rows with loss.
        """
        if layout is None:
            mask = self.attention_mask(segments)
            attention = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # noqa: E731
        else:
            masks = layout.masks(segments)
            attention = lambda q, k, v: layout.attention(q, k, v, masks)  # noqa: E731
        cos, sin = self._rope(positions)
        if torch.is_autocast_enabled(ids.device.type):  # cast the tables once, not per layer
            dtype = torch.get_autocast_dtype(ids.device.type)
            cos, sin = cos.to(dtype), sin.to(dtype)
        x = self.embed(ids)  # (B, T, C)
        for block in self.blocks:
            x = block(x, cos, sin, attention)
        return self.final_norm(x)

    def compile_for_training(self) -> None:
        """torch.compile the per-layer work around attention (norms, projections, RoPE,
        SwiGLU, residuals): one compiled graph shared by all layers, dynamic shapes so
        batches of any length reuse it; attention itself stays the eager SDPA kernel.
        Measured on the 2-core CPU: 1.3x faster steps after a few minutes of compiling
        (docs/training.md)."""
        inputs_step = torch.compile(_attention_inputs, dynamic=True)
        output_step = torch.compile(_attention_output_and_ffn, dynamic=True)
        for block in self.blocks:
            block.inputs_step, block.output_step = inputs_step, output_step

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.lm_head(hidden).float()

    # ------------------------------------------------------------- inference form
    @torch.no_grad()
    def encode_context(self, prefix_ids: list[int], suffix_ids: list[int], reuse: Optional[EncodedContext] = None) -> EncodedContext:
        """Keys and values of the context, reusing `reuse` where it is still exact.

        Prefix: causal, so the longest common token prefix with the cached one is kept
        and only the new tail is computed. Suffix: reused whole when unchanged.
        """
        device = self.embed.weight.device
        keep = _kept_prefix(reuse, prefix_ids)
        new_prefix = prefix_ids[keep:]
        layers: list[LayerKV] = []
        H, Dh = self.cfg.n_heads, self.cfg.head_dim
        empty = torch.zeros(1, H, 0, Dh, device=device, dtype=self.embed.weight.dtype)

        # Prefix tail: queries see cached prefix keys plus the causal part of the tail.
        x = self.embed(torch.tensor([new_prefix], device=device, dtype=torch.long)) if new_prefix else None
        if x is not None:
            pos = torch.arange(keep, keep + len(new_prefix), device=device).unsqueeze(0)
            cos, sin = self._rope(pos)
            n_new = len(new_prefix)
            mask = torch.ones(n_new, keep + n_new, dtype=torch.bool, device=device).tril(diagonal=keep).view(1, 1, n_new, keep + n_new)
        reuse_suffix = reuse is not None and reuse.suffix_ids == suffix_ids
        xs = None
        if not reuse_suffix and suffix_ids:
            xs = self.embed(torch.tensor([suffix_ids], device=device, dtype=torch.long))
            # Within the suffix only relative positions matter: rotate by 0..S-1.
            scos, ssin = self._rope(torch.arange(len(suffix_ids), device=device).unsqueeze(0))
        for i, block in enumerate(self.blocks):
            # Only keys and values are kept: the last layer's attention output and FFN
            # would feed nothing (about 1/n_layers of a cold encoding saved).
            last = i == len(self.blocks) - 1
            old = reuse.layers[i] if reuse is not None else None
            pk = old.prefix_k[:, :, :keep] if old is not None else empty
            pv = old.prefix_v[:, :, :keep] if old is not None else empty
            sk, sv = empty, empty
            if x is not None:

                def attend_prefix(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> Optional[torch.Tensor]:
                    nonlocal pk, pv  # the cached prefix grows by the tail's rotated keys
                    pk, pv = torch.cat([pk, k], dim=2), torch.cat([pv, v], dim=2)
                    return None if last else F.scaled_dot_product_attention(q, pk, pv, attn_mask=mask)

                x = block(x, cos, sin, attend_prefix)
            if reuse_suffix:
                sk, sv = old.suffix_k, old.suffix_v  # type: ignore[union-attr]
            elif xs is not None:

                def attend_suffix(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> Optional[torch.Tensor]:
                    nonlocal sk, sv
                    sk, sv = k, v  # cached before RoPE (LayerKV)
                    return None if last else F.scaled_dot_product_attention(q, apply_rope(k, scos, ssin), v)

                xs = block(xs, scos, ssin, attend_suffix, rotate_keys=False)
            layers.append(LayerKV(pk, pv, sk, sv))
        return EncodedContext(list(prefix_ids), list(suffix_ids), layers)

    @torch.no_grad()
    def encode_with_canvas(self, prefix_ids: list[int], suffix_ids: list[int], canvas_ids: torch.Tensor, reuse: Optional[EncodedContext] = None) -> tuple[EncodedContext, torch.Tensor]:
        """`encode_context` and the first `canvas_logits` in one forward pass.

        canvas_ids: (B, N) -> (the EncodedContext, (B, N, V) logits), equal to
        `canvas_logits(encode_context(prefix_ids, suffix_ids, reuse), canvas_ids)` up to
        float rounding (a matmul over more rows may sum in another order). B > 1: drafted
        canvases beside the first (engine/lookahead.py), each attending on its own rows.

        Why: a request's first canvas needs nothing from the encoding but its keys and
        values, layer by layer, and those are computed in the same layer. Packing the
        new context rows and the canvas rows into one sequence runs every linear layer
        once for both (one read of the weights, one pass of per-call overhead), as an
        autoregressive server's prefill also yields the first token. Attention stays per
        part: the prefix tail causally over the kept prefix and itself, the suffix within
        itself, the canvas over [suffix | prefix | canvas], as the two calls do. It is
        `encode_with_canvas_many` with one request: the same calls, the same bits.
        """
        (encoded,), _ = self._packed_forward([(prefix_ids, suffix_ids, canvas_ids, reuse)], (), ())
        return encoded

    @torch.no_grad()
    def encode_with_canvas_many(self, encodes: Sequence[ContextToEncode], caches: Sequence[EncodedContext] = (), canvases: Sequence[torch.Tensor] = ()) -> tuple[list[tuple[EncodedContext, torch.Tensor]], list[torch.Tensor]]:
        """Several requests' first passes (`encode_with_canvas`) in one forward, beside
        other requests' canvases over their cached contexts (`canvas_logits_many`).

        encodes[i]: (prefix ids, suffix ids, (B, N) canvases, reused context) -> (its
        EncodedContext, (B, N, V) logits); canvases[j]: (N_j,) ids over caches[j] ->
        (N_j, V). Every request's rows (a new context's tail and fresh suffix, its
        canvases; the other requests' canvas rows) are packed into one sequence, so each
        linear layer runs once for all of them (batching's gain: one read of the weights,
        one round of per-call overhead); attention runs request by request with the very
        calls its own pass makes. On one CPU thread a row's sums in a matmul are the same
        whatever rows share it from 4 rows on (MKL and oneDNN), so each request's logits
        and encoded context are bit for bit its own pass's (tests/test_packed_encoding.py);
        elsewhere they may differ in their last bits.
        """
        if len(caches) != len(canvases):
            raise ValueError(f"{len(caches)} contexts for {len(canvases)} canvases")
        return self._packed_forward(encodes, caches, canvases)

    def _packed_forward(self, encodes: Sequence[tuple], caches: Sequence[EncodedContext], canvases: Sequence[torch.Tensor]) -> tuple[list[tuple[EncodedContext, torch.Tensor]], list[torch.Tensor]]:
        """encode_with_canvas_many (and the two passes it generalises). Rows: every new
        context's request first, each [tail | fresh suffix | canvases], then the canvases
        over cached contexts."""
        device = self.embed.weight.device
        firsts = [self._first_pass(*request) for request in encodes]
        lengths = [int(ids.shape[0]) for ids in canvases]
        # Each cached context's keys and values laid out once per canvas size, so a pass
        # copies in only its canvas rows (see _canvas_slots).
        slots = [self._canvas_slots(cache, n) for cache, n in zip(caches, lengths, strict=True)]
        sizes = [first.rows for first in firsts] + lengths
        if not sizes:
            return [], []
        positions = [first.positions for first in firsts] + [torch.arange(cache.prefix_len, cache.prefix_len + n, device=device) for cache, n in zip(caches, lengths)]
        cos, sin = self._rope(torch.cat(positions).unsqueeze(0))  # (1, 1, R, Dh)
        x = self.embed(torch.cat([first.ids for first in firsts] + [ids.to(device) for ids in canvases]).unsqueeze(0))  # (1, R, C)
        n_new = len(firsts)
        layers: list[list[LayerKV]] = [[] for _ in firsts]
        rotated: list[list[torch.Tensor]] = [[] for _ in firsts]
        for i, block in enumerate(self.blocks):
            # The last layer's context rows feed nothing: only canvas rows go on from it.
            last = i == len(self.blocks) - 1
            q, k, v = block.attn.project(block.attn_norm(x))
            q, rotated_k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
            # Three splits per pass and layer, then a few calls per request: with many
            # requests a pass is mostly per-call overhead.
            qs, rks, vs = q.split(sizes, dim=2), rotated_k.split(sizes, dim=2), v.split(sizes, dim=2)
            ks = k.split(sizes, dim=2) if n_new else ()  # a new suffix's keys are kept before RoPE (LayerKV)
            outs: list[torch.Tensor] = []
            kept_rows: list[torch.Tensor] = []
            start = 0
            for j, size in enumerate(sizes):
                if j < n_new:
                    first = firsts[j]
                    old = first.reuse.layers[i] if first.reuse is not None else None
                    parts, layer, suffix_keys = self._first_pass_attention(first, qs[j], ks[j], rks[j], vs[j], old, last)
                    outs += parts
                    layers[j].append(layer)
                    rotated[j].append(suffix_keys)
                    if last:
                        kept_rows.append(x[:, start + first.parts[0] + first.parts[1] : start + size])
                else:
                    slot = slots[j - n_new][i]  # (1, H, S+P+N, Dh): the context, then this canvas
                    slot.canvas_keys.copy_(rks[j])
                    slot.canvas_values.copy_(vs[j])
                    outs.append(F.scaled_dot_product_attention(qs[j], slot.keys, slot.values))
                    if last and n_new:
                        kept_rows.append(x[:, start : start + size])
                start += size
            if last and n_new:
                x = torch.cat(kept_rows, dim=1) if len(kept_rows) > 1 else kept_rows[0]
            x = block.output_step(block, x, torch.cat(outs, dim=2) if len(outs) > 1 else outs[0])
        return _packed_results(self.logits(self.final_norm(x))[0], firsts, layers, rotated, lengths)

    def _first_pass(self, prefix_ids: list[int], suffix_ids: list[int], canvas_ids: torch.Tensor, reuse: Optional[EncodedContext] = None) -> _FirstPass:
        """A new context's rows [prefix tail | fresh suffix | canvases] with their positions
        and the prefix tail's causal mask."""
        B, N = canvas_ids.shape
        device = self.embed.weight.device
        keep = _kept_prefix(reuse, prefix_ids)
        tail = prefix_ids[keep:]
        reuse_suffix = reuse is not None and reuse.suffix_ids == suffix_ids
        fresh_suffix = [] if reuse_suffix else suffix_ids
        T, S, P = len(tail), len(fresh_suffix), len(prefix_ids)
        positions = torch.cat([
            torch.arange(keep, P, device=device),
            torch.arange(S, device=device),  # within the suffix only relative positions matter
            torch.arange(P, P + N, device=device).repeat(B),
        ])
        # The canvas sees the suffix right after itself: its keys rotated to P+N...
        suffix_rope = self._rope(torch.arange(P + N, P + N + len(suffix_ids), device=device).unsqueeze(0)) if suffix_ids else None
        tail_mask = torch.ones(T, keep + T, dtype=torch.bool, device=device).tril(diagonal=keep).view(1, 1, T, keep + T)
        ids = torch.cat([torch.tensor(tail + fresh_suffix, dtype=torch.long, device=device), canvas_ids.to(device).reshape(B * N)])
        empty = torch.zeros(1, self.cfg.n_heads, 0, self.cfg.head_dim, device=device, dtype=self.embed.weight.dtype)
        return _FirstPass(prefix_ids, suffix_ids, reuse, keep, (T, S, B * N), B, reuse_suffix, ids, positions, suffix_rope, tail_mask, empty)

    def _first_pass_attention(self, first: _FirstPass, q: torch.Tensor, k: torch.Tensor, rotated_k: torch.Tensor, v: torch.Tensor, old: Optional[LayerKV], last: bool) -> tuple[list[torch.Tensor], LayerKV, torch.Tensor]:
        """One layer's attention for a new context's rows, (1, H, T+S+B*N, Dh) each (q and
        `rotated_k` rotated, `k` not): (the attended rows, in order: the tail's, the
        suffix's, the canvases'; only the canvases' on the last layer), the layer's
        LayerKV (the kept prefix from `old` plus the tail's, the suffix's reused or fresh),
        and the suffix keys rotated for the canvas."""
        T, S, _ = first.parts
        q_t, q_s, q_c = q.split(first.parts, dim=2)
        k_t, k_s, k_c = rotated_k.split(first.parts, dim=2)
        v_t, v_s, v_c = v.split(first.parts, dim=2)
        pk = torch.cat([old.prefix_k[:, :, : first.keep], k_t], dim=2) if old is not None else k_t
        pv = torch.cat([old.prefix_v[:, :, : first.keep], v_t], dim=2) if old is not None else v_t
        if first.reuse_suffix:
            sk, sv = old.suffix_k, old.suffix_v  # type: ignore[union-attr]
        elif S:
            sk, sv = k[:, :, T : T + S], v_s  # LayerKV keeps suffix keys before RoPE
        else:
            sk, sv = first.empty, first.empty
        sk_canvas = apply_rope(sk, *first.suffix_rope) if sk.shape[2] else sk  # type: ignore[misc]
        canvas_out = self._canvases_attention(first.canvases, q_c, k_c, v_c, sk_canvas, sv, pk, pv)
        # The cache keeps copies: views would hold this pass's buffers (every request's rows) alive.
        layer = LayerKV(pk.contiguous(), pv.contiguous(), sk.contiguous(), sv.contiguous())
        if last:  # the context rows' last attention output and FFN feed nothing
            return [canvas_out], layer, sk_canvas
        outs = []
        if T:
            outs.append(F.scaled_dot_product_attention(q_t, pk, pv, attn_mask=first.tail_mask))
        if S:
            outs.append(F.scaled_dot_product_attention(q_s, k_s, v_s))
        outs.append(canvas_out)
        return outs, layer, sk_canvas

    @staticmethod
    def _canvases_attention(B: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, sk: torch.Tensor, sv: torch.Tensor, pk: torch.Tensor, pv: torch.Tensor) -> torch.Tensor:
        """B canvases' rows (1, H, B*N, Dh), each over [suffix | prefix | its own rows]."""
        if B == 1:
            return F.scaled_dot_product_attention(q, torch.cat([sk, pk, k], dim=2), torch.cat([sv, pv, v], dim=2))
        _, H, R, Dh = q.shape

        def each(t: torch.Tensor) -> torch.Tensor:  # (1, H, B*N, Dh) -> (B, H, N, Dh)
            return t.reshape(H, B, R // B, Dh).transpose(0, 1)

        keys = torch.cat([sk.expand(B, -1, -1, -1), pk.expand(B, -1, -1, -1), each(k)], dim=2)
        values = torch.cat([sv.expand(B, -1, -1, -1), pv.expand(B, -1, -1, -1), each(v)], dim=2)
        out = F.scaled_dot_product_attention(each(q), keys, values)  # (B, H, N, Dh)
        return out.transpose(0, 1).reshape(1, H, R, Dh)

    def _rotated_suffix_keys(self, cache: EncodedContext, start: int) -> list[torch.Tensor]:
        """Suffix keys rotated to absolute positions start..start+S-1, memoised per start."""
        if cache._rotated_for != start or cache._rotated is None:
            device = self.embed.weight.device
            S = cache.suffix_len
            if S == 0:
                cache._rotated = [layer.suffix_k for layer in cache.layers]
            else:
                # Within-suffix attention used positions 0..S-1; the canvas sees them at start+j.
                # Rotations compose, so the stored (unrotated) keys are rotated by start + j.
                pos = torch.arange(start, start + S, device=device).unsqueeze(0)
                cos, sin = self._rope(pos)
                cache._rotated = [apply_rope(layer.suffix_k, cos, sin) for layer in cache.layers]
            cache._rotated_for = start
        return cache._rotated

    @torch.no_grad()
    def canvas_logits(self, cache: EncodedContext, canvas_ids: torch.Tensor) -> torch.Tensor:
        """Logits for every canvas position given the cached context.

        canvas_ids: (B, N) — B canvases sharing one context (candidates). -> (B, N, V)
        """
        B, N = canvas_ids.shape
        P = cache.prefix_len
        device = canvas_ids.device
        pos = torch.arange(P, P + N, device=device).unsqueeze(0).expand(B, N)
        cos, sin = self._rope(pos)
        suffix_keys = self._rotated_suffix_keys(cache, P + N)
        x = self.embed(canvas_ids)  # (B, N, C)
        for block, layer, sk in zip(self.blocks, cache.layers, suffix_keys):

            def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, layer: LayerKV = layer, sk: torch.Tensor = sk) -> torch.Tensor:
                keys = torch.cat([sk.expand(B, -1, -1, -1), layer.prefix_k.expand(B, -1, -1, -1), k], dim=2)
                values = torch.cat([layer.suffix_v.expand(B, -1, -1, -1), layer.prefix_v.expand(B, -1, -1, -1), v], dim=2)
                return F.scaled_dot_product_attention(q, keys, values)

            x = block(x, cos, sin, attend)
        return self.logits(self.final_norm(x))

    # ------------------------------------------------- several requests in one pass
    def packed_pass(self, ids: torch.Tensor, positions: torch.Tensor, attend_each: Callable[[int, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]) -> torch.Tensor:
        """The blocks over the rows of several requests packed into one (1, R) sequence.

        Every linear layer (most of a pass's arithmetic and all of its weight reads) runs
        once over all R rows; `attend_each(layer, q, k, v)` does attention, request by
        request, against each request's own keys and returns (1, H, R, Dh). -> (1, R, V) logits.
        """
        cos, sin = self._rope(positions.unsqueeze(0))
        x = self.embed(ids.unsqueeze(0))  # (1, R, C)
        for i, block in enumerate(self.blocks):
            x = block(x, cos, sin, lambda q, k, v, i=i: attend_each(i, q, k, v))
        return self.logits(self.final_norm(x))

    @torch.no_grad()
    def canvas_logits_many(self, caches: Sequence[EncodedContext], canvases: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        """canvas_logits for several requests at once, each against its own cached context.

        canvases[i]: (N_i,) ids -> [(N_i, V)], equal to canvas_logits(caches[i],
        canvases[i][None])[0] up to float rounding. The canvases' rows are packed into one
        sequence, so the linear layers run once for all requests (batching's gain); each
        request attends on its own slice with the very call a solo pass makes: no padding
        to the longest context, no mask (measured faster than one padded, masked call on
        a CPU: docs/batching.md). A matmul over more rows may sum in another order, so a
        logit can differ from the solo pass in its last bits (~1e-5): on one CPU thread
        only for a canvas of 1-3 rows (engine/batching.py PACKED_MIN_ROWS).
        `encode_with_canvas_many` with no new context.
        """
        if len(caches) != len(canvases):
            raise ValueError(f"{len(caches)} contexts for {len(canvases)} canvases")
        return self._packed_forward((), caches, canvases)[1]

    def _canvas_slots(self, cache: EncodedContext, n: int) -> list[CanvasSlot]:
        """Per layer, keys and values laid out as canvas_logits concatenates them, [suffix
        rotated to P+n | prefix | n canvas rows], built once per canvas size: each pass
        then writes only its n canvas rows in place of concatenating the whole context."""
        if cache._slots is None:
            cache._slots = {}
        if n not in cache._slots:
            suffix_keys = self._rotated_suffix_keys(cache, cache.prefix_len + n)
            slots = []
            for layer, sk in zip(cache.layers, suffix_keys):
                canvas = layer.prefix_k.new_zeros(1, layer.prefix_k.shape[1], n, layer.prefix_k.shape[3])
                keys, values = torch.cat([sk, layer.prefix_k, canvas], dim=2), torch.cat([layer.suffix_v, layer.prefix_v, canvas], dim=2)
                start = keys.shape[2] - n  # not [-n:]: an empty canvas must give empty views
                slots.append(CanvasSlot(keys, values, keys[:, :, start:], values[:, :, start:]))
            while len(cache._slots) >= 2:  # the oldest size goes: a canvas grows, or a new candidate starts small
                del cache._slots[next(iter(cache._slots))]
            cache._slots[n] = slots
        return cache._slots[n]
