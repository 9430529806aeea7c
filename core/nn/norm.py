"""LayerNorm and RMSNorm whose weights stay correct under sequence parallelism."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from megazoo.core.parallel.context import ParallelContext
from megazoo.core.parallel.init import describe
from megazoo.core.parallel.layers import replicated_param


class LayerNorm(nn.Module):
    def __init__(self, hidden: int, ctx: ParallelContext, eps: float = 1e-5, bias: bool = True, dtype=None, device=None):
        super().__init__()
        self.ctx, self.eps, self.hidden = ctx, eps, hidden
        self.weight = describe(nn.Parameter(torch.empty(hidden, dtype=dtype, device=device)), ("ones",))
        self.bias = describe(nn.Parameter(torch.empty(hidden, dtype=dtype, device=device)), ("zeros",)) if bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b = replicated_param(self.bias, self.ctx) if self.bias is not None else None
        return F.layer_norm(x, (self.hidden,), replicated_param(self.weight, self.ctx), b, self.eps)


class RMSNorm(nn.Module):
    def __init__(self, hidden: int, ctx: ParallelContext, eps: float = 1e-6, dtype=None, device=None):
        super().__init__()
        self.ctx, self.eps, self.hidden = ctx, eps, hidden
        self.weight = describe(nn.Parameter(torch.empty(hidden, dtype=dtype, device=device)), ("ones",))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.rms_norm(x, (self.hidden,), replicated_param(self.weight, self.ctx), self.eps)


def build_norm(kind: str, hidden: int, ctx: ParallelContext, eps: float, bias: bool = True, dtype=None, device=None) -> nn.Module:
    if kind == "rmsnorm":
        return RMSNorm(hidden, ctx, eps, dtype=dtype, device=device)
    return LayerNorm(hidden, ctx, eps, bias=bias, dtype=dtype, device=device)
