"""Bottleneck adapters (Houlsby et al., 2019): x + up(gelu(down(x))), tensor- and sequence-parallel.

The bottleneck is split over tp like an MLP's hidden layer: `down` is column-parallel (h -> r/tp
per rank) and `up` row-parallel (r/tp -> h, reduced over tp), so an adapter costs one tp
reduction, and under sequence parallelism the same gather / reduce-scatter pair as the MLP.

`up` starts at zero, so a fresh adapter is exactly the identity: adding adapters to a trained
model changes nothing until they are trained (Houlsby's near-identity initialisation). Adapters
always have biases (they are not part of any Hugging Face architecture, so nothing constrains them).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from megazoo.core.parallel.context import ParallelContext
from megazoo.core.parallel.init import describe
from megazoo.core.parallel.layers import ColumnParallelLinear, RowParallelLinear


class Adapter(nn.Module):
    def __init__(self, hidden: int, size: int, ctx: ParallelContext, init_std: float = 0.02,
                 dtype: torch.dtype | None = None, device=None):
        super().__init__()
        self.down = ColumnParallelLinear(hidden, size, ctx, bias=True, init_std=init_std, dtype=dtype, device=device)
        self.up = RowParallelLinear(size, hidden, ctx, bias=True, dtype=dtype, device=device)
        describe(self.up.weight, ("zeros",), tp_dim=1)  # identity at initialisation

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x: [s, b, h] (s / tp under sequence parallelism); same shape out."""
        return x + self.up(F.gelu(self.down(x), approximate="tanh"))
