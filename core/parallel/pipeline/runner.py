"""Run a schedule table on this rank: forwards and backwards of the model chunks, with the
point-to-point batches that comm_plan puts between them.

Per (chunk, micro-batch) in flight the runner keeps the received input (a leaf that will hold the
input gradient) and the output. An output sent downstream is needed only for its autograd graph,
so its data is replaced by a one-element placeholder right after the send is issued (Megatron-LM's
"deallocate output tensor"): the activation memory that stays is what autograd saved. Sends overlap
with the next forward or backward and are waited for after the next exchange, so the storage of at
most one sent batch lives on until then.

Measurements (micro-batches in flight, saved bytes, busy time) are an `observer`'s business
(meter.py); the runner only says when each operation happens.
"""

from __future__ import annotations

import contextlib

import torch

from megazoo.core.parallel.context import ParallelContext
from megazoo.core.parallel.pipeline.meter import Observer
from megazoo.core.parallel.pipeline.no_pipelining import EXTRA_INPUTS
from megazoo.core.parallel.pipeline.p2p import exchange, wait_all
from megazoo.core.parallel.pipeline.schedules import comm_plan, rank_table


def _free_output(out: torch.Tensor) -> None:
    """Drop the data of a sent output, keep its graph; a same-shaped zero-stride placeholder keeps
    torch.autograd.backward's shape check happy. (A send still in flight holds the old storage
    through its own reference until it completes.)"""
    if out._base is None and out.grad_fn is not None:
        out.data = torch.empty((1,), dtype=out.dtype, device=out.device).expand(out.shape)


def run_schedule(chunks, micro_batches, ctx: ParallelContext, loss_fn, forward_only: bool = False,
                 hidden_size: int | None = None, dtype: torch.dtype = torch.float32, kind: str = "auto",
                 observer: Observer | None = None, overlap_p2p: bool = True) -> torch.Tensor:
    pp, vpp, rank = ctx.pp, len(chunks), ctx.pp_rank
    if vpp != ctx.vpp:
        raise ValueError(f"this rank holds {vpp} model chunks but parallel.vpp={ctx.vpp}; build one chunk per "
                         "virtual stage (megazoo.core.parallel.pipeline.build_chunks)")
    if hidden_size is None:
        raise ValueError("forward_backward needs hidden_size when pp > 1 (the shape of the activations "
                         "passed between stages)")
    last_vs = pp * vpp - 1
    for c, chunk in enumerate(chunks):
        vs = c * pp + rank
        if getattr(chunk, "pre_process", vs == 0) != (vs == 0) or getattr(chunk, "post_process", vs == last_vs) != (vs == last_vs):
            raise ValueError(f"chunk {c} of pp rank {rank} is virtual stage {vs} of {last_vs + 1}: it must have "
                             f"pre_process={vs == 0} and post_process={vs == last_vs}")
    table = rank_table(pp, rank, len(micro_batches), vpp, forward_only, kind)
    paired = (kind == "interleaved") or (kind == "auto" and vpp > 1)
    plan = comm_plan(table, pp, vpp, rank, paired)
    watch = observer if observer is not None else Observer()
    total = torch.zeros((), dtype=torch.float32, device=ctx.device)
    received: dict[tuple, torch.Tensor] = {}  # ("act" | "grad", chunk, mb) -> tensor
    results: dict[tuple, torch.Tensor] = {}  # what a later batch sends
    stash: dict[tuple, tuple] = {}  # (chunk, mb) -> (input leaf or None, output or loss)
    pending = []  # the last batch's sends, in flight during the next forward or backward
    watch.begin(table)

    def shape(mb: int) -> tuple[int, int, int]:
        b, s = micro_batches[mb]["input_ids"].shape
        return (s // ctx.tp if ctx.sp else s, b, hidden_size)

    for i in range(len(table) + 1):
        sends, recvs = [], []
        for op in plan[i]:
            if op.op == "send":
                sends.append((results.pop(op.what), op.peer, op.what))
            else:
                recvs.append((shape(op.what[2]), dtype, op.peer, op.what))
        got, sent = exchange(sends, recvs, ctx, overlap_sends=overlap_p2p)
        wait_all(pending, ctx)  # the previous batch's sends, which had a forward or backward to finish in
        pending = sent
        for (_, _, _, what), tensor in zip(recvs, got):
            received[what] = tensor
        for tensor, _, what in sends:
            if what[0] == "act" and not forward_only:
                _free_output(stash[what[1:]][1])
        if i == len(table):
            break
        kind_, c, m = table[i]
        with watch.op(kind_, c, m):
            vs = c * pp + rank
            if kind_ == "F":
                mb, chunk = micro_batches[m], chunks[c]
                x = received.pop(("act", c, m), None)
                if x is not None and not forward_only:
                    x.requires_grad_(True)
                kw = {k: mb[k] for k in EXTRA_INPUTS if k in mb}
                if vs == last_vs:
                    kw["labels"] = mb["labels"]
                record = watch.on_forward((c, m)) if not forward_only else contextlib.nullcontext()
                with torch.set_grad_enabled(not forward_only), record:
                    out = chunk(input_ids=mb["input_ids"], **kw) if vs == 0 else chunk(hidden_states=x, **kw)
                    if vs == last_vs:
                        out = loss_fn(out, mb)
                        total += out.detach().float()
                if vs != last_vs:
                    results[("act", c, m)] = out if out.dtype == dtype else out.to(dtype)
                if not forward_only:
                    stash[(c, m)] = (x, out)
                    watch.after_forward(stash, pending)
            else:
                x, out = stash.pop((c, m))
                if vs == last_vs:
                    torch.autograd.backward(out)
                else:
                    grad = received.pop(("grad", c, m))
                    if out.requires_grad:  # a first stage with nothing to train (train.trainable) has no graph
                        torch.autograd.backward(out, grad.to(out.dtype))
                if vs != 0:
                    results[("grad", c, m)] = x.grad
                watch.after_backward((c, m))
    wait_all(pending, ctx)
    if received or results or stash:
        raise RuntimeError(f"pipeline schedule left work behind on stage {rank}: {sorted(received)} "
                           f"{sorted(results)} {sorted(stash)}")
    watch.end()
    return total
