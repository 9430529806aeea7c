"""Auxiliary losses (load balancing, router z-loss) reach the gradient without the trainer knowing.

As Megatron-Core's MoEAuxLossAutoScaler: the router's output passes through an autograd function
whose forward is the identity and whose backward also starts the backward pass of the auxiliary loss
with gradient `scale`. The trainer's loss is a sum over micro-batches of (per-token loss / global
tokens), so `scale` is 1 / micro-batches (times the fp16 loss scale) and the objective becomes
LM loss + coefficient x the micro-batch mean of the auxiliary loss, whatever the layout.
"""

from __future__ import annotations

import torch


class _AttachLoss(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, loss, scale):
        ctx.scale = scale
        ctx.loss_shape = loss.shape
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        return g, torch.full(ctx.loss_shape, ctx.scale, dtype=torch.float32, device=g.device), None


def attach_loss(x: torch.Tensor, loss: torch.Tensor, scale: float) -> torch.Tensor:
    """x unchanged; in backward d(scale x loss) is added to the gradient of whatever `loss` depends on."""
    if not loss.requires_grad or not torch.is_grad_enabled():
        return x
    return _AttachLoss.apply(x, loss.float(), float(scale))
