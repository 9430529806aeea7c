"""Flat parameter and gradient buffers, and the bucketed data-parallel gradient reduction.

Every trainable parameter becomes a view into one flat buffer of the compute dtype (`param_data`)
and gets `p.main_grad`, a view into one flat fp32 buffer (`main_grad`) where gradients of all
micro-batches accumulate in fp32:
  - fp32 params: `p.grad` *is* the `main_grad` view, autograd adds into it in place;
  - bf16/fp16 params: a post-accumulate-grad hook adds `p.grad` into `p.main_grad` and frees it.
    On CUDA the add casts inside the kernel; on the CPU torch would first copy the whole gradient
    to an fp32 temporary (100 MB, 25k page faults for a 32k x 768 embedding), so the hook adds it
    through a small reused fp32 scratch, a chunk at a time (`accumulate`).

The buffer is cut into buckets, laid out in reverse parameter order (roughly the order in which
backward produces gradients). Each bucket is padded to a multiple of the shard count so that rank r
of the data-parallel group owns slice r of every bucket (the distributed optimizer's shard). When
every parameter of a bucket has received its last micro-batch's gradient, the bucket's all-reduce
(or reduce-scatter, for the distributed optimizer) is started asynchronously, overlapping the rest
of the backward pass. `finish()` waits for them, and reduces synchronously any bucket that was not
started (overlap off, a backend without async collectives, or a parameter that got no gradient).

MoE expert parameters (`expert`, core/parallel/init.describe_expert) live in buckets of their own,
reduced (and, for the distributed optimizer, sharded) over `expert_dp_group`: the ranks holding the
same experts. Every bucket therefore carries its group, its shard count and this rank's shard.

Parameters marked `shared_embedding` (the two copies of a tied embedding on the first and last
pipeline stage) are kept in a separate bucket that is only reduced in `finish_late()`, after the
pipeline runtime (`finalize_grads`) has summed them across the embedding group.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch import nn

from megazoo.core.parallel.context import ParallelContext


class Bucket:
    def __init__(self, index: int, params: list[nn.Parameter], start: int, end: int, shards: int, late: bool,
                 group=None, group_size: int = 1, shard_rank: int = 0, shard_start: int = 0):
        self.index, self.params, self.start, self.end, self.late = index, params, start, end, late
        self.group, self.group_size, self.shards, self.shard_rank = group, group_size, shards, shard_rank
        self.shard_size = (end - start) // shards
        self.shard_start = shard_start  # where this rank's slice sits in a separate grad_shard
        self.pending = len(params)
        self.handle = None
        self.launched = False


class GradBuffers:
    def __init__(self, params: list[nn.Parameter], dtype: torch.dtype, ctx: ParallelContext, distributed: bool,
                 bucket_size: int = 10_000_000, overlap: bool = True):
        self.ctx, self.dtype, self.distributed, self.overlap = ctx, dtype, distributed, overlap
        self.params = params

        def is_expert(p):
            return getattr(p, "expert", False)

        early = [p for p in reversed(params) if not getattr(p, "shared_embedding", False) and not is_expert(p)]
        experts = [p for p in reversed(params) if is_expert(p)]
        late = [p for p in reversed(params) if getattr(p, "shared_embedding", False) and not is_expert(p)]
        # (group, its size, shards, this rank's shard) of each kind of bucket: dense gradients are reduced
        # over dp x cp (the cp ranks see other tokens of the same samples), expert ones over expert-dp
        dense = (ctx.dp_cp_group, ctx.dp_cp, ctx.dp_cp if distributed else 1, ctx.dp_cp_rank if distributed else 0)
        expert = (ctx.expert_dp_group, ctx.expert_dp, ctx.expert_dp if distributed else 1,
                  ctx.expert_dp_rank if distributed else 0)

        # layout: (param, offset) per bucket
        self.buckets: list[Bucket] = []
        self.offset: dict[nn.Parameter, int] = {}
        pos, shard_pos = 0, 0
        for members, is_late, (group, size, shards, shard_rank) in ((early, False, dense), (experts, False, expert),
                                                                     (late, True, dense)):
            current: list[nn.Parameter] = []
            start = pos
            for i, p in enumerate(members):
                self.offset[p] = pos
                pos += p.numel()
                current.append(p)
                if pos - start >= bucket_size or i == len(members) - 1:
                    pos = start + _round_up(pos - start, shards)
                    bucket = Bucket(len(self.buckets), current, start, pos, shards, is_late, group, size,
                                    shard_rank, shard_pos)
                    self.buckets.append(bucket)
                    shard_pos += bucket.shard_size
                    current, start = [], pos
        self.numel = pos
        self.bucket_of = {p: b for b in self.buckets for p in b.params}

        # fp32 values of the (already initialised) parameters, before any cast to the compute dtype
        self.fp32_values = torch.zeros(self.numel, dtype=torch.float32, device=ctx.device)
        self.param_data = torch.zeros(self.numel, dtype=dtype, device=ctx.device)
        self.main_grad = torch.zeros(self.numel, dtype=torch.float32, device=ctx.device)
        for p in params:
            a, n = self.offset[p], p.numel()
            self.fp32_values[a:a + n].copy_(p.detach().reshape(-1))
            self.param_data[a:a + n].copy_(p.detach().reshape(-1))
            p.data = self.param_data[a:a + n].view(p.shape)
            p.main_grad = self.main_grad[a:a + n].view(p.shape)
            if dtype == torch.float32:
                p.grad = p.main_grad
        if dtype == torch.float32:
            self.fp32_values = self.param_data  # no separate copy needed
        # the reduced gradient shard this rank owns (the whole buffer without the distributed optimizer)
        if self.distributed and any(b.shards > 1 for b in self.buckets):
            self.grad_shard = torch.zeros(shard_pos, dtype=torch.float32, device=ctx.device)
        else:
            self.grad_shard = self.main_grad
        self.counts: dict[nn.Parameter, int] = {p: 0 for p in params}
        self.expected = 1
        self.scratch = (torch.empty(SCRATCH_ELEMENTS, dtype=torch.float32, device=ctx.device)
                        if dtype != torch.float32 and ctx.device.type == "cpu" else None)
        self.hooks = [p.register_post_accumulate_grad_hook(self._on_grad) for p in params]

    # ownership -----------------------------------------------------------------------------------
    def owned_range(self, bucket: Bucket) -> tuple[int, int]:
        """[start, end) in the flat buffer of this rank's slice of `bucket`."""
        a = bucket.start + bucket.shard_rank * bucket.shard_size
        return a, a + bucket.shard_size

    def shard_offset(self, bucket: Bucket) -> int:
        """Where `bucket`'s owned slice sits in `grad_shard` (and in the optimizer's main shard)."""
        if self.grad_shard is self.main_grad:
            return self.owned_range(bucket)[0]
        return bucket.shard_start

    # the step's life cycle ---------------------------------------------------------------------
    def start(self, num_micro_batches: int) -> None:
        """Zero the gradients; each parameter is complete after `num_micro_batches` gradients."""
        self.main_grad.zero_()
        if self.grad_shard is not self.main_grad:
            self.grad_shard.zero_()
        self.expected = num_micro_batches
        for p in self.params:
            self.counts[p] = 0
            if self.dtype != torch.float32:
                p.grad = None
        for b in self.buckets:
            b.pending, b.handle, b.launched = len(b.params), None, False

    def _on_grad(self, p: nn.Parameter) -> None:
        if self.dtype != torch.float32:
            accumulate(p.main_grad, p.grad, self.scratch)
            p.grad = None
        elif p.grad is not p.main_grad and p.grad.data_ptr() != p.main_grad.data_ptr():
            # something replaced the gradient tensor: fold it back into the buffer
            p.main_grad.add_(p.grad)
            p.grad = p.main_grad
        self.counts[p] += 1
        if self.counts[p] == self.expected:
            bucket = self.bucket_of[p]
            bucket.pending -= 1
            if bucket.pending == 0 and self.overlap and not bucket.late:
                self._launch(bucket, async_op=True)

    def _launch(self, bucket: Bucket, async_op: bool) -> None:
        bucket.launched = True
        if bucket.group_size == 1:
            if self.grad_shard is not self.main_grad:  # a separate shard buffer still needs the values
                o = self.shard_offset(bucket)
                self.grad_shard[o:o + bucket.shard_size].copy_(self.main_grad[bucket.start:bucket.end])
            return
        grad = self.main_grad[bucket.start:bucket.end]
        group = bucket.group
        try:
            if self.grad_shard is self.main_grad:
                bucket.handle = dist.all_reduce(grad, group=group, async_op=async_op)
            else:
                o = self.shard_offset(bucket)
                out = self.grad_shard[o:o + bucket.shard_size]
                bucket.handle = dist.reduce_scatter_tensor(out, grad, group=group, async_op=async_op)
        except (RuntimeError, NotImplementedError):
            if not async_op:
                raise
            self.overlap = False  # this backend cannot start collectives asynchronously
            self._launch(bucket, async_op=False)

    def finish(self) -> None:
        """Wait for the started reductions; reduce the rest (except the late bucket)."""
        for b in self.buckets:
            if not b.late and not b.launched:
                self._launch(b, async_op=False)
        for b in self.buckets:
            if b.handle is not None:
                b.handle.wait()
                b.handle = None

    def finish_late(self) -> None:
        for b in self.buckets:
            if b.late and not b.launched:
                self._launch(b, async_op=False)

    def all_gather_params(self) -> None:
        """After a sharded step: every rank gets the updated slices of the others."""
        if self.grad_shard is self.main_grad:
            return
        handles = []
        for b in self.buckets:
            if b.group_size == 1:
                continue
            a, e = self.owned_range(b)
            mine = self.param_data[a:e].clone()  # input must not alias the output
            handles.append(dist.all_gather_into_tensor(self.param_data[b.start:b.end], mine,
                                                       group=b.group, async_op=True))
        for h in handles:
            h.wait()

    def remove_hooks(self) -> None:
        for h in self.hooks:
            h.remove()
        self.hooks = []


SCRATCH_ELEMENTS = 2**20  # 4 MiB of fp32: large enough for full-speed copies, small enough to stay in cache


def accumulate(main: torch.Tensor, grad: torch.Tensor, scratch: torch.Tensor | None) -> None:
    """main += grad (fp32 += bf16/fp16) without a gradient-sized temporary: through `scratch`, a
    chunk at a time, when there is one (CPU); directly otherwise (CUDA casts inside the kernel)."""
    if scratch is None or grad.dtype == main.dtype or not grad.is_contiguous():
        main.add_(grad)
        return
    m, g, c = main.view(-1), grad.view(-1), scratch.numel()
    for a in range(0, g.numel(), c):
        b = min(a + c, g.numel())
        part = scratch[:b - a]
        part.copy_(g[a:b])
        m[a:b].add_(part)


def _round_up(n: int, m: int) -> int:
    return ((n + m - 1) // m) * m
