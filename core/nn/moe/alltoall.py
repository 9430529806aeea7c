"""All-to-all with uneven splits, differentiable: the backward pass sends the gradients back the way
the rows came (the split sizes swapped). Works on gloo and nccl (all_to_all_single)."""

from __future__ import annotations

import torch
import torch.distributed as dist


def _exchange(x: torch.Tensor, send: list[int], recv: list[int], group) -> torch.Tensor:
    x = x.contiguous()
    out = x.new_empty((sum(recv),) + tuple(x.shape[1:]))
    dist.all_to_all_single(out, x, output_split_sizes=recv, input_split_sizes=send, group=group)
    return out


class _AllToAll(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, send, recv, group):
        ctx.send, ctx.recv, ctx.group = send, recv, group
        return _exchange(x, send, recv, group)

    @staticmethod
    def backward(ctx, g):
        return _exchange(g, ctx.recv, ctx.send, ctx.group), None, None, None


def all_to_all(x: torch.Tensor, send: list[int], recv: list[int], group) -> torch.Tensor:
    """Rows x[sum(send[:r]) : sum(send[:r+1])] go to rank r of `group`; from rank r arrive recv[r] rows."""
    return _AllToAll.apply(x, send, recv, group)


def exchange_counts(counts: torch.Tensor, group) -> torch.Tensor:
    """counts [ep, n]: row r is what this rank sends to rank r; returns [ep, n], row r what rank r sends here."""
    out = torch.empty_like(counts)
    dist.all_to_all_single(out, counts.contiguous(), group=group)
    return out
