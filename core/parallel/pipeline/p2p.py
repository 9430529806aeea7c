"""Point-to-point exchange between neighbouring pipeline stages.

One call issues a batch of sends and receives with torch.distributed.batch_isend_irecv (gloo and
nccl both take it) and waits for the receives. Sends are waited for too, unless the caller asks to
overlap them with compute (`overlap_sends`): then their handles come back as `PendingSend`s, which
keep the sent tensors alive until `wait_all` is called on them (the runner does so after the next
exchange). A send that has to wait for its receiver then no longer holds up the sender's next
forward or backward (Megatron-LM's overlap_p2p_comm). Backends that coalesce a batch into one
handle (NCCL) wait as before. (gloo marks a send complete only once it is waited for, so there is
no polling.) Peers are pp ranks (positions in ctx.pp_ranks); each tensor-parallel rank talks
to the rank with the same tp (and dp) coordinate on the neighbouring stage. A stuck exchange raises
after the process group's timeout with a message that names the stage and the tensors it waited
for, instead of hanging.
"""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass
from typing import Any

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


@dataclass
class PendingSend:
    work: Any  # the torch.distributed Work of the send
    tensor: torch.Tensor  # keeps the sent storage alive until the send completes
    peer: int
    label: tuple


def _comm_error(ctx: ParallelContext, what: list[str], err: Exception) -> PipelineCommError:
    return PipelineCommError(
        f"pipeline stage {ctx.pp_rank} (global rank {ctx.rank}) could not {'; '.join(what)}: {err}. "
        "Every rank of a pipeline must run the same schedule (same number of micro-batches, "
        "micro-batch shape, pp and vpp); check that the data and config agree on all ranks")


def exchange(sends: list[tuple[torch.Tensor, int, tuple]], recvs: list[tuple[tuple, torch.dtype, int, tuple]],
             ctx: ParallelContext, overlap_sends: bool = False) -> tuple[list[torch.Tensor], list[PendingSend]]:
    """Send each (tensor, peer_pp_rank, label) and receive each (shape, dtype, peer_pp_rank, label).
    Returns the received tensors in order, and the sends still in flight (empty unless
    `overlap_sends`). Labels only feed the error message."""
    if not sends and not recvs:
        return [], []
    ops, out, sent = [], [], []
    for tensor, peer, _ in sends:
        # a tensor object of its own: the runner may swap the storage of the one it sent (freeing an
        # output), while this one keeps the sent storage alive for the send in flight
        sent.append(tensor.detach().contiguous())
        ops.append(dist.P2POp(dist.isend, sent[-1], ctx.pp_ranks[peer], ctx.pp_group))
    for shape, dtype, peer, _ in recvs:
        buf = torch.empty(shape, dtype=dtype, device=ctx.device)
        out.append(buf)
        ops.append(dist.P2POp(dist.irecv, buf, ctx.pp_ranks[peer], ctx.pp_group))
    pending = []
    try:
        timeout = p2p_timeout()
        works = dist.batch_isend_irecv(ops)
        if overlap_sends and len(works) == len(ops):  # one handle per op: sends may finish later
            pending = [PendingSend(w, t, peer, label) for w, t, (_, peer, label) in zip(works, sent, sends)]
            works = works[len(sends):]
        for work in works:
            work.wait(timeout)
    except RuntimeError as err:
        what = [f"send {label} to stage {peer}" for _, peer, label in sends]
        what += [f"receive {label} {tuple(shape)} from stage {peer}" for shape, _, peer, label in recvs]
        raise _comm_error(ctx, what, err) from err
    return out, pending


def wait_all(pending: list[PendingSend], ctx: ParallelContext) -> None:
    """Wait for every send in flight (end of a schedule), with the pipeline's timeout and message."""
    try:
        timeout = p2p_timeout()
        for p in pending:
            p.work.wait(timeout)
    except RuntimeError as err:
        raise _comm_error(ctx, [f"send {p.label} to stage {p.peer}" for p in pending], err) from err
