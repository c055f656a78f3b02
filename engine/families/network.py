"""infill's own forward pass for Qwen2- and LLaMA-style blocks run bidirectionally.

One module serves every family: the differences between Qwen2 and LLaMA blocks that
matter for inference are q/k/v biases and grouped-query attention, both read from the
ArchConfig. Tensor names are internal; the family data file maps checkpoint names onto
them. Numerics follow the reference implementations (RMSNorm in float32, rotate-half RoPE
with float32 angles) so fp32 logits agree to ~1e-6.

Besides a plain full-sequence forward, `forward` accepts extra keys/values from a cache
(`past`) and can hand back the keys/values it computed (`collect`): that is all the
approximate dual cache needs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

import torch
import torch.nn as nn
import torch.nn.functional as F

from engine.families.arch import ArchConfig

# Per layer: keys and values, (B, Hkv, T, Dh), keys already rotated to their positions.
LayerKV = tuple[torch.Tensor, torch.Tensor]


@dataclass
class KVBuffer:
    """One layer's cached context keys/values followed by a slot for the rows a cached
    pass recomputes: k, v (B, Hkv, L + S, Dh) with the context in [:L]. The pass writes
    its S fresh keys/values into the slot in place, so the (possibly large) context is
    never copied per pass — a torch.cat would copy all of it every time."""

    k: torch.Tensor
    v: torch.Tensor
    context_len: int


class RMSNorm(nn.Module):
    """Not engine.model.RMSNorm: the weight is applied *after* the cast back, in the
    order Qwen2/LLaMA checkpoints were trained with, so bf16 logits match transformers."""

    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(dtype)


def rope_cos_sin(positions: torch.Tensor, head_dim: int, theta: float, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """positions (B, T) -> cos, sin (B, 1, T, Dh), angles computed in float32."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=positions.device, dtype=torch.float32) / head_dim))
    angles = positions.float().unsqueeze(-1) * inv_freq  # (B, T, Dh/2)
    emb = torch.cat((angles, angles), dim=-1)  # (B, T, Dh)
    return emb.cos().to(dtype).unsqueeze(1), emb.sin().to(dtype).unsqueeze(1)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate-half RoPE (the HF/OLMo convention): pairs are (x[..., j], x[..., j + Dh/2])."""
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


class DecoderLayer(nn.Module):
    def __init__(self, cfg: ArchConfig):
        super().__init__()
        h, d = cfg.hidden_size, cfg.head_dim
        self.num_heads, self.num_kv_heads, self.head_dim = cfg.num_heads, cfg.num_kv_heads, d
        self.attn_norm = RMSNorm(h, cfg.norm_eps)
        self.q = nn.Linear(h, cfg.num_heads * d, bias=cfg.qkv_bias)
        self.k = nn.Linear(h, cfg.num_kv_heads * d, bias=cfg.qkv_bias)
        self.v = nn.Linear(h, cfg.num_kv_heads * d, bias=cfg.qkv_bias)
        self.o = nn.Linear(cfg.num_heads * d, h, bias=False)
        self.mlp_norm = RMSNorm(h, cfg.norm_eps)
        self.gate = nn.Linear(h, cfg.ffn_hidden, bias=False)
        self.up = nn.Linear(h, cfg.ffn_hidden, bias=False)
        self.down = nn.Linear(cfg.ffn_hidden, h, bias=False)

    def forward(
        self,
        x: torch.Tensor,  # (B, T, C)
        cos: torch.Tensor,  # (B, 1, T, Dh)
        sin: torch.Tensor,
        past: Optional[Union[LayerKV, KVBuffer]],  # cached keys/values attended besides this call's own
        mask: Optional[torch.Tensor],  # (B, 1, 1, Tpast + T) bool: keys that may be attended
    ) -> tuple[torch.Tensor, LayerKV]:
        B, T, _ = x.shape
        h = self.attn_norm(x)
        q = self.q(h).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)  # (B, H, T, Dh)
        k = self.k(h).view(B, T, self.num_kv_heads, self.head_dim).transpose(1, 2)  # (B, Hkv, T, Dh)
        v = self.v(h).view(B, T, self.num_kv_heads, self.head_dim).transpose(1, 2)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        own = (k, v)
        if isinstance(past, KVBuffer):
            L = past.context_len
            past.k[:, :, L:] = k  # shapes must match the slot: same batch, same span length
            past.v[:, :, L:] = v
            k, v = past.k, past.v
        elif past is not None:
            k = torch.cat([past[0].expand(B, -1, -1, -1), k], dim=2)
            v = torch.cat([past[1].expand(B, -1, -1, -1), v], dim=2)
        # Bidirectional: no causal mask; only hidden keys (pads, for some families) are masked.
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=self.num_kv_heads != self.num_heads)
        x = x + self.o(y.transpose(1, 2).reshape(B, T, self.num_heads * self.head_dim))
        h = self.mlp_norm(x)
        x = x + self.down(F.silu(self.gate(h)) * self.up(h))
        return x, own


class BidirectionalDecoder(nn.Module):
    def __init__(self, cfg: ArchConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.num_layers))
        self.norm = RMSNorm(cfg.hidden_size, cfg.norm_eps)
        # Tied checkpoints have no lm_head tensor; logits then use the embedding matrix.
        self.lm_head: Optional[nn.Linear] = None if cfg.tie_embeddings else nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)

    @property
    def device(self) -> torch.device:
        return self.embed.weight.device

    @property
    def dtype(self) -> torch.dtype:
        return self.embed.weight.dtype

    def forward(
        self,
        ids: torch.Tensor,  # (B, T)
        positions: torch.Tensor,  # (B, T) or (T,)
        key_mask: Optional[torch.Tensor] = None,  # (B, Tpast + T) bool, True = may be attended
        past: Optional[Union[list[LayerKV], list[KVBuffer]]] = None,
        collect: bool = False,
    ) -> tuple[torch.Tensor, Optional[list[LayerKV]]]:
        """Hidden states after the final norm, (B, T, C), and optionally each layer's own K/V."""
        B, T = ids.shape
        if positions.dim() == 1:
            positions = positions.unsqueeze(0).expand(B, T)
        x = self.embed(ids)
        cos, sin = rope_cos_sin(positions, self.cfg.head_dim, self.cfg.rope_theta, x.dtype)
        mask = key_mask[:, None, None, :] if key_mask is not None else None
        kvs: list[LayerKV] = []
        for i, layer in enumerate(self.layers):
            x, own = layer(x, cos, sin, past[i] if past is not None else None, mask)
            if collect:
                kvs.append(own)
        return self.norm(x), (kvs if collect else None)

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """(..., C) -> (..., V) float32 logits."""
        weight = self.embed.weight if self.lm_head is None else None
        out = F.linear(hidden, weight) if weight is not None else self.lm_head(hidden)  # type: ignore[misc]
        return out.float()
