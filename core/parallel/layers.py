"""Column- and row-parallel linear layers (Megatron-LM's tensor parallelism), in plain PyTorch.

Activations are [s, b, h]. With sequence parallelism the input of a column-parallel layer and the
output of a row-parallel layer are sharded along s: the column layer all-gathers the sequence
(backward: reduce-scatter) and the row layer reduce-scatters it (backward: all-gather), replacing
the all-reduce pair of plain tensor parallelism with the same total traffic.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from megazoo.core.parallel import collectives as C
from megazoo.core.parallel.collectives import group_size
from megazoo.core.parallel.context import ParallelContext
from megazoo.core.parallel.init import describe


def divide(numerator: int, denominator: int, what: str) -> int:
    if numerator % denominator:
        raise ValueError(f"{what} ({numerator}) is not divisible by tensor-parallel size {denominator}")
    return numerator // denominator


def replicated_param(param: torch.Tensor, ctx: ParallelContext) -> torch.Tensor:
    """Use a tp-replicated parameter on sequence-sharded data: forward identity, backward
    all-reduce over tp, so its gradient sums the contributions of every sequence shard."""
    return C.copy_to_region(param, ctx.tp_group) if ctx.sp else param


class ColumnParallelLinear(nn.Module):
    """Y = X A^T + b with A split by rows (output features) across tp ranks.

    Input replicated (or sequence-sharded under sp); output sharded on its last dimension unless
    `gather_output`. `weight` may be passed in to share it (tied output embedding).
    """

    def __init__(self, in_features: int, out_features: int, ctx: ParallelContext, bias: bool = True,
                 init_std: float = 0.02, gather_output: bool = False, weight: nn.Parameter | None = None,
                 dtype: torch.dtype | None = None, device=None):
        super().__init__()
        self.ctx, self.gather_output = ctx, gather_output
        self.in_features, self.out_features = in_features, out_features
        local_out = divide(out_features, ctx.tp, "output features")
        if weight is None:
            weight = describe(nn.Parameter(torch.empty(local_out, in_features, dtype=dtype, device=device)),
                              ("normal", init_std), tp_dim=0)
            self.weight = weight
        else:
            self.shared_weight = [weight]  # not registered: owned elsewhere
        self.bias = describe(nn.Parameter(torch.empty(local_out, dtype=dtype, device=device)), ("zeros",), 0) if bias else None

    def get_weight(self) -> torch.Tensor:
        return self.weight if "weight" in self._parameters else self.shared_weight[0]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.ctx.sp:
            x = C.gather_from_sequence(x, self.ctx.tp_group, grad_is_partial=True)
        elif group_size(self.ctx.tp_group) > 1:  # an identity op on one rank: skip its autograd node
            x = C.copy_to_region(x, self.ctx.tp_group)
        y = F.linear(x, self.get_weight(), self.bias)
        if self.gather_output:
            y = C.gather_from_region(y, self.ctx.tp_group, dim=-1)
        return y


class RowParallelLinear(nn.Module):
    """Y = X A^T + b with A split by columns (input features) across tp ranks.

    Input sharded on its last dimension (the output of a column-parallel layer); output replicated,
    or sequence-sharded under sp. The bias is added once, after the reduction.
    """

    def __init__(self, in_features: int, out_features: int, ctx: ParallelContext, bias: bool = True,
                 init_std: float = 0.02, dtype: torch.dtype | None = None, device=None):
        super().__init__()
        self.ctx = ctx
        self.in_features, self.out_features = in_features, out_features
        local_in = divide(in_features, ctx.tp, "input features")
        self.weight = describe(nn.Parameter(torch.empty(out_features, local_in, dtype=dtype, device=device)),
                               ("normal", init_std), tp_dim=1)
        self.bias = describe(nn.Parameter(torch.empty(out_features, dtype=dtype, device=device)), ("zeros",)) if bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.linear(x, self.weight)
        if self.ctx.sp:
            y = C.reduce_scatter_to_sequence(y, self.ctx.tp_group)
        elif group_size(self.ctx.tp_group) > 1:
            y = C.reduce_from_region(y, self.ctx.tp_group)
        if self.bias is not None:
            y = y + replicated_param(self.bias, self.ctx)
        return y
