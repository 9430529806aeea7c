"""The expert MLPs of one MoE layer, stacked: expert e's fc1 is row e of a [E, f, h] tensor.

This rank holds num_experts / ep experts (its ep rank's consecutive block) and, under tensor
parallelism, the tp slice of each: fc1 (and the gate of a gated activation) split over the hidden
size like the dense MLP's column-parallel layer, fc2 like its row-parallel layer, the fc2 output
summed over tp. The rows arrive grouped by local expert; the products are one grouped GEMM
(torch.nn.functional.grouped_mm, one kernel for all experts) where torch has one for the dtype and
shapes, else a loop over the experts (`model.moe.grouped_gemm=false` forces the loop).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from megazoo.core.nn.config import TransformerConfig
from megazoo.core.parallel import collectives as C
from megazoo.core.parallel.context import ParallelContext
from megazoo.core.parallel.init import describe_expert

_grouped_mm = getattr(F, "grouped_mm", None) or getattr(torch, "_grouped_mm", None)


class _ContiguousGrad(torch.autograd.Function):
    """Identity; hands grouped_mm's backward a contiguous gradient (it rejects expanded ones)."""

    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        return g.contiguous()


def _can_group(x: torch.Tensor, w: torch.Tensor) -> bool:
    # grouped_mm needs 16-byte aligned row strides
    size = x.element_size()
    return _grouped_mm is not None and (w.shape[1] * size) % 16 == 0 and (w.shape[2] * size) % 16 == 0


def grouped_linear(x: torch.Tensor, w: torch.Tensor, counts: list[int], grouped: bool = True) -> torch.Tensor:
    """x [N, in] (rows grouped by expert, counts[e] rows for expert e), w [E, out, in] -> [N, out]."""
    if grouped and _can_group(x, w):
        offs = torch.tensor(counts, device=x.device).cumsum(0).to(torch.int32)
        return _ContiguousGrad.apply(_grouped_mm(x.contiguous(), w.transpose(1, 2), offs=offs))
    parts = [F.linear(part, w[e]) for e, part in enumerate(torch.split(x, counts)) if counts[e]]
    return torch.cat(parts) if parts else x.new_zeros((0, w.shape[1]))


def activate(activation: str, up: torch.Tensor, gate: torch.Tensor | None) -> torch.Tensor:
    """The dense MLP's activations (core/nn/mlp.py)."""
    if activation == "swiglu":
        return F.silu(gate) * up
    if activation == "geglu":
        return F.gelu(gate, approximate="tanh") * up
    if activation == "gelu":
        return F.gelu(up, approximate="tanh")
    if activation == "gelu_exact":
        return F.gelu(up)
    return F.relu(up)


class Experts(nn.Module):
    def __init__(self, cfg: TransformerConfig, ctx: ParallelContext, dtype=None, device=None):
        super().__init__()
        moe = cfg.moe
        self.ctx, self.activation, self.grouped = ctx, cfg.activation, moe.grouped_gemm
        if moe.num_experts % ctx.ep:
            raise ValueError(f"parallel.ep={ctx.ep} must divide model.moe.num_experts={moe.num_experts}: "
                             f"each expert-parallel rank holds the same number of experts")
        h, f = cfg.hidden_size, moe.ffn_hidden_size or cfg.ffn_hidden_size
        if f % ctx.tp:
            raise ValueError(f"tensor parallelism tp={ctx.tp} must divide the expert hidden size {f} "
                             f"(model.moe.ffn_hidden_size)")
        self.num_local = moe.num_experts // ctx.ep
        e, fl = self.num_local, f // ctx.tp
        kw = dict(dtype=dtype, device=device)

        def param(shape, init, tp_dim):
            return describe_expert(nn.Parameter(torch.empty(shape, **kw)), init, tp_dim, ctx)

        self.fc1_weight = param((e, fl, h), ("normal", cfg.init_std), 1)
        self.gated = cfg.activation in ("swiglu", "geglu")
        if self.gated:
            self.gate_weight = param((e, fl, h), ("normal", cfg.init_std), 1)
        self.fc2_weight = param((e, h, fl), ("normal", cfg.output_std), 2)
        self.bias = cfg.bias
        if cfg.bias:
            self.fc1_bias = param((e, fl), ("zeros",), 1)
            if self.gated:
                self.gate_bias = param((e, fl), ("zeros",), 1)
            self.fc2_bias = param((e, h), ("zeros",), None)  # added once, after the tp sum

    def forward(self, rows: torch.Tensor, counts: list[int]) -> torch.Tensor:
        """rows [N, h] grouped by local expert (counts[e] rows for expert e) -> [N, h], summed over tp."""
        tp_group = self.ctx.tp_group
        if self.ctx.tp > 1:  # replicated rows in; their gradient sums the tp slices' parts
            rows = C.copy_to_region(rows, tp_group)
        index = None
        if self.bias:
            index = torch.repeat_interleave(torch.arange(self.num_local, device=rows.device),
                                            torch.tensor(counts, device=rows.device), output_size=rows.shape[0])
        up = grouped_linear(rows, self.fc1_weight, counts, self.grouped)
        gate = grouped_linear(rows, self.gate_weight, counts, self.grouped) if self.gated else None
        if index is not None:
            up = up + self.fc1_bias[index]
            gate = gate + self.gate_bias[index] if gate is not None else None
        out = grouped_linear(activate(self.activation, up, gate), self.fc2_weight, counts, self.grouped)
        if self.ctx.tp > 1:
            out = C.reduce_from_region(out, tp_group)
        if index is not None:
            out = out + self.fc2_bias[index]
        return out
