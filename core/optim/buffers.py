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

Sharding modes (`shard`, ZeRO's stages; `parallel.shard`):
  - "none": no sharding (`distributed=False`): every rank reduces and holds everything;
  - "optimizer" (ZeRO-1, the distributed optimizer): as above, gradients reduce-scattered at the end;
  - "grads" (ZeRO-2): each bucket has its own fp32 gradient storage, allocated when its first
    gradient of a micro-batch arrives; as soon as the bucket is complete for that micro-batch it is
    reduce-scattered and added into this rank's `grad_shard`, and its storage is freed. Between
    micro-batches a rank holds only its 1/d gradient shard (plus the buckets in flight);
  - "full" (ZeRO-3): "grads", and the weights too: buckets are cut per unit (a transformer layer,
    or what a model chunk holds outside its layers) and each rank keeps only its slice of every
    bucket's weights; megazoo.core.optim.weight_shards gathers a unit just before it computes.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch import nn

from megazoo.core.parallel.context import SHARD_MODES, ParallelContext




class Bucket:
    def __init__(self, index: int, params: list[nn.Parameter], start: int, end: int, shards: int, late: bool,
                 group=None, group_size: int = 1, shard_rank: int = 0, shard_start: int = 0, unit: int | None = None):
        self.index, self.params, self.start, self.end, self.late = index, params, start, end, late
        self.group, self.group_size, self.shards, self.shard_rank = group, group_size, shards, shard_rank
        self.shard_size = (end - start) // shards
        self.shard_start = shard_start  # where this rank's slice sits in a separate grad_shard
        self.unit = unit  # shard="full": the index of the unit (layer) whose weights the bucket holds
        self.pending = len(params)
        self.handle = None
        self.launched = False
        self.grad: torch.Tensor | None = None  # this bucket's fp32 gradients (a view of main_grad, or its own)
        self.dirty = False  # shard="grads"/"full": gradients accumulated since the last reduction
        self.reduced_once = False  # shard="grads"/"full": reduced at least once in this step
        self.temp: torch.Tensor | None = None  # a later micro-batch's reduce-scatter output, added on drain


class GradBuffers:
    def __init__(self, params: list[nn.Parameter], dtype: torch.dtype, ctx: ParallelContext, distributed: bool,
                 bucket_size: int = 10_000_000, overlap: bool = True, shard: str | None = None,
                 units: list | None = None, prefetch: bool = True, initial=None):
        """`shard`: one of SHARD_MODES (default: "optimizer" when `distributed`, else "none");
        `units` (shard="full"): weight_shards.find_units of the model; `prefetch`: start the next
        unit's all-gather while the current one computes; `initial` (shard="full" only): the model
        was built on the meta device and its values are read a unit at a time (WeightShards)."""
        shard = shard or ("optimizer" if distributed else "none")
        if shard not in SHARD_MODES:
            raise ValueError(f"shard must be one of {', '.join(SHARD_MODES)}, got {shard!r}")
        distributed = shard != "none"
        self.ctx, self.dtype, self.distributed, self.overlap = ctx, dtype, distributed, overlap
        self.shard = shard
        self.release_grads = shard in ("grads", "full")  # per-bucket gradients, freed once reduced
        self.params = params
        unit_of = {p: i for i, u in enumerate(units or []) for p in u.params} if shard == "full" else {}

        def is_expert(p):
            return getattr(p, "expert", False)

        # (group, its size, shards, this rank's shard) of each kind of bucket: dense gradients are reduced
        # over dp x cp (the cp ranks see other tokens of the same samples), expert ones over expert-dp
        dense = (ctx.dp_cp_group, ctx.dp_cp, ctx.dp_cp if distributed else 1, ctx.dp_cp_rank if distributed else 0)
        expert = (ctx.expert_dp_group, ctx.expert_dp, ctx.expert_dp if distributed else 1,
                  ctx.expert_dp_rank if distributed else 0)
        # the kinds of buckets, in reverse parameter order; with shard="full" each unit's own, last unit first
        unit_ids = sorted(set(unit_of.values()), reverse=True) if unit_of else [None]
        kinds = []
        for u in unit_ids:
            mine = [p for p in reversed(params) if unit_of.get(p) == u]
            kinds.append(([p for p in mine if not getattr(p, "shared_embedding", False) and not is_expert(p)],
                          False, dense, u))
            kinds.append(([p for p in mine if is_expert(p)], False, expert, u))
            kinds.append(([p for p in mine if getattr(p, "shared_embedding", False) and not is_expert(p)],
                          True, dense, u))
        kinds.sort(key=lambda k: k[1])  # late (tied-embedding) buckets last: they are reduced last

        # layout: (param, offset) per bucket
        self.buckets: list[Bucket] = []
        self.offset: dict[nn.Parameter, int] = {}
        pos, shard_pos = 0, 0
        for members, is_late, (group, size, shards, shard_rank), unit in kinds:
            current: list[nn.Parameter] = []
            start = pos
            for i, p in enumerate(members):
                self.offset[p] = pos
                pos += p.numel()
                current.append(p)
                if pos - start >= bucket_size or i == len(members) - 1:
                    pos = start + _round_up(pos - start, shards)
                    bucket = Bucket(len(self.buckets), current, start, pos, shards, is_late, group, size,
                                    shard_rank, shard_pos, unit)
                    self.buckets.append(bucket)
                    shard_pos += bucket.shard_size
                    current, start = [], pos
        self.numel = pos
        self.bucket_of = {p: b for b in self.buckets for p in b.params}

        if initial is not None and shard != "full":
            raise ValueError(f"reading the weights a unit at a time needs shard='full', got {shard!r}")
        # fp32 values of the (already initialised) parameters, before any cast to the compute dtype
        # (with `initial`, WeightShards keeps those of this rank's slices instead: initial_owned)
        self.fp32_values = None
        if initial is None:
            self.fp32_values = torch.zeros(self.numel, dtype=torch.float32, device=ctx.device)
            for p in params:
                a, n = self.offset[p], p.numel()
                self.fp32_values[a:a + n].copy_(p.detach().reshape(-1))
        # the model's weights: one flat buffer, or (shard="full") each rank's slices (weight_shards)
        self.weights = None
        if shard == "full":
            from megazoo.core.optim.weight_shards import WeightShards
            self.param_data = None
            self.weights = WeightShards(self, units or [], prefetch, initial)
        else:
            self.param_data = self.fp32_values.to(dtype) if dtype != torch.float32 else self.fp32_values
            for p in params:
                a, n = self.offset[p], p.numel()
                p.data = self.param_data[a:a + n].view(p.shape)
        # fp32 gradients: one flat buffer, or (shard="grads"/"full") a storage per bucket, freed when reduced
        self.main_grad = None if self.release_grads else torch.zeros(self.numel, dtype=torch.float32,
                                                                     device=ctx.device)
        for b in self.buckets:
            if self.release_grads:
                b.grad = torch.zeros(b.end - b.start, dtype=torch.float32, device=ctx.device)
            else:
                b.grad = self.main_grad[b.start:b.end]
            for p in b.params:
                a = self.offset[p] - b.start
                p.main_grad = b.grad[a:a + p.numel()].view(p.shape)
                if dtype == torch.float32 and not self.release_grads:
                    p.grad = p.main_grad
            if self.release_grads:
                free_storage(b.grad)  # the views stay; memory comes with the bucket's first gradient
        # the reduced gradient shard this rank owns (the whole buffer without the distributed optimizer)
        if self.release_grads or (self.distributed and any(b.shards > 1 for b in self.buckets)):
            self.grad_shard = torch.zeros(shard_pos, dtype=torch.float32, device=ctx.device)
        else:
            self.grad_shard = self.main_grad
        self.counts: dict[nn.Parameter, int] = {p: 0 for p in params}
        self.in_flight: list[Bucket] = []  # shard="grads"/"full": the bucket whose reduction runs now
        self.expected = 1
        self.scratch = (torch.empty(SCRATCH_ELEMENTS, dtype=torch.float32, device=ctx.device)
                        if dtype != torch.float32 and ctx.device.type == "cpu" else None)
        self.hooks = [p.register_post_accumulate_grad_hook(self._on_grad) for p in params]

    # ownership -----------------------------------------------------------------------------------
    def owned_range(self, bucket: Bucket) -> tuple[int, int]:
        """[start, end) in the flat buffer of this rank's slice of `bucket`."""
        a = bucket.start + bucket.shard_rank * bucket.shard_size
        return a, a + bucket.shard_size

    def owned_weights(self, bucket: Bucket) -> torch.Tensor:
        """The model's weights (compute dtype) of this rank's slice of `bucket`."""
        if self.weights is not None:
            return self.weights.owned[bucket]
        a, e = self.owned_range(bucket)
        return self.param_data[a:e]

    def initial_owned(self, bucket: Bucket) -> torch.Tensor:
        """The fp32 values this rank's slice of `bucket` started with (the main weights' start)."""
        if self.fp32_values is None:
            return self.weights.initial_owned[bucket]
        a, e = self.owned_range(bucket)
        return self.fp32_values[a:e]

    def drop_initial(self) -> None:
        """The optimizer has taken the initial values: free them."""
        self.fp32_values = None
        if self.weights is not None:
            self.weights.initial_owned = {}

    def bytes_held(self) -> dict[str, int]:
        """Bytes this rank holds now for the model's weights and for gradients (fp32 buffers and the
        reduced shard): what ZeRO-2/3 shrink."""
        def nbytes(t):
            return 0 if t is None else t.untyped_storage().nbytes()
        if self.weights is not None:
            weights = self.weights.bytes_held()
        else:
            weights = nbytes(self.param_data)
        if self.release_grads:
            grads = sum(nbytes(b.grad) + nbytes(b.temp) for b in self.buckets) + nbytes(self.grad_shard)
        else:
            grads = nbytes(self.main_grad) + (0 if self.grad_shard is self.main_grad else nbytes(self.grad_shard))
        return {"weights": weights, "grads": grads}

    def shard_offset(self, bucket: Bucket) -> int:
        """Where `bucket`'s owned slice sits in `grad_shard` (and in the optimizer's main shard)."""
        if self.grad_shard is self.main_grad:
            return self.owned_range(bucket)[0]
        return bucket.shard_start

    # the step's life cycle ---------------------------------------------------------------------
    def start(self, num_micro_batches: int) -> None:
        """Zero the gradients; each parameter is complete after `num_micro_batches` gradients."""
        if self.main_grad is not None:
            self.main_grad.zero_()
        if self.grad_shard is not self.main_grad:
            self.grad_shard.zero_()
        self.expected = num_micro_batches
        self.in_flight = []
        for p in self.params:
            self.counts[p] = 0
            if self.dtype != torch.float32 or self.release_grads:
                p.grad = None
        for b in self.buckets:
            b.pending, b.handle, b.launched = len(b.params), None, False
            b.dirty, b.reduced_once, b.temp = False, False, None
            if self.release_grads:
                free_storage(b.grad)

    def _on_grad(self, p: nn.Parameter) -> None:
        if self.release_grads:
            self._on_grad_released(p)
            return
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

    def _on_grad_released(self, p: nn.Parameter) -> None:
        """shard="grads"/"full": add the gradient into its bucket's storage (allocated on the bucket's
        first gradient of the micro-batch); a bucket complete for this micro-batch is reduce-scattered
        at once (the late bucket waits for finish_late), and a unit whose buckets are all complete
        gives its gathered weights back."""
        bucket = self.bucket_of[p]
        if not bucket.dirty:
            self._drain(bucket)  # the previous micro-batch's reduction of this storage is done
            alloc_storage(bucket.grad)
            bucket.grad.zero_()
            bucket.dirty = True
        accumulate(p.main_grad, p.grad, self.scratch if self.dtype != torch.float32 else None)
        p.grad = None
        self.counts[p] += 1
        bucket.pending -= 1
        if bucket.pending == 0:
            bucket.pending = len(bucket.params)
            if not bucket.late:
                self._reduce_released(bucket, async_op=self.overlap)
            if self.weights is not None:
                self.weights.bucket_done(bucket)

    def _reduce_released(self, bucket: Bucket, async_op: bool) -> None:
        """Reduce-scatter `bucket`'s gradients of the micro-batches since its last reduction into this
        rank's grad_shard: the first reduction of a step writes the shard directly, a later one a
        temporary that `_drain` adds in."""
        # one reduction in flight at a time: the previous bucket's memory is given back before this one's
        # reduction starts, so the gradients held at any moment are the shard, this bucket and the next
        # one accumulating (not every bucket reduced so far)
        while self.in_flight:
            self._drain(self.in_flight[-1])
        bucket.dirty, bucket.launched = False, True
        o = self.shard_offset(bucket)
        shard = self.grad_shard[o:o + bucket.shard_size]
        first = not bucket.reduced_once
        bucket.reduced_once = True
        if bucket.group_size == 1:
            shard.add_(bucket.grad)
            self._drain(bucket)
            return
        out = shard if first else torch.empty_like(shard)
        bucket.temp = None if first else out
        try:
            bucket.handle = dist.reduce_scatter_tensor(out, bucket.grad, group=bucket.group, async_op=async_op)
        except (RuntimeError, NotImplementedError):
            if not async_op:
                raise
            self.overlap = False
            bucket.handle = dist.reduce_scatter_tensor(out, bucket.grad, group=bucket.group)
        if not async_op:
            bucket.handle = None
            self._drain(bucket)
        else:
            self.in_flight.append(bucket)

    def _drain(self, bucket: Bucket) -> None:
        """Finish `bucket`'s reduction in flight: wait, add a later micro-batch's part, free the storage."""
        if bucket in self.in_flight:
            self.in_flight.remove(bucket)
        if bucket.handle is not None:
            bucket.handle.wait()
            bucket.handle = None
        if bucket.temp is not None:
            o = self.shard_offset(bucket)
            self.grad_shard[o:o + bucket.shard_size].add_(bucket.temp)
            bucket.temp = None
        if self.release_grads and not bucket.dirty:  # never a view of the shared flat buffer
            free_storage(bucket.grad)

    def _launch(self, bucket: Bucket, async_op: bool) -> None:
        if self.release_grads:
            if bucket.dirty:
                self._reduce_released(bucket, async_op)
            return
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
        if self.release_grads:
            for b in self.buckets:
                if b.late:
                    if not b.dirty:  # finalize_grads reads the tied copies' gradients: zeros if none came
                        alloc_storage(b.grad)
                        b.grad.zero_()
                        b.dirty = True
                elif b.dirty:
                    self._reduce_released(b, async_op=False)
            for b in self.buckets:
                self._drain(b)
            self.in_flight = []
            return
        for b in self.buckets:
            if not b.late and not b.launched:
                self._launch(b, async_op=False)
        for b in self.buckets:
            if b.handle is not None:
                b.handle.wait()
                b.handle = None

    def finish_late(self) -> None:
        for b in self.buckets:
            if b.late and (b.dirty if self.release_grads else not b.launched):
                self._launch(b, async_op=False)
                if self.release_grads:
                    self._drain(b)
        if self.weights is not None:
            self.weights.step_done()  # every unit's gathered weights are given back before the update

    def all_gather_params(self) -> None:
        """After a sharded step: every rank gets the updated slices of the others (shard="full":
        nothing now; a unit is gathered when it next computes)."""
        if self.weights is not None:
            self.weights.refresh()
            return
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
        if self.weights is not None:
            self.weights.unshard()  # the model is whole again for whoever uses it after training


def owned_part(start: int, numel: int, own_a: int, own_e: int) -> tuple[int, int]:
    """[lo, hi): the flat positions of the parameter at [start, start + numel) that fall in this rank's
    slice [own_a, own_e) of its bucket; (start, start) when none do."""
    lo, hi = max(start, own_a), min(start + numel, own_e)
    return (lo, hi) if lo < hi else (start, start)


def free_storage(t: torch.Tensor) -> None:
    """Give a tensor's memory back; its views stay valid and see the memory again after alloc_storage."""
    t.untyped_storage().resize_(0)


def alloc_storage(t: torch.Tensor) -> None:
    """Memory for a tensor whose storage free_storage gave back (contents undefined)."""
    need = t.numel() * t.element_size()
    if t.untyped_storage().nbytes() != need:
        t.untyped_storage().resize_(need)


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
