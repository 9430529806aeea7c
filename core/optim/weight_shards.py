"""ZeRO-3 weights (`parallel.shard: full`): each rank keeps 1/d of every weight bucket and gathers a
unit's weights just before the unit computes.

A unit is one element of a model chunk's layer containers (every `nn.ModuleList`/`nn.ModuleDict`
child: transformer layers, T5's encoder and decoder layers), or the chunk's own parameters outside those lists (embeddings,
final norm, output head: the "root" unit). GradBuffers cuts its buckets per unit, so a unit's weights
are whole buckets: rank r keeps slice r of each (`owned`, the optimizer's fragments point into it),
and the bucket's full tensor (`full`, which the parameters are views of) has memory only while the
unit is gathered.

The life of a layer unit in a training step:
  forward:  pre-hook gathers it (all-gather of its buckets; the next layer's gather is started at
            the same time when `prefetch` is on, so it overlaps this layer's compute), post-hook
            frees it and puts a hook on its output;
  backward: the output's gradient arrives, so the layer's backward is next: gather it again (and
            start the previous layer's), and free it once every one of its parameters has its
            gradient (GradBuffers calls `bucket_done`; the reduce-scatter of those gradients has
            already started). A layer with frozen weights (train.trainable) is freed instead when
            the previous layer's output gradient arrives: its own backward is then over.
A forward replayed by activation recompute runs inside the backward pass: its post-hook keeps the
weights, which the layer's backward is about to use. The root unit is gathered at the chunk's
first forward and kept until the step's gradients are complete (`step_done`): its weights are used
at both ends of the model (the tied output head). Outside training steps, `gathered()` makes the
whole model present (evaluation, a builder reading the model between steps); `unshard()` does so
for good at the end of a run.

Freeing keeps the tensors: their storage is resized to zero and back, so autograd's saved
references to the parameters see the gathered values again in backward. The all-gather writes
through the bucket's tensor, not the parameters, and so leaves their autograd version alone.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import torch
import torch.distributed as dist
from torch import nn

from megazoo.core.optim.buffers import alloc_storage, free_storage, owned_part

RELEASED, GATHERING, GATHERED = "released", "gathering", "gathered"


@dataclass(eq=False)
class Unit:
    """The parameters one module brings into computation together: trainable (`params`, in the
    gradient buckets) and frozen (`frozen`, train.trainable: weight-only buckets, no gradients)."""

    module: nn.Module
    params: list[nn.Parameter]
    root: bool = False
    chunk: int = 0
    frozen: list = field(default_factory=list)
    buckets: list = field(default_factory=list)  # every bucket of the unit's weights (gradient and frozen)
    grad_buckets: int = 0  # how many of them receive gradients
    state: str = RELEASED
    handles: list = field(default_factory=list)
    done: int = 0  # buckets complete in this micro-batch's backward
    previous: "Unit | None" = None  # the unit computed just before this one in forward (same chunk)
    next: "Unit | None" = None


def find_units(chunks: list[nn.Module]) -> list[Unit]:
    """Each chunk's root unit, then its layers in forward order."""
    units, seen = [], set()
    for ci, chunk in enumerate(chunks):
        layers: list[nn.Module] = []

        def walk(module: nn.Module) -> None:
            for child in module.children():
                if isinstance(child, nn.ModuleList):
                    layers.extend(child)
                elif isinstance(child, nn.ModuleDict):
                    layers.extend(child.values())
                else:
                    walk(child)
        walk(chunk)
        blocks = []
        for layer in layers:
            params = [p for p in layer.parameters() if id(p) not in seen]
            seen.update(id(p) for p in params)
            if params:
                blocks.append(Unit(layer, [p for p in params if p.requires_grad], chunk=ci,
                                   frozen=[p for p in params if not p.requires_grad]))
        root = [p for p in chunk.parameters() if id(p) not in seen]
        seen.update(id(p) for p in root)
        units.append(Unit(chunk, [p for p in root if p.requires_grad], root=True, chunk=ci,
                          frozen=[p for p in root if not p.requires_grad]))
        for a, b in zip(blocks, blocks[1:]):
            a.next, b.previous = b, a
        units.extend(blocks)
    return units


