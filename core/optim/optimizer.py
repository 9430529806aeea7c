"""The mixed-precision AdamW optimizer, plain or distributed (ZeRO-1), with global-norm clipping.

Main parameters are fp32. For an fp32 model they are the model's own parameters (no copy); for
bf16/fp16 models they are fp32 copies, and the model's low-precision parameters are refreshed from
them after each step. Gradients arrive reduced over data parallelism in `GradBuffers.grad_shard`.

Without the distributed optimizer every rank holds all main parameters and Adam moments. With it
(`distributed=True`) rank r of the data-parallel group holds slice r of every gradient bucket: its
main parameters and Adam moments cover only that slice (12/d bytes per parameter for bf16 models),
gradients are reduce-scattered into it, and the updated slices are all-gathered back.

The update itself is torch's AdamW (fused where available, else foreach) over per-parameter
"fragments": the part of each parameter inside this rank's slice, as views of the flat buffers.

Frozen parameters (requires_grad=False, see megazoo.core.train.trainable) are left out of all of
it: no gradient buffer, no main copy, no Adam state, no weight decay. They are only cast to the
compute dtype once, here, and never written again, so they stay bit-equal through training.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import nn

from megazoo.core.optim.buffers import GradBuffers
from megazoo.core.parallel.context import ParallelContext


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


class MixedPrecisionOptimizer:
    def __init__(self, chunks: list[nn.Module], ctx: ParallelContext, settings: AdamWSettings,
                 dtype: torch.dtype, scaler):
        self.ctx, self.settings, self.dtype, self.scaler = ctx, settings, dtype, scaler
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
        self.buffers = GradBuffers(params, dtype, ctx, settings.distributed, settings.bucket_size,
                                   settings.overlap_grad_reduce)
        buf = self.buffers
        self.sharded = buf.grad_shard is not buf.main_grad
        # this rank's main parameters, laid out like grad_shard
        if dtype == torch.float32:
            self.main_shard = None  # updated in place inside param_data
        else:
            self.main_shard = torch.zeros(buf.grad_shard.numel(), dtype=torch.float32, device=ctx.device)
            for b in buf.buckets:
                a, e = buf.owned_range(b)
                o = buf.shard_offset(b)
                self.main_shard[o:o + (e - a)].copy_(buf.fp32_values[a:e])
        buf.fp32_values = None  # free the temporary fp32 copy
        copies = head_copies(chunks)
        self.fragments: list[Fragment] = []
        for b in buf.buckets:
            own_a, own_e = buf.owned_range(b)
            o = buf.shard_offset(b)
            for p in b.params:
                pa = buf.offset[p]
                lo, hi = max(pa, own_a), min(pa + p.numel(), own_e)
                if lo >= hi:
                    continue
                s0, s1 = o + lo - own_a, o + hi - own_a
                if self.main_shard is None:
                    main_view = buf.param_data[lo:hi]
                else:
                    main_view = self.main_shard[s0:s1]
                main = nn.Parameter(main_view)  # shares storage with the flat buffer
                grad = buf.grad_shard[s0:s1]
                main.grad = grad
                self.fragments.append(Fragment(p, lo - pa, hi - pa, main, grad, id(p) not in copies))
        decay = [f.main for f in self.fragments if not no_decay(f.param)]
        plain = [f.main for f in self.fragments if no_decay(f.param)]
        groups = [{"params": decay, "weight_decay": settings.weight_decay},
                  {"params": plain, "weight_decay": 0.0}]
        groups = [g for g in groups if g["params"]]
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

    @property
    def owned_grads(self) -> torch.Tensor:
        return self.buffers.grad_shard

    def _world_reduce(self, value: torch.Tensor, op=dist.ReduceOp.SUM, model_parallel_only: bool = False) -> torch.Tensor:
        if self.ctx.world_size == 1:
            return value
        group = self.ctx.mp_group if model_parallel_only else None
        dist.all_reduce(value, op=op, group=group)
        return value

    def grad_norm(self) -> float:
        """Global L2 norm of the (reduced, unscaled) gradients across TP, PP and DP shards, counting a
        tp-replicated parameter on tp rank 0 only and a tied head copy not at all."""
        grads = [f.grad for f in self.fragments if f.counted_in_norm
                 and (getattr(f.param, "tp_dim", None) is not None or self.ctx.tp_rank == 0)]
        total = torch.zeros((), dtype=torch.float32, device=self.ctx.device)
        if grads:
            norms = torch._foreach_norm(grads)
            total = torch.stack([n.float() for n in norms]).pow(2).sum()
        # without sharding every dp rank holds the same reduced grads: reduce over tp x pp only
        self._world_reduce(total, model_parallel_only=not self.sharded)
        return math.sqrt(total.item())

    def step(self, lr: float) -> StepResult:
        """Finish the gradient reduction, unscale, check for overflow, clip, update, publish."""
        buf = self.buffers
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
                group["lr"] = lr
            self.adam.step()
        if self.main_shard is not None:
            for b in buf.buckets:
                a, e = buf.owned_range(b)
                o = buf.shard_offset(b)
                buf.param_data[a:e].copy_(self.main_shard[o:o + (e - a)])
        buf.all_gather_params()
        self.scaler.update(False)
        return StepResult(False, norm, False)

    # ----------------------------------------------------------------------------------------
    def state_bytes(self) -> dict[str, int]:
        """Bytes this rank holds for main parameters (separate fp32 copies) and optimizer state."""
        main = 0 if self.main_shard is None else self.main_shard.numel() * 4
        states = self.adam.state.values() if self.adam is not None else []
        state = sum(t.numel() * t.element_size() for s in states for t in s.values()
                    if torch.is_tensor(t) and t.dim() > 0)
        return {"main_params": main, "optimizer_state": state}

    def state_dict(self) -> dict:
        return {"adam": self.adam.state_dict() if self.adam is not None else None,
                "main_shard": None if self.main_shard is None else self.main_shard.clone(),
                "scaler": self.scaler.state_dict(),
                "layout": {"numel": self.buffers.numel, "shards": self.buffers.shards,
                           "shard_rank": self.buffers.shard_rank}}

    def load_state_dict(self, state: dict) -> None:
        mine = {"numel": self.buffers.numel, "shards": self.buffers.shards, "shard_rank": self.buffers.shard_rank}
        if state["layout"] != mine:
            raise ValueError(f"optimizer state was saved with layout {state['layout']}, this run has {mine}; "
                             "resume with the same parallel layout and optim.distributed setting")
        if self.adam is not None:
            self.adam.load_state_dict(state["adam"])
        if self.main_shard is not None:
            self.main_shard.copy_(state["main_shard"])
            buf = self.buffers
            for b in buf.buckets:
                a, e = buf.owned_range(b)
                o = buf.shard_offset(b)
                buf.param_data[a:e].copy_(self.main_shard[o:o + (e - a)])
            buf.all_gather_params()
        self.scaler.load_state_dict(state["scaler"])
