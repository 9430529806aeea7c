"""Run a schedule table on this rank: forwards and backwards of the model chunks, with the
point-to-point batches that comm_plan puts between them.

Per (chunk, micro-batch) in flight the runner keeps the received input (a leaf that will hold the
input gradient) and the output. An output sent downstream is needed only for its autograd graph,
so its data is replaced by a one-element placeholder right after the send is issued (Megatron-LM's
"deallocate output tensor"): the activation memory that stays is what autograd saved. Sends overlap
with the next forward or backward and are waited for after the next exchange, so the storage of at
most one sent batch lives on until then.

With `stats` (a dict) the runner measures, rather than assumes, what is in flight: the peak number
of micro-batches whose forward ran and whose backward has not, and the bytes autograd saved for
them (distinct storages, parameters excluded), through torch.autograd.graph.saved_tensors_hooks.
"""

from __future__ import annotations

import contextlib
import time

import torch
from torch.autograd.graph import saved_tensors_hooks

from megazoo.core.parallel.context import ParallelContext
from megazoo.core.parallel.pipeline.no_pipelining import EXTRA_INPUTS
from megazoo.core.parallel.pipeline.p2p import exchange, wait_all
from megazoo.core.parallel.pipeline.schedules import comm_plan, rank_table


class _Meter:
    """Saved-activation accounting per (chunk, micro-batch)."""

    def __init__(self, chunks, stats: dict):
        self.stats = stats
        self.params = {p.untyped_storage().data_ptr() for ch in chunks for p in ch.parameters()}
        self.live: dict[tuple, dict[int, int]] = {}
        self.current: dict[int, int] | None = None
        stats.update(peak_in_flight=0, peak_saved_bytes=0, max_microbatch_bytes=0, peak_output_bytes=0,
                     busy_s=0.0, wall_s=0.0)

    def pack(self, t):
        if self.current is not None:
            st = t.untyped_storage()
            if st.data_ptr() not in self.params:
                self.current[st.data_ptr()] = st.nbytes()
        return t

    @contextlib.contextmanager
    def forward(self, key):
        self.current = self.live.setdefault(key, {})
        try:
            with saved_tensors_hooks(self.pack, lambda t: t):
                yield
        finally:
            self.current = None

    def after_forward(self, stash, pending):
        s = self.stats
        s["peak_in_flight"] = max(s["peak_in_flight"], len(stash))
        live = {}
        for per_mb in self.live.values():
            live.update(per_mb)
        s["peak_saved_bytes"] = max(s["peak_saved_bytes"], sum(live.values()))
        s["max_microbatch_bytes"] = max([s["max_microbatch_bytes"]] + [sum(v.values()) for v in self.live.values()])
        # outputs still held: those not sent yet, and sent ones whose send has not completed
        held = {o.untyped_storage().data_ptr(): o.untyped_storage().nbytes() for _, o in stash.values() if o is not None}
        held.update({p.tensor.untyped_storage().data_ptr(): p.tensor.untyped_storage().nbytes() for p in pending
                     if p.label[0] == "act"})
        s["peak_output_bytes"] = max(s["peak_output_bytes"], sum(held.values()))

    def after_backward(self, key):
        self.live.pop(key, None)


def _free_output(out: torch.Tensor) -> None:
    """Drop the data of a sent output, keep its graph; a same-shaped zero-stride placeholder keeps
    torch.autograd.backward's shape check happy. (A send still in flight holds the old storage
    through its own reference until it completes.)"""
    if out._base is None and out.grad_fn is not None:
        out.data = torch.empty((1,), dtype=out.dtype, device=out.device).expand(out.shape)


def run_schedule(chunks, micro_batches, ctx: ParallelContext, loss_fn, forward_only: bool = False,
                 hidden_size: int | None = None, dtype: torch.dtype = torch.float32, kind: str = "auto",
                 stats: dict | None = None, overlap_p2p: bool = True) -> torch.Tensor:
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
    meter = _Meter(chunks, stats) if stats is not None else None
    total = torch.zeros((), dtype=torch.float32, device=ctx.device)
    received: dict[tuple, torch.Tensor] = {}  # ("act" | "grad", chunk, mb) -> tensor
    results: dict[tuple, torch.Tensor] = {}  # what a later batch sends
    stash: dict[tuple, tuple] = {}  # (chunk, mb) -> (input leaf or None, output or loss)
    pending = []  # the last batch's sends, in flight during the next forward or backward
    t_start, busy = time.perf_counter(), 0.0

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
        t0 = time.perf_counter()
        vs = c * pp + rank
        if kind_ == "F":
            mb, chunk = micro_batches[m], chunks[c]
            x = received.pop(("act", c, m), None)
            if x is not None and not forward_only:
                x.requires_grad_(True)
            kw = {k: mb[k] for k in EXTRA_INPUTS if k in mb}
            if vs == last_vs:
                kw["labels"] = mb["labels"]
            meter_ctx = meter.forward((c, m)) if meter is not None and not forward_only else contextlib.nullcontext()
            with torch.set_grad_enabled(not forward_only), meter_ctx:
                out = chunk(input_ids=mb["input_ids"], **kw) if vs == 0 else chunk(hidden_states=x, **kw)
                if vs == last_vs:
                    out = loss_fn(out, mb)
                    total += out.detach().float()
            if vs != last_vs:
                results[("act", c, m)] = out if out.dtype == dtype else out.to(dtype)
            if not forward_only:
                stash[(c, m)] = (x, out)
                if meter is not None:
                    meter.after_forward(stash, pending)
        else:
            x, out = stash.pop((c, m))
            if vs == last_vs:
                torch.autograd.backward(out)
            else:
                grad = received.pop(("grad", c, m))
                torch.autograd.backward(out, grad.to(out.dtype))
            if vs != 0:
                results[("grad", c, m)] = x.grad
            if meter is not None:
                meter.after_backward((c, m))
        busy += time.perf_counter() - t0
    wait_all(pending, ctx)
    if received or results or stash:
        raise RuntimeError(f"pipeline schedule left work behind on stage {rank}: {sorted(received)} "
                           f"{sorted(results)} {sorted(stash)}")
    if stats is not None:
        stats.setdefault("peak_in_flight", 0)
        stats["busy_s"] = busy
        stats["wall_s"] = time.perf_counter() - t_start
        stats["table"] = table
    return total
