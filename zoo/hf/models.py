"""megazoo architectures by name, through the model registry (zoo/registry.py): config classes,
model classes, layout checks."""

from __future__ import annotations

from megazoo.core.parallel.context import ParallelContext
from megazoo.core.plan.traits import arch_traits
from megazoo.zoo.hf.shard import LayoutError, stage_layers
from megazoo.zoo.registry import builder_class, registered


def config_from_dict(arch: str, d: dict):
    return builder_class(arch).config_class.from_dict(dict(d))


def check_layout(arch: str, cfg, tp: int = 1, pp: int = 1) -> None:
    """Raise LayoutError when tp x pp does not divide the model."""
    traits = arch_traits(arch)
    try:
        cfg.check_tensor_parallel(tp)
    except ValueError as e:
        hint = ""
        if traits.head_padding and "heads" in str(e) and cfg.ffn_hidden_size % tp == 0:
            hint = " (or add zero attention heads with `megazoo import-hf --pad-heads`, pad_heads=True in Python)"
        raise LayoutError(str(e) + hint) from None
    if not traits.pipeline_parallel and pp > 1:
        raise LayoutError(f"{traits.title} does not support pipeline parallelism (parallel.pp={pp}); as in "
                          "Megatron-LM, use tensor (and sequence) parallelism with parallel.pp=1")
    stage_layers(cfg.num_layers, pp, 0)


def build_model(arch: str, cfg, ctx: ParallelContext | None = None, pre_process: bool | None = None,
                post_process: bool | None = None, layers: tuple[int, int] | None = None, dtype=None, device=None):
    """This rank's model (its pp stage unless pre_process/post_process/layers say otherwise)."""
    ctx = ctx or ParallelContext.single()
    check_layout(arch, cfg, ctx.tp, ctx.pp)
    model_cls = builder_class(arch).model_class
    if not arch_traits(arch).pipeline_parallel:  # one whole model: no stage arguments
        return model_cls(cfg, ctx, dtype=dtype, device=device)
    if layers is None:
        layers = stage_layers(cfg.num_layers, ctx.pp, ctx.pp_rank)
    pre = ctx.is_first_stage if pre_process is None else pre_process
    post = ctx.is_last_stage if post_process is None else post_process
    return model_cls(cfg, ctx, pre_process=pre, post_process=post, layers=layers, dtype=dtype, device=device)


__all__ = ["LayoutError", "build_model", "check_layout", "config_from_dict", "registered"]