class WeightShards:
    def __init__(self, buffers, units: list[Unit], prefetch: bool = True, initial=None):
        """`initial` (the ZeRO-3 import; None: the parameters hold their values): the model was built
        on the meta device and `initial.values(params)` gives their values one at a time (fp32, as
        built): each unit in turn has its buckets filled and this rank's slices kept, so no rank ever
        holds more than one bucket of a unit whole (zoo/pretrained.UnitReader)."""
        self.buffers, self.units, self.prefetch = buffers, units, prefetch
        self.offset = dict(buffers.offset)  # where each parameter starts in its bucket's flat tensor (+ b.start)
        self.pinned = False  # every unit gathered and kept (gathered(), unshard())
        self.for_good = False
        self.full: dict = {}  # bucket -> its whole weights (memory only while gathered)
        self.owned: dict = {}  # bucket -> this rank's slice
        self.initial_owned: dict = {}  # with `initial`: bucket -> fp32 values of this rank's slice (main weights)
        self.frozen_buckets = []  # weight-only buckets of the frozen parameters, per unit and kind
        if initial is None:
            for b in buffers.buckets:
                full = buffers.fp32_values[b.start:b.end].to(buffers.dtype, copy=True)
                self._shard(b, full)
                units[b.unit].buckets.append(b)
                units[b.unit].grad_buckets += 1
            for i, u in enumerate(units):
                self._frozen_buckets(u, i, None)
        else:
            for i, u in enumerate(units):
                self._read_unit(u, i, initial)
        for u in units:
            u.state = GATHERED if all(b.group_size == 1 for b in u.buckets) else RELEASED
        self.hooks = []
        for u in units:
            if not u.buckets:
                continue
            self.hooks.append(u.module.register_forward_pre_hook(lambda m, args, u=u: self._before_forward(u)))
            self.hooks.append(u.module.register_forward_hook(lambda m, args, out, u=u: self._after_forward(u, out)))

    def _frozen_buckets(self, u: Unit, i: int, initial) -> None:
        for expert in (False, True):
            members = [p for p in u.frozen if getattr(p, "expert", False) == expert and p.is_floating_point()]
            if members:
                b = self._frozen_bucket(members, expert, i, initial)
                u.buckets.append(b)
                self.frozen_buckets.append(b)

    def _read_unit(self, u: Unit, i: int, initial) -> None:
        """The ZeRO-3 import of unit `u`: each of its buckets filled with its parameters' values, read
        one at a time, as the fp32 values of the whole model would fill it (GradBuffers); this rank's
        slice kept and the rest freed before the next bucket."""
        buffers = self.buffers
        for b in buffers.buckets:
            if b.unit != i:
                continue
            fp32 = torch.zeros(b.end - b.start, dtype=torch.float32, device=buffers.ctx.device)
            for p, value in zip(b.params, initial.values(b.params)):
                a = self.offset[p] - b.start
                fp32[a:a + p.numel()].copy_(value.reshape(-1))
                del value
            self._shard(b, fp32 if buffers.dtype == torch.float32 else fp32.to(buffers.dtype))
            a = b.shard_rank * b.shard_size
            # the optimizer's fp32 main weights start from these (an fp32 model: the owned slice itself)
            self.initial_owned[b] = (self.owned[b] if buffers.dtype == torch.float32
                                     else fp32[a:a + b.shard_size].clone())
            del fp32
            u.buckets.append(b)
            u.grad_buckets += 1
        self._frozen_buckets(u, i, initial)

    def _shard(self, b, full: torch.Tensor) -> None:
        """Make `b`'s parameters views of `full` and keep this rank's slice; free the rest."""
        for p in b.params:
            a = self.offset[p] - b.start
            _point(p, full[a:a + p.numel()].view(p.shape))
        self.full[b] = full
        if b.group_size > 1:
            a = b.shard_rank * b.shard_size
            self.owned[b] = full[a:a + b.shard_size].clone()
            free_storage(full)
        else:  # nothing to shard over (a group of one): the whole bucket is this rank's
            self.owned[b] = full

    def _frozen_bucket(self, members: list, expert: bool, unit: int, initial=None):
        """A bucket of frozen weights (in the dtype they were cast to), padded to the shard count;
        their values are the parameters' own, or those `initial` gives (the ZeRO-3 import)."""
        from megazoo.core.optim.buffers import Bucket
        ctx = self.buffers.ctx
        group, size, rank = ((ctx.expert_dp_group, ctx.expert_dp, ctx.expert_dp_rank) if expert
                             else (ctx.dp_cp_group, ctx.dp_cp, ctx.dp_cp_rank))
        numel = sum(p.numel() for p in members)
        padded = -(-numel // size) * size
        b = Bucket(-1, members, 0, padded, size, False, group, size, rank, unit=unit)
        if initial is None:
            full, values = torch.zeros(padded, dtype=members[0].dtype, device=members[0].device), None
        else:
            full, values = torch.zeros(padded, dtype=members[0].dtype, device=ctx.device), initial.values(members)
        pos = 0
        for p in members:
            self.offset[p] = pos
            full[pos:pos + p.numel()].copy_((next(values) if values is not None else p.detach()).reshape(-1))
            pos += p.numel()
        self._shard(b, full)
        return b

    # gather and free -----------------------------------------------------------------------------
    def _start(self, u: Unit, async_op: bool) -> None:
        if u.state != RELEASED:
            return
        for b in u.buckets:
            if b.group_size == 1:
                continue
            full = self.full[b]
            alloc_storage(full)
            u.handles.append(dist.all_gather_into_tensor(full, self.owned[b], group=b.group,
                                                         async_op=async_op))
        u.state = GATHERING if async_op else GATHERED
        if not async_op:
            u.handles = []

    def _wait(self, u: Unit) -> None:
        for h in u.handles:
            h.wait()
        u.handles = []
        u.state = GATHERED if u.state != RELEASED else u.state

    def gather(self, u: Unit, then: Unit | None = None) -> None:
        """Make `u` present; start gathering `then` (prefetch) before waiting for `u`."""
        self._start(u, async_op=self.prefetch and then is not None)
        if self.prefetch and then is not None:
            self._start(then, async_op=True)
        self._wait(u)

    def release(self, u: Unit) -> None:
        if self.pinned or u.state == RELEASED or all(b.group_size == 1 for b in u.buckets):
            return
        self._wait(u)
        for b in u.buckets:
            if b.group_size > 1:
                free_storage(self.full[b])
        u.state = RELEASED

    # hooks -------------------------------------------------------------------------------------
    def _before_forward(self, u: Unit) -> None:
        if not self.pinned:
            self.gather(u, u.next if not u.root else self._first_layer(u))

    def _after_forward(self, u: Unit, out) -> None:
        if self.pinned:
            return
        if u.root:
            if not torch.is_grad_enabled():
                self.release(u)
            return
        if _in_backward():  # recompute replaying the forward: the layer's backward follows at once
            return
        if torch.is_tensor(out) and out.requires_grad:
            out.register_hook(lambda grad, u=u: self._before_backward(u))
        self.release(u)

    def _before_backward(self, u: Unit) -> None:
        if self.pinned:
            return
        # the gradient of u's output has arrived, so the unit after u has finished its backward: a unit
        # with frozen weights is freed here (its gradients' arrival does not say its weights are done)
        if u.next is not None and u.next.frozen:
            self.release(u.next)
        self.gather(u, u.previous)

    def _first_layer(self, root: Unit) -> Unit | None:
        return next((u for u in self.units if not u.root and u.chunk == root.chunk and u.previous is None), None)

    def bucket_done(self, bucket) -> None:
        """GradBuffers: `bucket`'s gradients of this micro-batch are complete."""
        u = self.units[bucket.unit]
        u.done += 1
        if u.done == u.grad_buckets:
            u.done = 0
            # all of u's gradients are in, so every use of its trainable weights is done; frozen weights
            # may still be needed (for the gradient of u's input): those units wait (_before_backward)
            if not u.root and not u.frozen:
                self.release(u)

    def step_done(self) -> None:
        """The step's gradients are complete: every unit gives its weights back before the update."""
        for u in self.units:
            u.done = 0
            self.release(u)

    def refresh(self) -> None:
        """After the update of the owned slices: a pinned model gathers the new values."""
        if self.pinned:
            for u in self.units:
                u.state = RELEASED if any(b.group_size > 1 for b in u.buckets) else GATHERED
                self._start(u, async_op=False)

    # the whole model ---------------------------------------------------------------------------
    @contextlib.contextmanager
    def gathered(self):
        """Every weight present inside the block (collective: every rank of the group enters it)."""
        if self.pinned:
            yield
            return
        for u in self.units:
            self._start(u, async_op=False)
            self._wait(u)
        self.pinned = True
        try:
            yield
        finally:
            self.pinned = False
            for u in self.units:
                self.release(u)

    def checkpoint_state(self, names: dict, ctx) -> dict:
        """The checkpoint entries of every parameter this sharding holds, trained and frozen: this
        rank's slices (stored name -> Sharded with a flat range; an empty one where none is here)."""
        from megazoo.core.checkpoint.spec import Sharded, flat_param_spec
        out = {}
        for b in list(self.buffers.buckets) + self.frozen_buckets:
            own_a = b.start + b.shard_rank * b.shard_size
            owned = self.owned[b]
            for p in b.params:
                pa = self.offset[p]
                lo, hi = owned_part(pa, p.numel(), own_a, own_a + b.shard_size)
                view = owned[lo - own_a:hi - own_a] if lo < hi else owned[:0]
                out[names[id(p)]] = Sharded(view, flat_param_spec(p, ctx, lo - pa, hi - pa))
        return out

    def unshard(self) -> None:
        """Gather every weight and keep it (the end of a run); the hooks go."""
        if self.for_good:
            return
        for u in self.units:
            self._wait(u)
            self._start(u, async_op=False)
        self.pinned = self.for_good = True
        for h in self.hooks:
            h.remove()
        self.hooks = []

    def bytes_held(self) -> int:
        """Bytes of weights this rank holds now: its owned slices and the units gathered."""
        total = 0
        for b in list(self.buffers.buckets) + self.frozen_buckets:
            full = self.full[b]
            total += full.untyped_storage().nbytes()
            if b.group_size > 1:
                total += self.owned[b].untyped_storage().nbytes()
        return total


def _point(p: torch.nn.Parameter, view: torch.Tensor) -> None:
    """Make parameter `p` a view of `view`'s memory; a parameter built on the meta device (the
    ZeRO-3 import) keeps its identity and attributes (its Python object takes the new tensor)."""
    if not p.is_meta:
        p.data = view
        return
    attrs = dict(p.__dict__)
    # .data = (not the constructor) so that the parameter keeps a version counter of its own, which
    # the all-gather's writes into the bucket leave alone (see the module's docstring)
    real = nn.Parameter(torch.empty(0, dtype=view.dtype, device=view.device), requires_grad=p.requires_grad)
    real.data = view
    torch.utils.swap_tensors(p, real)
    p.__dict__.update(attrs)


def _in_backward() -> bool:
    return torch._C._current_graph_task_id() != -1

