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

import difflib
from dataclasses import fields

import torch

from megazoo.core.parallel.context import ParallelConfig, ParallelContext
from megazoo.core.parallel.pipeline.stages import StageSplitError, chunk_ranges, split_layers
from megazoo.core.train.config import ConfigError, check_type
from megazoo.zoo.gpt.config import GPTConfig, flops_per_iteration, gpt2_layout, llama_layout, num_parameters
from megazoo.zoo.gpt.model import GPTModel

LAYOUTS = {"gpt": gpt2_layout, "llama": llama_layout}


class GPTBuilder:
    def __init__(self, model: dict, recompute: str = "none"):
        model = dict(model)
        self.arch = model.pop("arch", "gpt")
        valid = {f.name: f for f in fields(GPTConfig) if f.name != "recompute"}
        for key, value in model.items():
            if key not in valid:
                close = difflib.get_close_matches(key, list(valid), n=1)
                hint = f"; did you mean `model.{close[0]}`?" if close else ""
                raise ConfigError(f"unknown key `model.{key}`{hint}")
            model[key] = check_type(f"model.{key}", value, valid[key].type)
        try:
            self.config: GPTConfig = LAYOUTS[self.arch](**model, recompute=recompute)
        except ValueError as e:
            raise ConfigError(f"model: {e}") from None

    # what the trainer asks ------------------------------------------------------------------
    @property
    def hidden_size(self) -> int:
        return self.config.hidden_size

    @property
    def seq_length(self) -> int:
        return self.config.seq_length

    @property
    def vocab_size(self) -> int:
        return self.config.vocab_size

    def to_dict(self) -> dict:
        d = {"arch": self.arch, **self.config.to_dict()}
        d.pop("recompute")
        return d

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
        if parallel.sp and cfg.seq_length % parallel.tp:
            raise ConfigError(f"model.seq_length={cfg.seq_length} is not divisible by parallel.tp={parallel.tp} "
                              "(sequence parallelism splits the sequence)")

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

    def flops_per_iteration(self, batch: int, tp: int = 1) -> float:
        return float(flops_per_iteration(self.config, batch, self.config.seq_length, tp))

    def num_parameters(self, tp: int = 1) -> int:
        return num_parameters(self.config, tp)


def build(model: dict, recompute: str = "none") -> GPTBuilder:
    return GPTBuilder(model, recompute)
