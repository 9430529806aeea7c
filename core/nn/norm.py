"""LayerNorm and RMSNorm whose weights stay correct under sequence parallelism."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from megazoo.core.nn.graph import builds_graph
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


def _rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(y, rstd): the forward of _RMSNorm."""
    xf = x.to(torch.promote_types(x.dtype, torch.float32))  # fp32, or fp64 for fp64 input
    rstd = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return (xf * rstd).to(x.dtype) * weight, rstd


class _RMSNorm(torch.autograd.Function):
    """y = (x * rstd) w with rstd = 1 / sqrt(mean(x^2) + eps), computed in fp32 (fp64 for fp64 input)
    and cast back before the weight: Hugging Face's LlamaRMSNorm bit for bit in the forward (and
    torch's rms_norm in fp32). The backward is written out, dx = rstd (g - x_hat mean(g x_hat)) with
    g = dy w and dw = the sum over rows of dy x_hat, saving only x and rstd; autograd through torch's
    composite rms_norm on a CPU keeps and revisits its intermediates op by op (1.2-1.6x the time,
    forward and backward, at SmolLM2's shapes on a 2-core CPU)."""

    @staticmethod
    def forward(ctx, x, weight, eps):
        y, rstd = _rms_norm(x, weight, eps)
        ctx.save_for_backward(x, weight, rstd)
        return y

    @staticmethod
    def backward(ctx, dy):
        x, weight, rstd = ctx.saved_tensors
        x_hat = x.to(rstd.dtype) * rstd
        dyf = dy.to(rstd.dtype)
        g = dyf * weight.to(rstd.dtype)
        dw = (dyf * x_hat).reshape(-1, x.shape[-1]).sum(0)
        dot = (g * x_hat).mean(-1, keepdim=True)
        dx = g.addcmul_(x_hat, dot, value=-1.0).mul_(rstd)
        return dx.to(x.dtype), dw.to(weight.dtype), None


class RMSNorm(nn.Module):
    def __init__(self, hidden: int, ctx: ParallelContext, eps: float = 1e-6, dtype=None, device=None):
        super().__init__()
        self.ctx, self.eps, self.hidden = ctx, eps, hidden
        self.weight = describe(nn.Parameter(torch.empty(hidden, dtype=dtype, device=device)), ("ones",))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight = replicated_param(self.weight, self.ctx)
        if not builds_graph(x, weight):
            return _rms_norm(x, weight, self.eps)[0]  # no graph to build (decoding): skip the autograd node's cost
        return _RMSNorm.apply(x, weight, self.eps)


def build_norm(kind: str, hidden: int, ctx: ParallelContext, eps: float, bias: bool = True, dtype=None, device=None) -> nn.Module:
    if kind == "rmsnorm":
        return RMSNorm(hidden, ctx, eps, dtype=dtype, device=device)
    return LayerNorm(hidden, ctx, eps, bias=bias, dtype=dtype, device=device)
