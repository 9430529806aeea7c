"""Forward passes for a task's metrics at any layout: every rank gets every example's outputs.

A builder's `evaluate` hook (and a task's `evaluate` stage) cuts its examples into micro-batches
and calls `forward_outputs`; data-parallel ranks take contiguous shares of the micro-batches, the
pipeline runs them forward only, the last stage keeps `take(out, mb)` of each, and the results are
gathered so that every rank holds all of them in the original order.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from megazoo.core.parallel.context import ParallelContext
from megazoo.core.parallel.pipeline import forward_backward


@torch.no_grad()
def forward_outputs(chunks, ctx: ParallelContext, micro_batches: list[dict], take, hidden_size: int,
                    dtype: torch.dtype = torch.float32) -> list:
    """[take(out, mb) for every micro-batch], on every rank. `take` runs on the last pipeline
    stage and should return CPU tensors (or plain values). Collective over the whole world."""
    n = len(micro_batches)
    lo, hi = ctx.dp_rank * n // ctx.dp, (ctx.dp_rank + 1) * n // ctx.dp
    mine = micro_batches[lo:hi]
    kept: list = []

    def keep(out, mb):
        kept.append(take(out, mb))
        return torch.zeros((), device=ctx.device)

    was_training = [c.training for c in chunks]
    for c in chunks:
        c.eval()
    try:
        if mine:
            forward_backward(chunks, mine, ctx, keep, forward_only=True, hidden_size=hidden_size, dtype=dtype)
    finally:
        for c, mode in zip(chunks, was_training):
            c.train(mode)
    if ctx.world_size == 1:
        return kept
    holder = ctx.pp_rank == ctx.pp - 1 and ctx.tp_rank == 0
    parts = [None] * ctx.world_size
    dist.all_gather_object(parts, (ctx.dp_rank, kept) if holder else None)
    by_dp = {dp: outs for part in parts if part is not None for dp, outs in [part]}
    return [x for dp in range(ctx.dp) for x in by_dp.get(dp, [])]
