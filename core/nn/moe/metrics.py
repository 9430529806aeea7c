"""What the training log shows of the MoE layers, and the per-step scale of their auxiliary losses.

Each MoELayer adds up, between two log lines, its share of the load-balancing and z-losses (per
micro-batch) and its dropped / assigned routing assignments. `moe_metrics` sums the shares over
the data-parallel ranks (one rank per tp x cp copy counts) and the pipeline stages, and averages
over layers and micro-batches: every rank must call it together.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch import nn

from megazoo.core.nn.moe.layer import MoELayer
from megazoo.core.parallel.context import ParallelContext


def moe_layers(chunks: list[nn.Module]) -> list[MoELayer]:
    return [m for c in chunks for m in c.modules() if isinstance(m, MoELayer)]


def set_aux_grad_scale(chunks: list[nn.Module], scale: float) -> None:
    """The gradient of each micro-batch's auxiliary loss is `scale` (1 / micro-batches x loss scale)."""
    for layer in moe_layers(chunks):
        layer.aux_grad_scale = scale


def moe_metrics(chunks: list[nn.Module], ctx: ParallelContext) -> dict[str, float]:
    """{moe_aux_loss, moe_z_loss, moe_dropped} since the last call (those that were measured), and reset."""
    totals = torch.zeros(5, dtype=torch.float64)
    for layer in moe_layers(chunks):
        s = layer.stats
        totals += torch.tensor([float(s.get(k, 0.0)) for k in ("aux_loss", "z_loss", "calls", "dropped", "assigned")],
                               dtype=torch.float64)
        layer.stats = {}
    if ctx.tp_rank != 0:  # tp ranks route the same tokens: one of them counts
        totals.zero_()
    if ctx.cp_rank != 0 or ctx.dp_rank != 0:  # the loss shares add up over dp x cp; count each call once
        totals[2] = 0.0
    if ctx.world_size > 1:
        totals = totals.to(ctx.device)
        dist.all_reduce(totals)
        totals = totals.cpu()
    out = {}
    if totals[2] > 0:
        out["moe_aux_loss"] = float(totals[0] / totals[2])
        out["moe_z_loss"] = float(totals[1] / totals[2])
    if totals[4] > 0:
        out["moe_dropped"] = float(totals[3] / totals[4])
    return out
