"""The trainer's entry to GPT and Llama-style decoders (entry points `gpt` and `llama` in the
"megazoo.models" group): validate a model config dict, build this rank's pipeline chunks, count FLOPs.

    builder = build({"arch": "gpt", "num_layers": 2, ...}, recompute="none")
    chunks = builder.chunks(ctx, seed)        # one GPTModel stage per virtual pipeline stage

Chunk c of pp rank r is virtual stage c * pp + r, with the layer split of the pipeline runtime
(megazoo.core.parallel.pipeline.stages: even, the first stages taking any extra layer). With pp > 1
and tied embeddings the model marks both copies `shared_embedding`; the pipeline runtime sums their
gradients and the trainer reduces them after that.
"""

from __future__ import annotations

import torch

from megazoo.core.parallel.context import ParallelConfig, ParallelContext
from megazoo.core.parallel.pipeline.stages import StageSplitError, chunk_ranges, split_layers
from megazoo.core.plan.shapes import ModelShape
from megazoo.core.train.config import ConfigError
from megazoo.zoo.builder_base import ModelBuilder, parse_model_section
from megazoo.zoo.gpt.config import GPTConfig, gpt2_layout, llama_layout
from megazoo.zoo.gpt.model import GPTModel

LAYOUTS = {"gpt": gpt2_layout, "llama": llama_layout}


class GPTBuilder(ModelBuilder):
    config_class, model_class = GPTConfig, GPTModel
    hf_model_types = ("gpt2", "llama", "mixtral")

    def __init__(self, model: dict, recompute: str = "none"):
        self.arch, kwargs = parse_model_section(model, GPTConfig, "gpt")
        try:
            self.config: GPTConfig = LAYOUTS[self.arch](**kwargs, recompute=recompute)
        except ValueError as e:
            raise ConfigError(f"model: {e}") from None

    def check_layout(self, parallel: ParallelConfig) -> None:
        cfg = self.config
        try:
            cfg.check_tensor_parallel(parallel.tp)
        except ValueError as e:
            raise ConfigError(str(e)) from None
        try:
            split_layers(cfg.num_layers, parallel.pp, parallel.vpp)
        except StageSplitError as e:
            raise ConfigError(f"model.num_layers={cfg.num_layers}: {e}") from None
        self.check_sequence_parallel(parallel)

    def chunks(self, ctx: ParallelContext, seed: int, device=None) -> list[GPTModel]:
        cfg = self.config
        stages = ctx.pp * ctx.vpp
        out = []
        for chunk, layers in enumerate(chunk_ranges(cfg.num_layers, ctx.pp, ctx.vpp, ctx.pp_rank)):
            v = chunk * ctx.pp + ctx.pp_rank
            model = GPTModel(cfg, ctx, pre_process=v == 0, post_process=v == stages - 1, layers=layers,
                             dtype=torch.float32, device=device or ctx.device)
            out.append(model.initialize(seed))
        return out

    def shape(self) -> ModelShape:
        return self.config.shape(self.arch)


build = GPTBuilder  # the registered entry (gpt, llama): build(model, recompute) -> GPTBuilder
