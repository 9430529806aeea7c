"""What the pipeline owes the trainer after the schedule: tied-embedding gradients summed across
the first and last stage, and last-stage values (loss, grad norm, skip flags) known to every rank."""

from __future__ import annotations

import torch
import torch.distributed as dist

from megazoo.core.parallel.context import ParallelContext


def _grad_attr(p: torch.nn.Parameter) -> str:
    # a trainer that accumulates into fp32 main grads (p.main_grad) gets those reduced instead
    return "main_grad" if getattr(p, "main_grad", None) is not None else "grad"


def shared_embedding_params(chunks) -> list[torch.nn.Parameter]:
    """Trainable parameters marked `shared_embedding = True`: the input embedding on the first stage
    and the tied output head on the last (one copy each, initialised equal). A frozen pair (both
    copies are frozen together: train.trainable matches them by one stored name) has nothing to sum."""
    return [p for ch in chunks for p in ch.parameters()
            if getattr(p, "shared_embedding", False) and p.requires_grad]


def finalize_grads(chunks, ctx: ParallelContext) -> None:
    """Sum the gradients of tied embedding copies over ctx.embedding_group (first and last pp stage
    of this pipeline), so both copies take the same step and stay equal. Ranks outside the group,
    and runs without pipelining (one copy, tied directly), do nothing. Call after forward_backward
    and before (or after: both are sums) the data-parallel reduction."""
    if ctx.pp == 1 or ctx.embedding_group is None:
        return
    params = shared_embedding_params(chunks)
    if not params:
        return
    grads = []
    for p in params:
        attr = _grad_attr(p)
        if getattr(p, attr) is None:
            setattr(p, attr, torch.zeros_like(p))
        grads.append(getattr(p, attr))
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat, group=ctx.embedding_group)
    offset = 0
    for g in grads:
        g.copy_(flat[offset: offset + g.numel()].view_as(g))
        offset += g.numel()


def broadcast_from_last_stage(values: torch.Tensor, ctx: ParallelContext) -> torch.Tensor:
    """Every rank gets the last pp stage's `values` (same shape and dtype on every rank), e.g. the
    step's loss, so rank 0's progress bar and metrics.jsonl are right. Collective over pp_group."""
    if ctx.pp == 1 or ctx.pp_group is None:
        return values
    out = values.detach().clone().contiguous()
    dist.broadcast(out, src=ctx.pp_ranks[-1], group=ctx.pp_group)
    return out


def share_metrics(metrics: dict[str, float], ctx: ParallelContext) -> dict[str, float]:
    """Dict form of broadcast_from_last_stage: every rank passes the same keys (values from ranks
    other than the last stage are ignored) and gets the last stage's floats back."""
    keys = sorted(metrics)
    t = torch.tensor([float(metrics[k]) for k in keys], dtype=torch.float64, device=ctx.device)
    t = broadcast_from_last_stage(t, ctx)
    return {k: float(v) for k, v in zip(keys, t.tolist())}
