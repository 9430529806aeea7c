"""The feed-forward block: GELU (GPT-2/BERT), SwiGLU (Llama) or GEGLU (T5 v1.1), tensor- and sequence-parallel.

SwiGLU keeps gate and up as two column-parallel projections (not one fused weight) so that each tp
slice holds matching gate and up columns whatever the tp degree.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from megazoo.core.nn.config import TransformerConfig
from megazoo.core.nn.decode_linear import column_linear, gated_pair, row_linear
from megazoo.core.parallel.context import ParallelContext
from megazoo.core.parallel.layers import ColumnParallelLinear, RowParallelLinear


class MLP(nn.Module):
    def __init__(self, cfg: TransformerConfig, ctx: ParallelContext, dtype=None, device=None):
        super().__init__()
        cfg.check_tensor_parallel(ctx.tp)
        self.activation = cfg.activation
        h, f = cfg.hidden_size, cfg.ffn_hidden_size
        self.fc1 = ColumnParallelLinear(h, f, ctx, bias=cfg.bias, init_std=cfg.init_std, dtype=dtype, device=device)
        if cfg.activation in ("swiglu", "geglu"):
            self.gate = ColumnParallelLinear(h, f, ctx, bias=cfg.bias, init_std=cfg.init_std, dtype=dtype, device=device)
        self.fc2 = RowParallelLinear(f, h, ctx, bias=cfg.bias, init_std=cfg.output_std, dtype=dtype, device=device)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pair = gated_pair(self, x) if self.activation in ("swiglu", "geglu") else None  # decoding: one product
        gate, up = pair if pair is not None else (None, column_linear(self.fc1, x))
        if self.activation == "swiglu":
            hidden = F.silu(self.gate(x) if gate is None else gate) * up
        elif self.activation == "geglu":  # T5 v1.1 "gated-gelu" (tanh GELU on the gate)
            hidden = F.gelu(self.gate(x) if gate is None else gate, approximate="tanh") * up
        elif self.activation == "gelu":
            hidden = F.gelu(up, approximate="tanh")
        elif self.activation == "gelu_exact":
            hidden = F.gelu(up)
        else:
            hidden = F.relu(up)
        return row_linear(self.fc2, hidden)  # decoding: a packed product
