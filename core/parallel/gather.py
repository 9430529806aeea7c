"""Reassemble full ("master") tensors from this rank's tensor-parallel slices (and, for MoE expert
weights, the expert-parallel ranks' blocks of experts)."""

from __future__ import annotations

import torch
from torch import nn

from megazoo.core.parallel.collectives import _gather
from megazoo.core.parallel.context import ParallelContext


def full_tensor(local: torch.Tensor, param: nn.Parameter, ctx: ParallelContext) -> torch.Tensor:
    """All-gather `local` (a parameter or its gradient) along the parameter's tp dimension over the
    tp group (an expert weight also along its expert dimension over the ep group), and drop
    vocabulary padding. Collective: every tp (and ep) rank must call it."""
    tp_dim = getattr(param, "tp_dim", None)
    out = local.detach()
    if tp_dim is not None and ctx.tp > 1:
        out = _gather(out, tp_dim, ctx.tp_group)
    if getattr(param, "ep_dim", None) is not None and ctx.ep > 1:
        out = _gather(out.contiguous(), param.ep_dim, ctx.ep_group)
    rows = getattr(param, "vocab_rows", None)
    if rows is not None:
        out = out[:rows]
    return out


def full_state(model: nn.Module, ctx: ParallelContext, grads: bool = False) -> dict[str, torch.Tensor]:
    """Name -> full tensor (or full gradient) of every parameter of `model`."""
    out = {}
    for name, p in model.named_parameters():
        src = p.grad if grads else p
        if src is None:
            src = torch.zeros_like(p)
        out[name] = full_tensor(src, p, ctx).clone()
    return out
