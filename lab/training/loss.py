"""The output projection and cross-entropy in one pass over row chunks.

Training scores ~4,000 rows per batch against an 8,192-token vocabulary. Written the
plain way (logits = hidden @ W.T, then cross_entropy) that is a 4,000 x 8,192 fp32
logits tensor, its log-softmax, and the same again in the backward pass: in the profile
of a CPU step (docs/training.md) these memory-bound passes cost more than the
projection's matmuls. Here each chunk of rows computes its logits, loss and the
gradients of the weighted loss with respect to its hidden rows and to the weight while
the chunk's logits are still in cache; the backward pass only scales them. The
gradient is exact (same formula as autograd's: w * (softmax - onehot)).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class RowLosses:
    loss: torch.Tensor  # scalar: sum of row_weights * ce, differentiable
    ce: torch.Tensor  # (R,) per-row cross-entropy, detached
    correct: torch.Tensor  # (R,) bool: argmax == target, detached


class _ChunkedLinearCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, hidden, weight, targets, row_weights, compute_dtype, chunk, need_grad):  # type: ignore[override]
        h = hidden.to(compute_dtype)
        W = weight.to(compute_dtype)
        R = h.shape[0]
        ce = torch.empty(R, dtype=torch.float32, device=h.device)
        correct = torch.empty(R, dtype=torch.bool, device=h.device)
        grad_h = torch.empty_like(h) if need_grad else None
        grad_W = torch.zeros(weight.shape, dtype=torch.float32, device=h.device) if need_grad else None
        for start in range(0, R, chunk):
            end = min(R, start + chunk)
            hc, tc, wc = h[start:end], targets[start:end], row_weights[start:end]
            logits = (hc @ W.t()).float()  # (c, V)
            target_logit = logits.gather(1, tc.unsqueeze(1)).squeeze(1)
            top, best = logits.max(dim=-1)  # one pass: the softmax's shift and the argmax
            correct[start:end] = best == tc
            probs = logits.sub_(top.unsqueeze(1)).exp_()  # unnormalised softmax, in place
            total = probs.sum(dim=-1)
            ce[start:end] = top + total.log() - target_logit
            if need_grad:
                # d(w * ce)/d logits = w * (softmax - onehot): scale rows by w / total once.
                probs.mul_((wc / total).unsqueeze(1))
                probs.scatter_add_(1, tc.unsqueeze(1), (-wc).unsqueeze(1))
                g = probs.to(compute_dtype)
                grad_h[start:end] = g @ W
                grad_W.add_(g.t() @ hc)
        loss = (ce * row_weights).sum()
        ctx.save_for_backward(*( (grad_h, grad_W) if need_grad else () ))
        ctx.hidden_dtype, ctx.weight_dtype = hidden.dtype, weight.dtype
        return loss, ce, correct

    @staticmethod
    def backward(ctx, grad_loss, _grad_ce, _grad_correct):  # type: ignore[override]
        grad_h, grad_W = ctx.saved_tensors
        return (grad_h * grad_loss).to(ctx.hidden_dtype), (grad_W * grad_loss).to(ctx.weight_dtype), None, None, None, None, None


def linear_cross_entropy(hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor, row_weights: torch.Tensor, chunk: int = 256) -> RowLosses:
    """sum_r row_weights[r] * CE(hidden[r] @ weight.T, targets[r]), with per-row figures.

    hidden (R, C), weight (V, C), targets (R,) long, row_weights (R,) float. Under CPU/CUDA
    autocast the matmuls run in the autocast dtype (as nn.Linear would), the softmax in
    fp32. Gradients are computed only when autograd needs them.
    """
    device = hidden.device.type
    compute_dtype = torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else hidden.dtype
    need_grad = torch.is_grad_enabled() and (hidden.requires_grad or weight.requires_grad)
    with torch.autocast(device_type=device, enabled=False):
        loss, ce, correct = _ChunkedLinearCrossEntropy.apply(hidden, weight, targets, row_weights.float(), compute_dtype, chunk, need_grad)
    return RowLosses(loss, ce.detach(), correct.detach())
