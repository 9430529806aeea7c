"""megazoo architectures by name: config classes, model classes, layout checks."""

from __future__ import annotations

from megazoo.core.parallel.context import ParallelContext
from megazoo.zoo.hf.shard import LayoutError, stage_layers

ARCHS = ("gpt", "llama", "bert", "t5")


def _classes(arch: str):
    if arch in ("gpt", "llama"):
        from megazoo.zoo.gpt import GPTConfig, GPTModel

        return GPTConfig, GPTModel
    if arch == "bert":
        from megazoo.zoo.bert import BertConfig, BertModel

        return BertConfig, BertModel
    if arch == "t5":
        from megazoo.zoo.t5 import T5Config, T5Model

        return T5Config, T5Model
    raise ValueError(f"unknown megazoo architecture {arch!r}; known: {', '.join(ARCHS)}")


def config_from_dict(arch: str, d: dict):
    return _classes(arch)[0].from_dict(dict(d))


def check_layout(arch: str, cfg, tp: int = 1, pp: int = 1) -> None:
    """Raise LayoutError when tp x pp does not divide the model."""
    try:
        cfg.check_tensor_parallel(tp)
    except ValueError as e:
        hint = ""
        if arch != "t5" and "heads" in str(e) and cfg.ffn_hidden_size % tp == 0:
            hint = " (or add zero attention heads with `megazoo import-hf --pad-heads`, pad_heads=True in Python)"
        raise LayoutError(str(e) + hint) from None
    if arch == "t5" and pp > 1:
        raise LayoutError(f"T5 does not support pipeline parallelism (parallel.pp={pp}); as in Megatron-LM, "
                          "use tensor (and sequence) parallelism with parallel.pp=1")
    stage_layers(cfg.num_layers, pp, 0)


def build_model(arch: str, cfg, ctx: ParallelContext | None = None, pre_process: bool | None = None,
                post_process: bool | None = None, layers: tuple[int, int] | None = None, dtype=None, device=None):
    """This rank's model (its pp stage unless pre_process/post_process/layers say otherwise)."""
    ctx = ctx or ParallelContext.single()
    check_layout(arch, cfg, ctx.tp, ctx.pp)
    model_cls = _classes(arch)[1]
    if arch == "t5":
        return model_cls(cfg, ctx, dtype=dtype, device=device)
    if layers is None:
        layers = stage_layers(cfg.num_layers, ctx.pp, ctx.pp_rank)
    pre = ctx.is_first_stage if pre_process is None else pre_process
    post = ctx.is_last_stage if post_process is None else post_process
    return model_cls(cfg, ctx, pre_process=pre, post_process=post, layers=layers, dtype=dtype, device=device)


__all__ = ["ARCHS", "LayoutError", "build_model", "check_layout", "config_from_dict"]
