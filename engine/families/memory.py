"""Weight-memory estimates per precision, from an ArchConfig (used by `infill models` and
the table in docs/families.md).

Bytes per weight of the quantized linears (embeddings and lm_head stay bf16 in every mode,
as bitsandbytes leaves them):
  bf16  2
  int8  1 + 4/K    (engine int8: one fp32 scale per output row; bnb LLM.int8 is the same size)
  nf4   0.5 + 4/64 (bnb NF4: one fp32 absmax per 64 weights, no double quantisation)
  int4  0.5 + 4/64 (engine int4: fp16 scale + fp16 minimum per group of 64)
"""
from __future__ import annotations

from engine.families.arch import ArchConfig

GIB = 1024**3
PER_WEIGHT = {"bf16": 2.0, "int8": 1.0, "nf4": 0.5 + 4 / 64, "int4": 0.5 + 4 / 64}


def linear_parameters(arch: ArchConfig) -> int:
    return arch.num_parameters() - embedding_parameters(arch) - arch.hidden_size * (2 * arch.num_layers + 1)


def embedding_parameters(arch: ArchConfig) -> int:
    return arch.vocab_size * arch.hidden_size * (1 if arch.tie_embeddings else 2)


def weight_bytes(arch: ArchConfig, mode: str) -> float:
    linear = linear_parameters(arch)
    rest = arch.num_parameters() - linear  # embeddings, lm_head, norms (and biases) in bf16
    per = PER_WEIGHT[mode]
    if mode == "int8":  # the per-row scales: one fp32 per output feature of every linear
        rows = arch.num_layers * (arch.num_heads * arch.head_dim * 2 + arch.num_kv_heads * arch.head_dim * 2 + 2 * arch.ffn_hidden + arch.hidden_size)
        return linear * per + 4 * rows + 2 * rest
    return linear * per + 2 * rest


def kv_cache_bytes(arch: ArchConfig, tokens: int, dtype_bytes: int = 2) -> float:
    """Dual-cache keys and values for `tokens` context tokens (batch 1)."""
    return 2 * arch.num_layers * tokens * arch.num_kv_heads * arch.head_dim * dtype_bytes


def estimate(arch: ArchConfig, context_tokens: int = 2048) -> dict[str, float]:
    """GiB of weights per precision plus the dual cache at `context_tokens`."""
    out = {mode: weight_bytes(arch, mode) / GIB for mode in PER_WEIGHT}
    out["params_b"] = arch.num_parameters() / 1e9
    out["kv_cache"] = kv_cache_bytes(arch, context_tokens) / GIB
    return out
