"""The trainer's entry to BERT (entry point `bert` in the "megazoo.models" group): Megatron's
pretraining objective on megazoo.core.data's BERT samples, at any TP/SP/PP/DP layout.

    megazoo train bert-tiny --set parallel.tp=2 parallel.pp=2 --nproc 4

Samples (core/data/bert.py: sentence pairs, 15% of tokens masked 80/10/10 as whole-word n-grams
(model.masking: whole_word, Megatron's default; or token), segments swapped half the time) become
micro-batch tensors: input_ids, token_type_ids, attention_mask (1 = token),
labels (the original token where masked, -100 elsewhere) and sop_labels (1 = segments swapped).
The loss is Megatron-LM's: the masked-LM loss averaged over the global batch's masked tokens plus,
with the binary head, the sentence-order loss averaged over its sequences.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from megazoo.core.parallel.context import ParallelConfig, ParallelContext
from megazoo.core.parallel.pipeline.stages import StageSplitError, chunk_ranges, split_layers
from megazoo.core.plan.shapes import ModelShape
from megazoo.core.train.config import ConfigError
from megazoo.zoo.bert.config import BertConfig, megatron_bert, original_bert
from megazoo.zoo.bert.model import BertModel
from megazoo.zoo.builder_base import ModelBuilder, Samples, parse_model_section
from megazoo.zoo.heads import num_outputs

IGNORE = -100


def bert_sample(item: dict) -> dict[str, torch.Tensor]:
    """A core.data BERT item as the model's inputs (labels -100 where nothing is predicted)."""
    labels = torch.as_tensor(item["labels"]).long()
    return {"input_ids": torch.as_tensor(item["text"]).long(),
            "token_type_ids": torch.as_tensor(item["types"]).long(),
            "attention_mask": torch.as_tensor(item["padding_mask"]).long(),
            "labels": torch.where(torch.as_tensor(item["loss_mask"]) == 1, labels, IGNORE),
            "sop_labels": torch.as_tensor(item["is_random"]).long()}


class BertBuilder(ModelBuilder):
    own_data = True  # masked-LM + sentence-order samples
    config_class, model_class = BertConfig, BertModel
    hf_model_types = ("bert", "megatron-bert")

    def __init__(self, model: dict, recompute: str = "none"):
        self.arch, kwargs = parse_model_section(model, BertConfig, "bert")
        if kwargs.get("task_head", "none") == "none":
            # pretraining: the sentence-order head is on unless the recipe says otherwise, as in
            # Megatron's pretrain_bert.py (--bert-no-binary-head turns it off); it reads the pooler
            kwargs.setdefault("add_binary_head", kwargs.get("add_pooler", True))
        make = original_bert if kwargs.get("post_norm") else megatron_bert
        try:
            self.config: BertConfig = make(**kwargs, recompute=recompute)
        except ValueError as e:
            raise ConfigError(f"model: {e}") from None
        if not self.config.add_lm_head and getattr(self.config, "task_head", "none") == "none":
            raise ConfigError("model.add_lm_head=false: BERT pretraining needs the masked-LM head (a fine-tuning "
                              "task sets its own head: task.name)")

    def check_layout(self, parallel: ParallelConfig) -> None:
        cfg = self.config
        try:
            cfg.check_tensor_parallel(parallel.tp)
            split_layers(cfg.num_layers, parallel.pp, parallel.vpp)
        except (ValueError, StageSplitError) as e:
            raise ConfigError(f"model: {e}") from None
        self.check_sequence_parallel(parallel)

    def chunks(self, ctx: ParallelContext, seed: int, device=None) -> list[BertModel]:
        stages = ctx.pp * ctx.vpp
        out = []
        for chunk, layers in enumerate(chunk_ranges(self.config.num_layers, ctx.pp, ctx.vpp, ctx.pp_rank)):
            v = chunk * ctx.pp + ctx.pp_rank
            model = BertModel(self.config, ctx, pre_process=v == 0, post_process=v == stages - 1, layers=layers,
                              dtype=torch.float32, device=device or ctx.device)
            out.append(model.initialize(seed))
        return out

    def shape(self) -> ModelShape:
        """Bidirectional attention (counted twice the causal score FLOPs), the masked-LM head's
        dense layer; without that head (a fine-tuned task model) neither its dense layer nor the
        vocabulary projection is computed (the small task heads count as parameters, not FLOPs)."""
        c = self.config
        return ModelShape(
            num_layers=c.num_layers, hidden_size=c.hidden_size, num_heads=c.num_heads,
            ffn_hidden_size=c.ffn_hidden_size, vocab_size=c.vocab_size, seq_length=c.seq_length,
            num_kv_heads=c.num_kv_heads, kv_channels=c.kv_channels, activation=c.activation, arch="bert",
            position="learned", norm=c.norm, bias=c.bias, dropout=bool(c.dropout or c.attention_dropout),
            vocab_multiple=c.make_vocab_size_divisible_by, adapter_size=c.adapter_size,
            num_tokentypes=c.num_tokentypes, embedding_norm=c.post_norm, final_norm=not c.post_norm,
            lm_head=c.add_lm_head, pooler=c.add_pooler, binary_head=c.add_binary_head,
            task_outputs=num_outputs(c.task_head, c.num_labels) if c.task_head != "none" else 0)

    # BERT's own data and objective --------------------------------------------------------------
    def data_sources(self, data: dict, tokenizer, seed: int, num_samples) -> tuple:
        from megazoo.core.data import build_bert_datasets

        cfg = self.config
        splits = build_bert_datasets(data, tokenizer, cfg.seq_length, seed, num_samples, binary_head=cfg.add_binary_head,
                                     masking=cfg.masking, max_ngram=cfg.max_ngram)
        return tuple(Samples(s, bert_sample) if s is not None else None for s in (splits.train, splits.valid))

    def loss_counts(self, micro_batches: list[dict]) -> dict[str, torch.Tensor]:
        return {"masked": sum((mb["labels"] != IGNORE).sum() for mb in micro_batches),
                "sequences": torch.tensor(sum(mb["labels"].shape[0] for mb in micro_batches))}

    def loss(self, out, mb: dict, counts: dict[str, float]) -> torch.Tensor:
        loss = out.lm_loss.float().sum() / counts["masked"]
        if self.config.add_binary_head:
            sop = F.cross_entropy(out.binary_logits.float(), mb["sop_labels"], reduction="sum")
            loss = loss + sop / counts["sequences"]
        return loss


build = BertBuilder  # the registered entry (bert): build(model, recompute) -> BertBuilder
