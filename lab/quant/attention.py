"""Canvas-query attention: the canvas rows attend to [suffix | prefix | canvas] keys.

This is the attention of InfillTransformer.canvas_logits. The model concatenates the
cached context keys/values with the canvas ones every pass (torch.cat of the whole
cache, per layer, per pass) and calls SDPA. The Triton kernel in triton_attention reads
the three segments in place instead; this function is its reference and is exactly the
model's computation.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F


def canvas_attention_ref(
    q: torch.Tensor,  # (B, H, N, D) canvas queries (rotated)
    suffix_k: torch.Tensor, suffix_v: torch.Tensor,  # (1 or B, H, S, D), keys rotated
    prefix_k: torch.Tensor, prefix_v: torch.Tensor,  # (1 or B, H, P, D)
    k: torch.Tensor, v: torch.Tensor,  # (B, H, N, D) canvas keys/values
) -> torch.Tensor:  # (B, H, N, D)
    B = q.shape[0]
    keys = torch.cat([suffix_k.expand(B, -1, -1, -1), prefix_k.expand(B, -1, -1, -1), k], dim=2)
    values = torch.cat([suffix_v.expand(B, -1, -1, -1), prefix_v.expand(B, -1, -1, -1), v], dim=2)
    return F.scaled_dot_product_attention(q, keys, values)
