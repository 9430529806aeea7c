"""Point-to-point exchange between neighbouring pipeline stages.

One call issues a batch of sends and receives with torch.distributed.batch_isend_irecv (gloo and
nccl both take it) and waits for all of them, so every tensor handed to a send may be freed as soon
as the call returns. Peers are pp ranks (positions in ctx.pp_ranks); each tensor-parallel rank talks
to the rank with the same tp (and dp) coordinate on the neighbouring stage. A stuck exchange raises
after the process group's timeout with a message that names the stage and the tensors it waited
for, instead of hanging.
"""

from __future__ import annotations

import datetime
import os

import torch
import torch.distributed as dist

from megazoo.core.parallel.context import ParallelContext


def p2p_timeout() -> datetime.timedelta:
    """The world group's timeout (what init_process_group was given). Waits on point-to-point work
    get it explicitly: gloo does not apply a group's timeout to a receive that never arrives, and
    groups made by new_group without a timeout default to 30 minutes."""
    try:
        backend = dist.group.WORLD._get_backend(torch.device("cpu"))
        return backend.options._timeout
    except Exception:  # another backend or torch version: the documented knob
        return datetime.timedelta(seconds=float(os.environ.get("MEGAZOO_DIST_TIMEOUT", "600")))


class PipelineCommError(RuntimeError):
    """A pipeline exchange that failed or timed out (usually ranks running different schedules)."""


def exchange(sends: list[tuple[torch.Tensor, int, tuple]], recvs: list[tuple[tuple, torch.dtype, int, tuple]],
             ctx: ParallelContext) -> list[torch.Tensor]:
    """Send each (tensor, peer_pp_rank, label) and receive each (shape, dtype, peer_pp_rank, label);
    returns the received tensors in order. Labels only feed the error message."""
    if not sends and not recvs:
        return []
    ops, out = [], []
    for tensor, peer, _ in sends:
        ops.append(dist.P2POp(dist.isend, tensor.contiguous(), ctx.pp_ranks[peer], ctx.pp_group))
    for shape, dtype, peer, _ in recvs:
        buf = torch.empty(shape, dtype=dtype, device=ctx.device)
        out.append(buf)
        ops.append(dist.P2POp(dist.irecv, buf, ctx.pp_ranks[peer], ctx.pp_group))
    try:
        timeout = p2p_timeout()
        for work in dist.batch_isend_irecv(ops):
            work.wait(timeout)
    except RuntimeError as err:
        what = [f"send {label} to stage {peer}" for _, peer, label in sends]
        what += [f"receive {label} {tuple(shape)} from stage {peer}" for shape, _, peer, label in recvs]
        raise PipelineCommError(
            f"pipeline stage {ctx.pp_rank} (global rank {ctx.rank}) could not {'; '.join(what)}: {err}. "
            "Every rank of a pipeline must run the same schedule (same number of micro-batches, "
            "micro-batch shape, pp and vpp); check that the data and config agree on all ranks") from err
    return out
