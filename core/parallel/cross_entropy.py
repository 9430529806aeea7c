"""Cross-entropy over vocabulary-sharded logits that never gathers the full logits.

Each rank holds logits[..., V/tp]. The loss needs three scalars per token reduced over tp: the max
logit (for stability), the target's logit (only its owner has it) and the sum of exponentials.
Padded vocabulary columns (index >= vocab_size) are excluded, so padding is invisible.
With label smoothing eps, loss = (1 - eps) * nll + eps * mean over the real vocabulary of -log p.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from megazoo.core.parallel.collectives import group_rank, group_size


def _all_reduce(x, group, op=dist.ReduceOp.SUM):
    if group_size(group) > 1:
        dist.all_reduce(x, op=op, group=group)
    return x


class _VocabParallelCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits, target, vocab_size, group, ignore_index, smoothing):
        local_v = logits.shape[-1]
        start = group_rank(group) * local_v
        if logits.dtype in (torch.float16, torch.bfloat16):
            logits = logits.float()  # the softmax needs fp32 range and precision
        col = torch.arange(start, start + local_v, device=logits.device)
        pad = col >= vocab_size
        if pad.any():
            logits = logits.masked_fill(pad, float("-inf"))
        logits_max = logits.max(dim=-1).values
        _all_reduce(logits_max, group, dist.ReduceOp.MAX)
        shifted = logits - logits_max.unsqueeze(-1)

        ignored = target == ignore_index
        local_t = target - start
        outside = (local_t < 0) | (local_t >= local_v) | ignored
        idx = local_t.masked_fill(outside, 0)
        target_logit = shifted.gather(-1, idx.unsqueeze(-1)).squeeze(-1).masked_fill(outside, 0.0)
        exp = shifted.exp()
        sum_exp = exp.sum(-1)
        packed = torch.stack([target_logit, sum_exp])
        _all_reduce(packed, group)
        target_logit, sum_exp = packed[0], packed[1]
        log_z = sum_exp.log()
        loss = log_z - target_logit
        if smoothing > 0:
            mean_logit = shifted.masked_fill(pad, 0.0).sum(-1)
            _all_reduce(mean_logit, group)
            mean_logit = mean_logit / vocab_size
            loss = (1.0 - smoothing) * loss + smoothing * (log_z - mean_logit)
        loss = loss.masked_fill(ignored, 0.0)

        softmax = exp / sum_exp.unsqueeze(-1)
        ctx.save_for_backward(softmax, idx, outside, ignored, pad)
        ctx.smoothing, ctx.vocab_size = smoothing, vocab_size
        return loss

    @staticmethod
    def backward(ctx, grad_loss):
        softmax, idx, outside, ignored, pad = ctx.saved_tensors
        eps = ctx.smoothing
        # d loss / d logit = softmax - (1 - eps) * onehot(target) - eps / V (real columns), in place
        # on the saved softmax to avoid another [tokens, V/tp] buffer
        grad = softmax
        owned = (~outside).to(grad.dtype).unsqueeze(-1)
        grad.scatter_add_(-1, idx.unsqueeze(-1), -(1.0 - eps) * owned)
        if eps > 0:
            grad -= (eps / ctx.vocab_size) * (~pad).to(grad.dtype)
        grad *= (grad_loss * (~ignored)).unsqueeze(-1)
        return grad, None, None, None, None, None


def vocab_parallel_cross_entropy(logits: torch.Tensor, target: torch.Tensor, vocab_size: int, group=None,
                                 ignore_index: int = -100, label_smoothing: float = 0.0) -> torch.Tensor:
    """Per-token loss (fp32, or fp64 for fp64 logits; same shape as target; 0 where target == ignore_index).

    logits: [..., V_padded / tp] this rank's vocabulary shard; vocab_size: the real vocabulary.
    Gradient dtype follows the logits' dtype.
    """
    loss = _VocabParallelCrossEntropy.apply(logits, target, vocab_size, group, ignore_index, label_smoothing)
    return loss
