"""The MoE MLP: router, (optional) capacity, dispatch to the experts and combine; it replaces the
dense MLP of the layers where `model.moe.is_moe_layer(n)`.

Input and output are the dense MLP's [s(/tp), b, h]. Under sequence parallelism the tp ranks first
gather the whole sequence (their gradients are replicated, so the backward pass is a plain split) and
keep their own part of the output at the end; every tp rank then routes the same tokens and
computes its tp slice of each expert. The auxiliary losses are attached to the router weights
(aux.py); their values and the dropped share are kept in `stats` for the training log (metrics.py).
"""

from __future__ import annotations

import torch
from torch import nn

from megazoo.core.nn.config import TransformerConfig
from megazoo.core.nn.moe.aux import attach_loss
from megazoo.core.nn.moe.capacity import expert_capacity, keep_mask
from megazoo.core.nn.moe.dispatch import dispatch_combine
from megazoo.core.nn.moe.experts import Experts
from megazoo.core.nn.moe.router import Router
from megazoo.core.parallel import collectives as C
from megazoo.core.parallel.context import ParallelContext


class MoELayer(nn.Module):
    def __init__(self, cfg: TransformerConfig, ctx: ParallelContext, dtype=None, device=None):
        super().__init__()
        self.moe, self.ctx = cfg.moe, ctx
        self.router = Router(cfg, ctx, dtype=dtype, device=device)
        self.experts = Experts(cfg, ctx, dtype=dtype, device=device)
        self.aux_grad_scale = 1.0  # set per step by set_aux_grad_scale (1 / micro-batches x loss scale)
        self.stats: dict[str, torch.Tensor | float] = {}

    def _record(self, **values: torch.Tensor | float) -> None:
        """Add to the log's sums; tensors stay on the device (read once per log line, not per layer)."""
        for key, value in values.items():
            self.stats[key] = self.stats.get(key, 0.0) + value

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        moe, ctx = self.moe, self.ctx
        if ctx.sp:
            x = C.gather_from_sequence(x, ctx.tp_group, grad_is_partial=False)
        shape = x.shape
        tokens = x.reshape(-1, shape[-1])
        routing = self.router(tokens)
        weights = routing.weights
        if self.training and torch.is_grad_enabled() and (moe.aux_loss > 0 or moe.z_loss > 0):
            aux, z, _ = self.router.losses(routing)
            loss = moe.aux_loss * aux + moe.z_loss * z
            weights = attach_loss(weights, loss, self.aux_grad_scale)
            self._record(aux_loss=aux.detach(), z_loss=z.detach(), calls=1.0)
        keep = None
        if moe.capacity_factor is not None:
            capacity = expert_capacity(tokens.shape[0], moe.top_k, moe.num_experts, moe.capacity_factor)
            keep = keep_mask(weights, routing.experts, moe.num_experts, capacity)
            if self.training:
                self._record(dropped=(~keep).sum(), assigned=float(keep.numel()))
        out = dispatch_combine(tokens, weights, routing.experts, keep, self.experts, moe.num_experts, ctx)
        out = out.view(shape)
        if ctx.sp:
            out = C.scatter_to_sequence(out, ctx.tp_group)
        return out
