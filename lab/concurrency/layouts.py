"""Which attention layout a batched canvas pass should use, measured on this machine.

    python -m lab.concurrency.layouts [--batch 1,4,16,64] [--repeats 5]

Several requests' canvases share one pass; each canvas attends to its own cached context
(different lengths). Three ways to run B of them:

- solo: B calls of `canvas_logits`, one request each (as without batching);
- packed: `canvas_logits_many`: the rows of all canvases packed into one sequence for the
  linear layers, attention per request against its own keys (no padding, no mask);
- padded: the same packed linears, but attention as one call over keys padded to the
  longest context, with a boolean mask (rebuilt every pass, since the batch changes).

It prints ms per pass and the largest logit difference from the solo pass.
"""
from __future__ import annotations

import argparse
import sys
import time
from typing import Callable, Optional

import torch
import torch.nn.functional as F

from engine.model import EncodedContext, InfillTransformer


@torch.no_grad()
def padded_logits(model: InfillTransformer, caches: list[EncodedContext], canvases: list[torch.Tensor]) -> list[torch.Tensor]:
    """canvas_logits_many with one masked attention call per layer over padded keys."""
    B, H, Dh = len(caches), model.cfg.n_heads, model.cfg.head_dim
    sizes = [c.shape[0] for c in canvases]
    lengths = [cache.suffix_len + cache.prefix_len + n for cache, n in zip(caches, sizes)]
    N, L = max(sizes), max(lengths)
    positions = torch.cat([torch.arange(c.prefix_len, c.prefix_len + n) for c, n in zip(caches, sizes)])
    cos, sin = model._rope(positions.unsqueeze(0))
    mask = torch.zeros(B, 1, N, L, dtype=torch.bool)
    for b, (n, length) in enumerate(zip(sizes, lengths)):
        mask[b, :, :, :length] = True  # padded query rows see the real keys too: no NaN
    suffix_keys = [model._rotated_suffix_keys(c, c.prefix_len + n) for c, n in zip(caches, sizes)]
    starts = [sum(sizes[:b]) for b in range(B)]
    x = model.embed(torch.cat(canvases).unsqueeze(0))
    for i, block in enumerate(model.blocks):

        def padded(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, i: int = i) -> torch.Tensor:
            keys, values, queries = torch.zeros(B, H, L, Dh), torch.zeros(B, H, L, Dh), torch.zeros(B, H, N, Dh)
            for b, (cache, n, s) in enumerate(zip(caches, sizes, starts)):
                layer = cache.layers[i]
                keys[b, :, : lengths[b]] = torch.cat([suffix_keys[b][i], layer.prefix_k, k[:, :, s : s + n]], dim=2)[0]
                values[b, :, : lengths[b]] = torch.cat([layer.suffix_v, layer.prefix_v, v[:, :, s : s + n]], dim=2)[0]
                queries[b, :, :n] = q[0, :, s : s + n]
            y = F.scaled_dot_product_attention(queries, keys, values, attn_mask=mask)  # (B, H, N, Dh)
            return torch.cat([y[b : b + 1, :, :n] for b, n in enumerate(sizes)], dim=2)  # back to the packed rows

        x = block(x, cos, sin, padded)
    logits = model.logits(model.final_norm(x))[0]
    return [logits[s : s + n] for s, n in zip(starts, sizes)]


def _ms(fn: Callable[[], object], repeats: int) -> float:
    fn()
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    return (time.perf_counter() - start) / repeats * 1000


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.concurrency.layouts", description=__doc__.split("\n")[0])
    parser.add_argument("--batch", default="1,4,16,64")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--model", default=None)
    args = parser.parse_args(argv)
    import engine
    from lab.concurrency.items import load_items

    eng = engine.load(args.model)
    model = eng.model
    items = load_items()
    print(f"{'B':>4}{'solo ms':>10}{'packed ms':>11}{'padded ms':>11}{'packed max |diff|':>19}{'padded max |diff|':>19}")
    for b in (int(x) for x in args.batch.split(",")):
        chosen = [items[i % len(items)] for i in range(b)]
        caches = [model.encode_context(*eng.context_ids(it.prefix, it.suffix)) for it in chosen]
        canvases = [torch.full((8 * (1 + i % 2),), eng.tokenizer.mask_id) for i in range(b)]  # canvases of 8 and 16
        solo = [model.canvas_logits(c, x.unsqueeze(0))[0] for c, x in zip(caches, canvases)]
        diff = lambda rows: max(float((r - s).abs().max()) for r, s in zip(rows, solo))  # noqa: E731
        t_solo = _ms(lambda: [model.canvas_logits(c, x.unsqueeze(0)) for c, x in zip(caches, canvases)], args.repeats)
        t_packed = _ms(lambda: model.canvas_logits_many(caches, canvases), args.repeats)
        t_padded = _ms(lambda: padded_logits(model, caches, canvases), args.repeats)
        print(f"{b:>4}{t_solo:>10.1f}{t_packed:>11.1f}{t_padded:>11.1f}{diff(model.canvas_logits_many(caches, canvases)):>19.1e}{diff(padded_logits(model, caches, canvases)):>19.1e}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
