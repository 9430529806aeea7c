"""The mixed-precision AdamW optimizer, plain or distributed (ZeRO-1), with global-norm clipping.

Main parameters are fp32. For an fp32 model they are the model's own parameters (no copy); for
bf16/fp16 models they are fp32 copies, and the model's low-precision parameters are refreshed from
them after each step. Gradients arrive reduced over data parallelism in `GradBuffers.grad_shard`.

MoE expert parameters are reduced and sharded over the expert-data-parallel group (GradBuffers).

Without the distributed optimizer every rank holds all main parameters and Adam moments. With it
(`distributed=True`) rank r of the data-parallel group holds slice r of every gradient bucket: its
main parameters and Adam moments cover only that slice (12/d bytes per parameter for bf16 models),
gradients are reduce-scattered into it, and the updated slices are all-gathered back.

The update itself is torch's AdamW (fused where available, else foreach) over per-parameter
"fragments": the part of each parameter inside this rank's slice, as views of the flat buffers.

ZeRO-2 and ZeRO-3 (`shard="grads"`/`"full"`, see GradBuffers and weight_shards): the gradients,
and with "full" the model's weights too, are held as this rank's slices between uses; the
fragments below then point into those slices, and the checkpoint's model entries are the slices
(`sharded_model_state`), so a checkpoint never needs the whole model on one rank.

Frozen parameters (requires_grad=False, see megazoo.core.train.trainable) are left out of all of
it: no gradient buffer, no main copy, no Adam state, no weight decay. They are only cast to the
compute dtype once, here, and never written again, so they stay bit-equal through training.

The optimizer owns its state and the gradient synchronisation: the trainer calls
`finish_grad_sync()` after the backward passes and `step(lr)`; a checkpoint takes
`sharded_state_dict()` and gives it back through `load_sharded_state_dict()`.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import nn

from megazoo.core.checkpoint.spec import Sharded, copy_state, flat_param_spec, named_parameters
from megazoo.core.optim.buffers import GradBuffers, owned_part
from megazoo.core.optim.weight_shards import find_units
from megazoo.core.parallel.context import ParallelContext
from megazoo.core.parallel.pipeline.grads import finalize_grads


@dataclass
class AdamWSettings:
    lr: float = 3e-4
    weight_decay: float = 0.1
    betas: tuple[float, float] = (0.9, 0.95)
    eps: float = 1e-8
    clip_grad: float = 1.0  # 0 disables clipping
    distributed: bool = False
    bucket_size: int = 10_000_000
    overlap_grad_reduce: bool = True
    shard: str = ""  # none | optimizer | grads | full (ZeRO-1/2/3); "": optimizer when distributed, else none
    shard_prefetch: bool = True  # shard="full": gather the next layer while this one computes
    offload: str = "none"  # cpu: fp32 main weights and Adam state in host memory, the update there


@dataclass
class StepResult:
    skipped: bool
    grad_norm: float
    found_inf: bool


class Fragment:
    """The slice [a, b) of parameter `param` (flat offsets inside the parameter) this rank updates."""

    def __init__(self, param: nn.Parameter, lo: int, hi: int, main: nn.Parameter, grad: torch.Tensor,
                 counted_in_norm: bool = True):
        self.param, self.lo, self.hi, self.main, self.grad = param, lo, hi, main, grad
        self.counted_in_norm = counted_in_norm


def head_copies(chunks: list[nn.Module]) -> set[int]:
    """ids of tied-head copies: `shared_embedding` parameters of chunks without the embeddings (the
    last pipeline stage's copy of the first stage's table, whose gradient finalize_grads made equal)."""
    return {id(p) for c in chunks if not getattr(c, "pre_process", True)
            for p in c.parameters() if getattr(p, "shared_embedding", False)}


def no_decay(p: nn.Parameter) -> bool:
    """Biases and norm weights (1-D tensors) are not decayed."""
    return p.dim() < 2


def lr_scale(p: nn.Parameter) -> float:
    """The factor on the learning rate for `p` (its `lr_scale` attribute, 1 without one)."""
    return float(getattr(p, "lr_scale", 1.0))


class MixedPrecisionOptimizer:
    def __init__(self, chunks: list[nn.Module], ctx: ParallelContext, settings: AdamWSettings,
                 dtype: torch.dtype, scaler, initial=None):
        """`initial` (shard="full"): the chunks were built on the meta device and their values are
        read a unit at a time (GradBuffers, weight_shards; zoo/pretrained.UnitReader)."""
        self.ctx, self.settings, self.dtype, self.scaler = ctx, settings, dtype, scaler
        self.chunks = chunks  # for the tied-embedding gradient sum and the checkpoint names
        seen, params = set(), []
        for chunk in chunks:
            for p in chunk.parameters():
                if p.requires_grad and id(p) not in seen:
                    seen.add(id(p))
                    params.append(p)
        self.params = params
        # the model computes in `dtype`: trainable parameters become views of the buffers' flat
        # `dtype` storage below; a frozen one is cast once and keeps that value for the whole run
        frozen = {id(p): p for c in chunks for p in c.parameters() if not p.requires_grad and id(p) not in seen}
        for p in frozen.values():
            if p.dtype != dtype and p.is_floating_point():
                p.data = p.data.to(dtype)
        shard = settings.shard or ("optimizer" if settings.distributed else "none")
        self.buffers = GradBuffers(params, dtype, ctx, shard != "none", settings.bucket_size,
                                   settings.overlap_grad_reduce, shard=shard,
                                   units=find_units(chunks) if shard == "full" else None,
                                   prefetch=settings.shard_prefetch, initial=initial)
        buf = self.buffers
        self.shard = shard
        self.sharded = buf.grad_shard is not buf.main_grad
        # this rank's main parameters, laid out like grad_shard; with offload in host memory, where the
        # reduced gradients are copied each step (`host_grads`) and Adam updates them
        self.offload = settings.offload == "cpu"
        main_device = torch.device("cpu") if self.offload else ctx.device
        self.host_grads = (torch.zeros(buf.grad_shard.numel(), dtype=torch.float32, device=main_device)
                           if self.offload else None)
        if dtype == torch.float32 and not self.offload:
            self.main_shard = None  # updated in place inside param_data
        else:
            self.main_shard = torch.zeros(buf.grad_shard.numel(), dtype=torch.float32, device=main_device)
            for b in buf.buckets:
                a, e = buf.owned_range(b)
                o = buf.shard_offset(b)
                self.main_shard[o:o + (e - a)].copy_(buf.initial_owned(b))
        buf.drop_initial()  # free the temporary fp32 copy
        copies = head_copies(chunks)
        self.fragments: list[Fragment] = []
        for b in buf.buckets:
            own_a, own_e = buf.owned_range(b)
            o = buf.shard_offset(b)
            for p in b.params:
                pa = buf.offset[p]
                lo, hi = owned_part(pa, p.numel(), own_a, own_e)
                if lo == hi:
                    continue
                s0, s1 = o + lo - own_a, o + hi - own_a
                if self.main_shard is None:
                    main_view = buf.owned_weights(b)[lo - own_a:hi - own_a]
                else:
                    main_view = self.main_shard[s0:s1]
                main = nn.Parameter(main_view)  # shares storage with the flat buffer
                grad = (self.host_grads if self.offload else buf.grad_shard)[s0:s1]
                main.grad = grad
                self.fragments.append(Fragment(p, lo - pa, hi - pa, main, grad, id(p) not in copies))
        # one group per (decayed?, lr_scale): a parameter's `lr_scale` attribute (default 1) scales the
        # schedule's learning rate for it (Megatron's lr_mult), e.g. a retriever's query tower trained
        # end to end beside a reader
        keyed: dict[tuple, list] = {}
        for f in self.fragments:
            keyed.setdefault((no_decay(f.param), lr_scale(f.param)), []).append(f.main)
        groups = [{"params": ps, "weight_decay": 0.0 if plain else settings.weight_decay, "lr_scale": scale}
                  for (plain, scale), ps in sorted(keyed.items())]
        kw = dict(lr=settings.lr, betas=tuple(settings.betas), eps=settings.eps)
        # None: nothing to update on this rank (e.g. a pipeline stage whose parameters are all frozen,
        # or a ZeRO shard holding none of the trainable ones); it still joins every collective
        self.adam: torch.optim.AdamW | None = None
        if groups:
            try:
                self.adam = torch.optim.AdamW(groups, fused=True, **kw)
            except (RuntimeError, ValueError):
                self.adam = torch.optim.AdamW(groups, foreach=True, **kw)

    # ----------------------------------------------------------------------------------------
    def zero_grad(self, num_micro_batches: int) -> None:
        self.buffers.start(num_micro_batches)

    def close(self) -> None:
        """Release the gradient hooks on the model's parameters (the run is over)."""
        self.buffers.remove_hooks()

    def finish_grad_sync(self) -> None:
        """After the step's backward passes: complete the gradients. The order matters: the buckets
        reduced during backward are waited for (the rest reduced now), then the tied embedding copies
        are summed across the first and last pipeline stage, and only then is the late bucket (which
        holds those copies) reduced over data parallelism."""
        self.buffers.finish()
        finalize_grads(self.chunks, self.ctx)
        self.buffers.finish_late()

    @property
    def owned_grads(self) -> torch.Tensor:
        """This rank's reduced gradients where the update reads them (in host memory with offload)."""
        if self.offload:
            self.host_grads.copy_(self.buffers.grad_shard)
            return self.host_grads
        return self.buffers.grad_shard

    def _world_reduce(self, value: torch.Tensor, op=dist.ReduceOp.SUM, model_parallel_only: bool = False) -> torch.Tensor:
        if self.ctx.world_size == 1:
            return value
        group = self.ctx.mp_group if model_parallel_only else None
        dist.all_reduce(value, op=op, group=group)
        return value

    def grad_norm(self) -> float:
        """Global L2 norm of the (reduced, unscaled) gradients across TP, PP and DP shards, counting a
        tp-replicated parameter on tp rank 0 only and a tied head copy not at all. MoE experts differ
        across the ep ranks: without sharding their part is summed over the ep group as well, so each
        expert counts once."""
        counted = [f for f in self.fragments if f.counted_in_norm
                   and (getattr(f.param, "tp_dim", None) is not None or self.ctx.tp_rank == 0)]
        parts = []
        for expert in (False, True):
            grads = [f.grad for f in counted if getattr(f.param, "expert", False) == expert]
            total = torch.zeros((), dtype=torch.float32, device=self.ctx.device)
            if grads:
                norms = torch._foreach_norm(grads)
                total = torch.stack([n.float() for n in norms]).pow(2).sum()
            parts.append(total.to(self.ctx.device))  # offload: computed in host memory
        dense, expert = parts
        if not self.sharded and self.ctx.ep > 1:
            dist.all_reduce(expert, group=self.ctx.ep_group)
        total = dense + expert
        # without sharding every dp rank holds the same reduced grads: reduce over tp x pp only
        self._world_reduce(total, model_parallel_only=not self.sharded)
        return math.sqrt(total.item())

    def step(self, lr: float) -> StepResult:
        """Unscale, check for overflow, clip, update, publish (after finish_grad_sync)."""
        grads = self.owned_grads
        scale = self.scaler.scale
        if scale != 1.0:
            grads.mul_(1.0 / scale)
        found_inf = False
        if self.scaler.dynamic:
            flag = torch.tensor(0.0 if bool(torch.isfinite(grads).all()) else 1.0, device=self.ctx.device)
            found_inf = bool(self._world_reduce(flag, dist.ReduceOp.MAX).item() > 0)
            if found_inf:  # skipped on every rank
                self.scaler.update(True)
                return StepResult(True, float("nan"), True)
        norm = self.grad_norm()
        clip = self.settings.clip_grad
        if clip and clip > 0 and math.isfinite(norm):
            coeff = clip / (norm + 1e-6)
            if coeff < 1.0:
                grads.mul_(coeff)
        if self.adam is not None:
            for group in self.adam.param_groups:
                group["lr"] = lr * group["lr_scale"]
            self.adam.step()
        self._publish_params()
        self.scaler.update(False)
        return StepResult(False, norm, False)

    @torch.no_grad()
    def _publish_params(self) -> None:
        """Make the model compute with the main weights: in a bf16/fp16 run this rank's slice of the
        model takes the (rounded) fp32 main weights (an fp32 run updated the model in place); with
        ZeRO-1 every rank then gathers the others' slices."""
        buf = self.buffers
        if self.main_shard is not None:
            for b in buf.buckets:
                a, e = buf.owned_range(b)
                o = buf.shard_offset(b)
                buf.owned_weights(b).copy_(self.main_shard[o:o + (e - a)])
        buf.all_gather_params()
        # the parameters are views written through their flat buffer, which leaves their own version
        # counters alone: say that they changed, so that what is cached on a version (decoding's
        # packed weight copies, core/nn/decode_linear) is remade
        torch.autograd.graph.increment_version(buf.params)

    def gathered(self):
        """A context in which the whole model is present on every rank (shard="full" gathers it,
        collectively; otherwise it always is)."""
        weights = self.buffers.weights
        return weights.gathered() if weights is not None else contextlib.nullcontext()

    def unshard(self) -> None:
        """The run is over: shard="full" gathers the whole model for good (a no-op otherwise)."""
        if self.buffers.weights is not None:
            self.buffers.weights.unshard()

    def sharded_model_state(self) -> dict:
        """shard="full": the checkpoint entries of the trained parameters, as this rank's slices of
        them (stored name -> Sharded with a flat range); {} otherwise (the model state is the
        parameters themselves)."""
        weights = self.buffers.weights
        if weights is None:
            return {}
        names = {id(p): name for name, p in named_parameters(self.chunks).items()}
        return weights.checkpoint_state(names, self.ctx)

    # ----------------------------------------------------------------------------------------
    def state_bytes(self) -> dict[str, int]:
        """Bytes this rank holds for main parameters (separate fp32 copies) and optimizer state."""
        main = 0 if self.main_shard is None else self.main_shard.numel() * 4
        states = self.adam.state.values() if self.adam is not None else []
        state = sum(t.numel() * t.element_size() for s in states for t in s.values()
                    if torch.is_tensor(t) and t.dim() > 0)
        return {"main_params": main, "optimizer_state": state}

    # checkpoint state ----------------------------------------------------------------------
    def _adam_state(self, fragment: Fragment) -> dict:
        """The Adam state of a fragment, created as torch creates it lazily (zeros, step 0), so that a
        state exists to save and to load into before the first step."""
        state = self.adam.state[fragment.main]
        if not state:
            main = fragment.main
            fused = bool(self.adam.defaults.get("fused"))
            state["step"] = torch.tensor(0.0, dtype=torch.float32, device=main.device if fused else "cpu")
            state["exp_avg"] = torch.zeros_like(main, memory_format=torch.preserve_format)
            state["exp_avg_sq"] = torch.zeros_like(main, memory_format=torch.preserve_format)
        return state

    def sharded_state_dict(self) -> dict:
        """The optimizer part of a checkpoint state (see megazoo.core.checkpoint.spec): under each
        stored parameter name, the Adam moments (`exp_avg`, `exp_avg_sq`) and, in bf16/fp16 runs, the
        fp32 `main` weights of the part of the parameter this rank updates, as Sharded views (save
        reads them, load fills them in place); `step` is the Adam step count. Trainable parameters
        only: a frozen one has no entry (the model state holds it)."""
        names = {id(p): name for name, p in named_parameters(self.chunks).items()}
        exp_avg, exp_avg_sq, main = {}, {}, {}
        steps = set()
        for f in self.fragments:
            name = names[id(f.param)]
            spec = flat_param_spec(f.param, self.ctx, f.lo, f.hi)
            state = self._adam_state(f)
            steps.add(int(state["step"].item()))
            exp_avg[name] = Sharded(state["exp_avg"], spec)
            exp_avg_sq[name] = Sharded(state["exp_avg_sq"], spec)
            if self.main_shard is not None and self.dtype != torch.float32:  # fp32: the model is the main copy
                main[name] = Sharded(f.main.detach(), spec)
        if len(steps) > 1:  # every fragment takes every step together; anything else is a bug
            raise RuntimeError(f"optimizer fragments disagree on the Adam step count: {sorted(steps)}")
        out = {"exp_avg": exp_avg, "exp_avg_sq": exp_avg_sq, "step": steps.pop() if steps else 0}
        if main:
            out["main"] = main
        return out

    @torch.no_grad()
    def load_sharded_state_dict(self, state: dict) -> None:
        """Take a loaded `sharded_state_dict()`: its tensors (a no-op when the checkpoint loader
        filled this optimizer's own views), the Adam step, then the model's weights from the main
        weights, as after a step."""
        copy_state(self.sharded_state_dict(), state)
        if self.offload and self.dtype == torch.float32:  # the host copy takes the loaded fp32 model
            buf = self.buffers
            for b in buf.buckets:
                a, e = buf.owned_range(b)
                o = buf.shard_offset(b)
                self.main_shard[o:o + (e - a)].copy_(buf.owned_weights(b))
        step = float(int(state["step"]))
        for f in self.fragments:
            self._adam_state(f)["step"].fill_(step)
        self._publish_params()
