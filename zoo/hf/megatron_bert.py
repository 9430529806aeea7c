"""Megatron's pre-LN BERT <-> Hugging Face MegatronBertModel / ForMaskedLM / ForPreTraining and
the fine-tuned MegatronBertFor{SequenceClassification, TokenClassification, QuestionAnswering,
MultipleChoice}.

HF's MegatronBert is Megatron-LM's layout: no LayerNorm on the embeddings, a LayerNorm before
attention (`attention.ln`) and before the MLP (`ln`) in every layer, and a final one
(`encoder.ln`) before the heads. The embeddings and heads (task heads too) are named as in BERT
(bert.py).
"""

from __future__ import annotations

from megazoo.zoo.bert.config import BertConfig, megatron_bert
from megazoo.zoo.hf.bert import (HEADS, attention_rules, architecture, check_exportable, config_kwargs,
                                 embedding_rules, export_state, head_rules, hf_config_kwargs, ignore)
from megazoo.zoo.hf.common import Rule, same

MODEL_TYPE = "megatron-bert"
ARCH = "bert"
PREFIX = "bert."


def exports(cfg: BertConfig) -> bool:
    """Whether this adapter writes the export of `cfg`: Megatron's pre-LN BERT."""
    return not cfg.post_norm


def config_from_hf(c, keys) -> BertConfig:
    return megatron_bert(**config_kwargs(c, keys))


def config_to_hf(cfg: BertConfig):
    from transformers import MegatronBertConfig

    check_exportable(cfg, False, "MegatronBertModel")
    return MegatronBertConfig(**hf_config_kwargs(cfg), architectures=[architecture(cfg, "MegatronBert")])


def rules(cfg: BertConfig) -> list[Rule]:
    out = embedding_rules(cfg)
    for i in range(cfg.num_layers):
        p, m = f"bert.encoder.layer.{i}.", f"layers.{i}."
        for w in ("weight", "bias"):
            out += attention_rules(cfg, m, p, w)
            out += [same(m + "norm1." + w, p + "attention.ln." + w), same(m + "norm2." + w, p + "ln." + w)]
    out += [same("final_norm." + w, "bert.encoder.ln." + w) for w in ("weight", "bias")]
    return out + head_rules(cfg)


__all__ = ["ARCH", "HEADS", "MODEL_TYPE", "PREFIX", "config_from_hf", "config_to_hf", "export_state", "ignore", "rules"]
