"""The trainer's entry to T5 (entry point `t5` in the "megazoo.models" group): span-corruption
pretraining on megazoo.core.data's T5 samples, at any TP/SP/DP layout (no pipeline parallelism,
as in Megatron-LM).

    megazoo train t5-tiny --set parallel.tp=2 --nproc 2

Samples (core/data/t5.py: 15% noise in spans, each replaced by a sentinel; model.masking: t5, the
T5 paper's spans of mean length 3, or megatron, whole-word spans of Geometric(0.2) words up to 10) become
micro-batch tensors: input_ids and attention_mask (encoder), decoder_input_ids and
decoder_attention_mask, labels (-100 past the target). The loss is the target tokens' mean, as for
GPT, so the trainer's own normalisation applies. The tokenizer gets 100 sentinel ids.
"""

from __future__ import annotations

import torch

from megazoo.core.data.t5 import decoder_length_for
from megazoo.core.parallel.context import ParallelConfig, ParallelContext
from megazoo.core.plan.flops import model_flops
from megazoo.core.plan.shapes import ModelShape
from megazoo.core.train.config import ConfigError
from megazoo.zoo.builder_base import ModelBuilder, Samples, parse_model_section
from megazoo.zoo.t5.config import T5Config
from megazoo.zoo.t5.model import T5Model

IGNORE = -100
SENTINELS = 100


def t5_sample(item: dict) -> dict[str, torch.Tensor]:
    """A core.data T5 item as the model's inputs (labels -100 past the target)."""
    labels = torch.as_tensor(item["labels"]).long()
    return {"input_ids": torch.as_tensor(item["text_enc"]).long(),
            "attention_mask": torch.as_tensor(item["enc_mask"]).long(),
            "decoder_input_ids": torch.as_tensor(item["text_dec"]).long(),
            "decoder_attention_mask": torch.as_tensor(item["dec_mask"]).long(),
            "labels": torch.where(torch.as_tensor(item["loss_mask"]) == 1, labels, IGNORE)}


class T5Builder(ModelBuilder):
    own_data = True  # span-corruption samples
    tokenizer_extra_ids = SENTINELS  # the trainer builds data.tokenizer with this many sentinels
    config_class, model_class = T5Config, T5Model
    hf_model_types = ("t5",)

    def __init__(self, model: dict, recompute: str = "none"):
        self.arch, kwargs = parse_model_section(model, T5Config, "t5")
        if recompute != "none":
            raise ConfigError(f"recompute={recompute}: activation recomputation is not implemented for T5; use none")
        try:
            self.config: T5Config = T5Config(**kwargs)
        except ValueError as e:
            raise ConfigError(f"model: {e}") from None

    def check_layout(self, parallel: ParallelConfig) -> None:
        if parallel.pp > 1:
            raise ConfigError(f"parallel.pp={parallel.pp}: T5 does not support pipeline parallelism (as in "
                              "Megatron-LM); use tensor and sequence parallelism with parallel.pp=1")
        try:
            self.config.check_tensor_parallel(parallel.tp)
        except ValueError as e:
            raise ConfigError(f"model: {e}") from None
        self.check_sequence_parallel(parallel)

    def chunks(self, ctx: ParallelContext, seed: int, device=None) -> list[T5Model]:
        return [T5Model(self.config, ctx, dtype=torch.float32, device=device or ctx.device).initialize(seed)]

    def shape(self) -> ModelShape:
        """Encoder over seq_length tokens, decoder (self- and cross-attention) and output layer over
        the span-corruption target length."""
        c = self.config
        return ModelShape(
            num_layers=c.num_layers, hidden_size=c.hidden_size, num_heads=c.num_heads,
            ffn_hidden_size=c.ffn_hidden_size, vocab_size=c.vocab_size, seq_length=c.seq_length,
            num_kv_heads=c.num_kv_heads, kv_channels=c.kv_channels, activation=c.activation,
            tie_embeddings=c.tie_embeddings, arch="t5", position="relative", norm=c.norm, bias=c.bias,
            num_decoder_layers=c.num_decoder_layers, dropout=bool(c.dropout or c.attention_dropout),
            vocab_multiple=c.make_vocab_size_divisible_by,
            decoder_seq_length=decoder_length_for(c.seq_length - 1, c.masking),
            relative_buckets=c.relative_attention_num_buckets)

    def flops_per_iteration(self, batch: int, tp: int = 1, seq_length: int | None = None) -> float:
        # span-corruption samples are always seq_length long: the trainer's seq_length is not used
        return model_flops(self.shape(), batch, tp=tp)

    def data_sources(self, data: dict, tokenizer, seed: int, num_samples) -> tuple:
        from megazoo.core.data import build_t5_datasets

        splits = build_t5_datasets(data, tokenizer, self.config.seq_length, seed, num_samples,
                                   masking=self.config.masking)
        return tuple(Samples(s, t5_sample) if s is not None else None for s in (splits.train, splits.valid))


build = T5Builder  # the registered entry (t5): build(model, recompute) -> T5Builder
