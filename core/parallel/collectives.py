"""Autograd-aware collectives for tensor and sequence parallelism.

Each function is a linear map whose backward is its adjoint; the docstrings give the pair.
"Replicated" means every rank of the group holds the same logical tensor, "partial" that the
logical tensor is the sum over ranks, "sharded" that each rank holds one slice.
With group None (one process) every function is the identity.
"""

from __future__ import annotations

import torch
import torch.distributed as dist


# torch 2.13 renamed the tensor-in/tensor-out collectives; older releases have the old names
_all_gather_single = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
_reduce_scatter_single = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor


def group_size(group) -> int:
    return 1 if group is None else dist.get_world_size(group)


def group_rank(group) -> int:
    return 0 if group is None else dist.get_rank(group)


def _all_reduce(x: torch.Tensor, group) -> torch.Tensor:
    if group_size(group) == 1:
        return x
    x = x.contiguous()
    dist.all_reduce(x, group=group)
    return x


def _split(x: torch.Tensor, dim: int, group) -> torch.Tensor:
    world = group_size(group)
    if world == 1:
        return x
    if x.shape[dim] % world:
        raise ValueError(f"cannot split dimension {dim} of size {x.shape[dim]} into {world} equal parts")
    return x.chunk(world, dim=dim)[group_rank(group)].contiguous()


def _gather(x: torch.Tensor, dim: int, group) -> torch.Tensor:
    world = group_size(group)
    if world == 1:
        return x
    x = x.movedim(dim, 0).contiguous()
    out = torch.empty((world * x.shape[0],) + tuple(x.shape[1:]), dtype=x.dtype, device=x.device)
    _all_gather_single(out, x, group=group)
    return out.movedim(0, dim)


def _reduce_scatter(x: torch.Tensor, dim: int, group) -> torch.Tensor:
    world = group_size(group)
    if world == 1:
        return x
    if x.shape[dim] % world:
        raise ValueError(f"cannot reduce-scatter dimension {dim} of size {x.shape[dim]} over {world} ranks")
    x = x.movedim(dim, 0).contiguous()
    out = torch.empty((x.shape[0] // world,) + tuple(x.shape[1:]), dtype=x.dtype, device=x.device)
    _reduce_scatter_single(out, x, group=group)
    return out.movedim(0, dim)


class _CopyToRegion(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return x

    @staticmethod
    def backward(ctx, g):
        return _all_reduce(g.clone(), ctx.group), None


class _ReduceFromRegion(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, group):
        return _all_reduce(x.clone(), group)

    @staticmethod
    def backward(ctx, g):
        return g, None


class _ScatterToRegion(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, dim, group):
        ctx.dim, ctx.group = dim, group
        return _split(x, dim, group)

    @staticmethod
    def backward(ctx, g):
        return _gather(g, ctx.dim, ctx.group), None, None


class _GatherFromRegion(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, dim, group, grad_is_partial):
        ctx.dim, ctx.group, ctx.partial = dim, group, grad_is_partial
        return _gather(x, dim, group)

    @staticmethod
    def backward(ctx, g):
        if ctx.partial:
            return _reduce_scatter(g, ctx.dim, ctx.group), None, None, None
        return _split(g, ctx.dim, ctx.group), None, None, None


class _ReduceScatterToRegion(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, dim, group):
        ctx.dim, ctx.group = dim, group
        return _reduce_scatter(x, dim, group)

    @staticmethod
    def backward(ctx, g):
        return _gather(g, ctx.dim, ctx.group), None, None


def copy_to_region(x: torch.Tensor, group) -> torch.Tensor:
    """Forward: identity (replicated in, replicated out, each rank then computes on its copy).
    Backward: all-reduce (the gradient of a replicated tensor is the sum of the ranks' parts)."""
    return _CopyToRegion.apply(x, group)


def reduce_from_region(x: torch.Tensor, group) -> torch.Tensor:
    """Forward: all-reduce (partial in, replicated out). Backward: identity."""
    return _ReduceFromRegion.apply(x, group)


def scatter_to_region(x: torch.Tensor, group, dim: int = -1) -> torch.Tensor:
    """Forward: keep this rank's slice along `dim` (replicated in, sharded out).
    Backward: all-gather along `dim`."""
    return _ScatterToRegion.apply(x, dim, group)


def gather_from_region(x: torch.Tensor, group, dim: int = -1) -> torch.Tensor:
    """Forward: all-gather along `dim` (sharded in, replicated out).
    Backward: keep this rank's slice (the replicated gradient is the same on every rank)."""
    return _GatherFromRegion.apply(x, dim, group, False)


def scatter_to_sequence(x: torch.Tensor, group) -> torch.Tensor:
    """Sequence parallelism, dim 0 of [s, b, h]. Forward: split the sequence. Backward: all-gather."""
    return _ScatterToRegion.apply(x, 0, group)


def gather_from_sequence(x: torch.Tensor, group, grad_is_partial: bool = True) -> torch.Tensor:
    """Sequence parallelism. Forward: all-gather the sequence (sharded in, replicated out).
    Backward: reduce-scatter when each rank's gradient is a partial sum (the input of a
    column-parallel linear), or a plain split when it is replicated (`grad_is_partial=False`)."""
    return _GatherFromRegion.apply(x, 0, group, grad_is_partial)


def reduce_scatter_to_sequence(x: torch.Tensor, group) -> torch.Tensor:
    """Sequence parallelism. Forward: reduce-scatter the sequence (partial in, sharded out), the
    output of a row-parallel linear. Backward: all-gather."""
    return _ReduceScatterToRegion.apply(x, 0, group)


def all_reduce_max(x: torch.Tensor, group) -> torch.Tensor:
    """Max over the group, in place; no autograd (used on detached values)."""
    if group_size(group) > 1:
        dist.all_reduce(x, op=dist.ReduceOp.MAX, group=group)
    return x


def all_reduce_sum(x: torch.Tensor, group) -> torch.Tensor:
    """Sum over the group, in place; no autograd."""
    if group_size(group) > 1:
        dist.all_reduce(x, group=group)
    return x
