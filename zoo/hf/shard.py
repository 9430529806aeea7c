"""Full (unsharded) state dicts <-> the slices a rank holds at any TP/PP layout."""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch import nn

from megazoo.core.parallel.context import ParallelContext
from megazoo.core.parallel.gather import full_state
from megazoo.core.parallel.init import local_slice, master_shape


class LayoutError(ValueError):
    """A parallel layout that does not divide the model."""


def stage_layers(num_layers: int, pp: int, pp_rank: int) -> tuple[int, int]:
    """The global layer range of pipeline stage `pp_rank` (equal stages)."""
    if num_layers % pp:
        raise LayoutError(f"pipeline parallelism pp={pp} must divide num_layers={num_layers}; "
                          f"choose a pp that divides it")
    per = num_layers // pp
    return pp_rank * per, (pp_rank + 1) * per


def _tied_copy(p) -> bool:
    """The last stage's copy of a tied embedding table (it names the table it copies)."""
    return bool(getattr(p, "shared_embedding", False) and getattr(p, "init_name", None))


def expected_shapes(model: nn.Module) -> dict[str, tuple]:
    """Full (TP=1, unpadded) shape of every parameter of a model built at any tp; tied copies skipped."""
    tp = model.ctx.tp if hasattr(model, "ctx") else 1
    return {n: master_shape(p, tp) for n, p in model.named_parameters() if not _tied_copy(p)}


@torch.no_grad()
def load_full_state(model: nn.Module, state: dict[str, torch.Tensor], ctx: ParallelContext | None = None) -> nn.Module:
    """Copy this rank's slice of every parameter from a full state dict. A tied output copy on the
    last pipeline stage reads the table it copies (its `init_name`)."""
    ctx = ctx or getattr(model, "ctx", None) or ParallelContext.single()
    missing, mismatched = [], []
    for name, p in model.named_parameters():
        src = name if name in state else getattr(p, "init_name", None)
        if src not in state:
            missing.append(name)
            continue
        want = master_shape(p, ctx.tp)
        if tuple(state[src].shape) != tuple(want):
            mismatched.append(f"{src}: shape {tuple(state[src].shape)}, the model needs {tuple(want)}")
            continue
        p.copy_(local_slice(state[src].to(p.dtype), p, ctx.tp, ctx.tp_rank))
    if missing or mismatched:
        parts = ([f"missing tensors: {', '.join(missing)}"] if missing else []) + \
                (["mismatched tensors: " + "; ".join(mismatched)] if mismatched else [])
        raise ValueError("the state dict does not fit the model: " + " | ".join(parts))
    return model


def stage_state(model: nn.Module, ctx: ParallelContext | None = None) -> dict[str, torch.Tensor]:
    """Full tensors of this stage (gathered over tp: collective), tied copies left out."""
    ctx = ctx or getattr(model, "ctx", None) or ParallelContext.single()
    shared = {n for n, p in model.named_parameters() if _tied_copy(p)}
    return {k: v for k, v in full_state(model, ctx).items() if k not in shared}


def gather_full_state(model: nn.Module, ctx: ParallelContext | None = None) -> dict[str, torch.Tensor]:
    """The whole model's full state dict on every rank: tp slices gathered, pp stages merged.
    Collective over the tp and pp groups."""
    ctx = ctx or getattr(model, "ctx", None) or ParallelContext.single()
    state = {k: v.cpu() for k, v in stage_state(model, ctx).items()}
    if ctx.pp > 1:
        parts = [None] * ctx.pp
        dist.all_gather_object(parts, state, group=ctx.pp_group)
        state = {}
        for part in parts:
            state.update(part)
    return state
