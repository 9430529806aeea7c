"""The top-k router: scores per expert (softmax or sigmoid gating), the k chosen experts and their
weights, and the two auxiliary losses.

Load balancing (Switch Transformer / GShard, as Megatron-Core's `switch_load_balancing_loss_func`):
    aux = num_experts * sum_i f_i * P_i
with f_i the share of the T x k routing assignments that go to expert i (before any dropping) and
P_i the mean over the T tokens of the router's probability for expert i. Router z-loss (ST-MoE):
the mean over tokens of logsumexp(logits)^2. Both are computed over every token of the micro-batch
on all data-parallel ranks (counts and token totals summed over dp x cp), so their value and their
gradient are those of one process running the whole micro-batch, whatever the layout.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from megazoo.core.nn.config import TransformerConfig
from megazoo.core.parallel.collectives import all_reduce_sum
from megazoo.core.parallel.context import ParallelContext
from megazoo.core.parallel.init import describe


@dataclass
class Routing:
    logits: torch.Tensor  # [T, E] fp32
    probs: torch.Tensor  # [T, E] the distribution the load-balancing loss uses
    weights: torch.Tensor  # [T, k] combine weights of the chosen experts
    experts: torch.Tensor  # [T, k] chosen expert ids (global)


def load_balancing_loss(probs: torch.Tensor, experts: torch.Tensor, num_experts: int,
                        total_tokens: float | None = None, counts: torch.Tensor | None = None) -> torch.Tensor:
    """num_experts * sum_i f_i * P_i over the tokens of `probs` [T, E] routed to `experts` [T, k].
    With `total_tokens` and `counts` (the expert counts over every rank), this rank's share of the
    whole batch's loss: its probabilities summed, divided by the whole batch's token count."""
    t, k = experts.shape
    if counts is None:
        counts = torch.bincount(experts.reshape(-1), minlength=num_experts).to(probs.dtype)
    total = float(t) if total_tokens is None else float(total_tokens)
    f = counts.to(probs.dtype) / (total * k)
    p = probs.sum(0) / total
    return num_experts * (f * p).sum()


def z_loss(logits: torch.Tensor, total_tokens: float | None = None) -> torch.Tensor:
    """Mean over tokens of logsumexp(logits)^2 (this rank's share when `total_tokens` is the batch's)."""
    total = float(logits.shape[0]) if total_tokens is None else float(total_tokens)
    return torch.logsumexp(logits, dim=-1).square().sum() / total


class Router(nn.Module):
    def __init__(self, cfg: TransformerConfig, ctx: ParallelContext, dtype=None, device=None):
        super().__init__()
        self.moe, self.ctx = cfg.moe, ctx
        self.weight = describe(nn.Parameter(torch.empty(cfg.moe.num_experts, cfg.hidden_size, dtype=dtype,
                                                        device=device)), ("normal", cfg.init_std))

    def forward(self, tokens: torch.Tensor) -> Routing:
        """tokens [T, h] -> the routing, scored in fp32."""
        moe = self.moe
        logits = F.linear(tokens, self.weight).float()
        if moe.gating == "softmax":
            probs = torch.softmax(logits, dim=-1)
            weights, experts = torch.topk(probs, moe.top_k, dim=-1)
        else:  # sigmoid (DeepSeek-V3): independent scores; the balance loss sees them normalised
            scores = torch.sigmoid(logits)
            weights, experts = torch.topk(scores, moe.top_k, dim=-1)
            probs = scores / scores.sum(-1, keepdim=True)
        if moe.renormalize and moe.top_k > 1:  # Mixtral: the k weights sum to one
            weights = weights / weights.sum(-1, keepdim=True)
        return Routing(logits, probs, weights, experts)

    def losses(self, routing: Routing) -> tuple[torch.Tensor, torch.Tensor, float]:
        """(this rank's share of the load-balancing loss, of the z-loss, the batch's token count),
        over the micro-batch on every dp x cp rank."""
        e = self.moe.num_experts
        counts = torch.bincount(routing.experts.reshape(-1), minlength=e).to(torch.float64)
        stats = torch.cat([counts, torch.tensor([float(routing.experts.shape[0])], dtype=torch.float64,
                                                device=counts.device)])
        all_reduce_sum(stats, self.ctx.dp_cp_group)
        total = float(stats[-1])
        aux = load_balancing_loss(routing.probs, routing.experts, e, total, stats[:-1].float())
        return aux, z_loss(routing.logits, total), total
