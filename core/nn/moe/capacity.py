"""Token dropping under a capacity factor.

Each expert takes at most capacity = ceil(capacity_factor x T x k / num_experts) of the T x k
routing assignments of this rank's tokens (T local tokens, as Megatron-Core drops before the
dispatch); when more arrive it keeps those with the highest router weight. A dropped assignment
contributes nothing: the token keeps only its other experts (and the residual path).
"""

from __future__ import annotations

import math

import torch


def expert_capacity(tokens: int, top_k: int, num_experts: int, capacity_factor: float) -> int:
    return math.ceil(capacity_factor * tokens * top_k / num_experts)


def keep_mask(weights: torch.Tensor, experts: torch.Tensor, num_experts: int, capacity: int) -> torch.Tensor:
    """[T, k] bool: which assignments an expert of `capacity` slots keeps (highest weight first)."""
    flat_e = experts.reshape(-1)
    flat_w = weights.detach().reshape(-1)
    by_weight = torch.argsort(flat_w, descending=True, stable=True)
    order = by_weight[torch.argsort(flat_e[by_weight], stable=True)]  # by expert, heaviest first
    counts = torch.bincount(flat_e, minlength=num_experts)
    starts = torch.cumsum(counts, 0) - counts
    rank_in_expert = torch.arange(flat_e.numel(), device=flat_e.device) - starts[flat_e[order]]
    keep = torch.empty_like(flat_e, dtype=torch.bool)
    keep[order] = rank_in_expert < capacity
    return keep.view_as(experts)
