"""The trainer's entry to BERT (entry point `bert` in the "megazoo.models" group): Megatron's
pretraining objective on megazoo.core.data's BERT samples, at any TP/SP/PP/DP layout.

    megazoo train bert-tiny --set parallel.tp=2 parallel.pp=2 --nproc 4

Samples (core/data/bert.py: sentence pairs, 15% of tokens masked 80/10/10, segments swapped half
the time) become micro-batch tensors: input_ids, token_type_ids, attention_mask (1 = token),
labels (the original token where masked, -100 elsewhere) and sop_labels (1 = segments swapped).
The loss is Megatron-LM's: the masked-LM loss averaged over the global batch's masked tokens plus,
with the binary head, the sentence-order loss averaged over its sequences.
"""

from __future__ import annotations

import difflib
from dataclasses import fields

import torch
import torch.nn.functional as F

from megazoo.core.parallel.context import ParallelConfig, ParallelContext
from megazoo.core.parallel.pipeline.stages import StageSplitError, chunk_ranges, split_layers
from megazoo.core.train.config import ConfigError, check_type
from megazoo.zoo.bert.config import BertConfig, megatron_bert, original_bert
from megazoo.zoo.bert.model import BertModel
from megazoo.zoo.gpt.config import flops_per_iteration

IGNORE = -100


class BertSamples:
    """A core.data BERT dataset as the trainer's source: global index -> dict of tensors."""

    def __init__(self, dataset):
        self.dataset = dataset

    def __len__(self) -> int:
        return len(self.dataset)

    def get(self, index: int) -> dict[str, torch.Tensor]:
        item = self.dataset[index % len(self.dataset)]
        labels = torch.as_tensor(item["labels"]).long()
        return {"input_ids": torch.as_tensor(item["text"]).long(),
                "token_type_ids": torch.as_tensor(item["types"]).long(),
                "attention_mask": torch.as_tensor(item["padding_mask"]).long(),
                "labels": torch.where(torch.as_tensor(item["loss_mask"]) == 1, labels, IGNORE),
                "sop_labels": torch.as_tensor(item["is_random"]).long()}


class BertBuilder:
    def __init__(self, model: dict, recompute: str = "none"):
        model = dict(model)
        self.arch = model.pop("arch", "bert")
        valid = {f.name: f for f in fields(BertConfig) if f.name != "recompute"}
        for key, value in model.items():
            if key not in valid:
                close = difflib.get_close_matches(key, list(valid), n=1)
                hint = f"; did you mean `model.{close[0]}`?" if close else ""
                raise ConfigError(f"unknown key `model.{key}`{hint}")
            model[key] = check_type(f"model.{key}", value, valid[key].type)
        make = original_bert if model.get("post_norm") else megatron_bert
        try:
            self.config: BertConfig = make(**model, recompute=recompute)
        except ValueError as e:
            raise ConfigError(f"model: {e}") from None
        if not self.config.add_lm_head:
            raise ConfigError("model.add_lm_head=false: BERT pretraining needs the masked-LM head")

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
            split_layers(cfg.num_layers, parallel.pp, parallel.vpp)
        except (ValueError, StageSplitError) as e:
            raise ConfigError(f"model: {e}") from None
        if parallel.sp and cfg.seq_length % parallel.tp:
            raise ConfigError(f"model.seq_length={cfg.seq_length} is not divisible by parallel.tp={parallel.tp} "
                              "(sequence parallelism splits the sequence)")

    def chunks(self, ctx: ParallelContext, seed: int, device=None) -> list[BertModel]:
        stages = ctx.pp * ctx.vpp
        out = []
        for chunk, layers in enumerate(chunk_ranges(self.config.num_layers, ctx.pp, ctx.vpp, ctx.pp_rank)):
            v = chunk * ctx.pp + ctx.pp_rank
            model = BertModel(self.config, ctx, pre_process=v == 0, post_process=v == stages - 1, layers=layers,
                              dtype=torch.float32, device=device or ctx.device)
            out.append(model.initialize(seed))
        return out

    def flops_per_iteration(self, batch: int, tp: int = 1) -> float:
        """Megatron's formula (as GPT's) with bidirectional attention (twice the causal score FLOPs)
        and the masked-LM head's dense layer."""
        cfg, s = self.config, self.config.seq_length
        q = cfg.kv_channels * cfg.num_heads
        return float(flops_per_iteration(cfg, batch, s, tp) + 6 * q * batch * s * s * cfg.num_layers
                     + 6 * batch * s * cfg.hidden_size ** 2)

    def num_parameters(self, tp: int = 1) -> int:
        ctx = ParallelContext.single()
        model = BertModel(self.config, ctx, device="meta")
        per_rank_vocab = self.config.padded_vocab(tp) - self.config.padded_vocab(1)
        return sum(p.numel() for p in model.parameters()) + per_rank_vocab * (self.config.hidden_size + 1)

    # BERT's own data and objective --------------------------------------------------------------
    def data_sources(self, data: dict, tokenizer, seed: int, num_samples) -> tuple:
        from megazoo.core.data import build_bert_datasets

        splits = build_bert_datasets(data, tokenizer, self.config.seq_length, seed, num_samples,
                                     binary_head=self.config.add_binary_head)
        return tuple(BertSamples(s) if s is not None else None for s in (splits.train, splits.valid))

    def loss_counts(self, micro_batches: list[dict]) -> dict[str, torch.Tensor]:
        return {"masked": sum((mb["labels"] != IGNORE).sum() for mb in micro_batches),
                "sequences": torch.tensor(sum(mb["labels"].shape[0] for mb in micro_batches))}

    def loss(self, out, mb: dict, counts: dict[str, float]) -> torch.Tensor:
        loss = out.lm_loss.float().sum() / counts["masked"]
        if self.config.add_binary_head:
            sop = F.cross_entropy(out.binary_logits.float(), mb["sop_labels"], reduction="sum")
            loss = loss + sop / counts["sequences"]
        return loss


def build(model: dict, recompute: str = "none") -> BertBuilder:
    return BertBuilder(model, recompute)
