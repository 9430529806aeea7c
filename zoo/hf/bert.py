"""BERT (BertModel / BertForMaskedLM / BertForPreTraining, and the fine-tuned BertFor-
SequenceClassification / TokenClassification / QuestionAnswering / MultipleChoice) <-> megazoo
BERT in the post-LN layout.

Which heads exist is read from the weights: the masked-LM head (cls.predictions), the pooler
(pooler.dense), the next-sentence head (cls.seq_relationship), a task head (classifier,
qa_outputs: zoo/heads/); `architectures` tells a sequence classifier from a multiple-choice one
(both a pooler and a classifier). HF's "gelu" is the exact GELU.
Megatron's pre-LN BERT maps to HF's MegatronBert classes instead (megatron_bert.py); both share
the embedding and head rules below.
"""

from __future__ import annotations

import re

from megazoo.zoo.bert.config import BertConfig, original_bert
from megazoo.zoo.hf.common import HFExportError, HFImportError, Rule, fused_qkv, same

MODEL_TYPE = "bert"
ARCH = "bert"
PREFIX = "bert."
HEADS = ("cls.", "classifier.", "qa_outputs.")
ACT_TO_MZ = {"gelu": "gelu_exact", "gelu_new": "gelu", "gelu_pytorch_tanh": "gelu"}
ACT_TO_HF = {"gelu_exact": "gelu", "gelu": "gelu_new"}
# megazoo task head -> HF class suffix (after "Bert" / "MegatronBert"), and the head's HF tensor
TASK_CLASSES = {"sequence": "ForSequenceClassification", "token": "ForTokenClassification",
                "span": "ForQuestionAnswering", "choice": "ForMultipleChoice"}
TASK_TENSOR = {"sequence": "classifier", "token": "classifier", "span": "qa_outputs", "choice": "classifier"}


def exports(cfg: BertConfig) -> bool:
    """Whether this adapter writes the export of `cfg`: the original post-LN BERT."""
    return bool(cfg.post_norm)


def check_hf_config(c) -> None:
    """What megazoo's BERT cannot express, in both BERT flavours."""
    if c.hidden_act not in ACT_TO_MZ:
        raise HFImportError(f"BERT hidden_act {c.hidden_act!r} is not supported; supported: {sorted(ACT_TO_MZ)}")
    if getattr(c, "position_embedding_type", "absolute") != "absolute":
        raise HFImportError(f"BERT position_embedding_type {c.position_embedding_type!r} is not supported (only absolute)")
    if getattr(c, "is_decoder", False):
        raise HFImportError("BERT as a decoder (is_decoder=True) is not supported")


def task_from_hf(c, keys) -> dict:
    """task_head, num_labels and label_names from the HF config and the weights present."""
    keys = set(keys)
    archs = [a for a in (getattr(c, "architectures", None) or []) if isinstance(a, str)]
    named = [k for k, suffix in TASK_CLASSES.items() if any(a.endswith(suffix) for a in archs)]
    if "qa_outputs.weight" in keys:
        kind = "span"
        if c.num_labels != 2:
            raise HFImportError(f"a question-answering head with num_labels={c.num_labels}: megazoo's span head "
                                "has exactly 2 outputs (start, end)")
    elif "classifier.weight" in keys:
        if named and named[0] != "span":
            kind = named[0]
        elif "bert.pooler.dense.weight" not in keys:
            kind = "token"  # the only HF BERT classifier without a pooler
        else:
            raise HFImportError(f"classifier weights with a pooler, but config.architectures {archs} does not say "
                                "whether they are a sequence classifier or a multiple-choice head: set "
                                "architectures to [\"BertForSequenceClassification\"] or [\"BertForMultipleChoice\"] "
                                "in config.json")
    else:
        return {}
    names = []
    if kind in ("sequence", "token"):
        id2label = {int(k): str(v) for k, v in (getattr(c, "id2label", None) or {}).items()}
        names = [id2label.get(i, f"LABEL_{i}") for i in range(c.num_labels)]
        if names == [f"LABEL_{i}" for i in range(c.num_labels)]:  # transformers' placeholders: nothing to keep
            names = []
    return dict(task_head=kind, num_labels=c.num_labels, label_names=names)


def config_kwargs(c, keys) -> dict:
    """megazoo BertConfig fields read from an HF (Megatron)BertConfig and the weights present."""
    check_hf_config(c)
    keys = set(keys)
    return dict(num_layers=c.num_hidden_layers, hidden_size=c.hidden_size, num_heads=c.num_attention_heads,
                ffn_hidden_size=c.intermediate_size, vocab_size=c.vocab_size, seq_length=c.max_position_embeddings,
                num_tokentypes=c.type_vocab_size, norm_eps=c.layer_norm_eps, activation=ACT_TO_MZ[c.hidden_act],
                dropout=c.hidden_dropout_prob, attention_dropout=c.attention_probs_dropout_prob,
                add_lm_head="cls.predictions.transform.dense.weight" in keys,
                add_pooler="bert.pooler.dense.weight" in keys,
                add_binary_head="cls.seq_relationship.weight" in keys, **task_from_hf(c, keys))


def config_from_hf(c, keys) -> BertConfig:
    return original_bert(**config_kwargs(c, keys))


def architecture(cfg: BertConfig, prefix: str = "Bert") -> str:
    if cfg.task_head != "none":
        if cfg.add_lm_head or cfg.add_binary_head:
            raise HFExportError(f"{prefix}{TASK_CLASSES[cfg.task_head]} has no masked-LM or next-sentence head: "
                                "build the fine-tuned model with add_lm_head=false and add_binary_head=false")
        return prefix + TASK_CLASSES[cfg.task_head]
    if cfg.add_lm_head:
        return f"{prefix}ForPreTraining" if cfg.add_binary_head else f"{prefix}ForMaskedLM"
    return f"{prefix}Model"


def check_exportable(cfg: BertConfig, post_norm: bool, hf_name: str) -> None:
    if cfg.post_norm != post_norm or cfg.norm != "layernorm" or not cfg.bias or cfg.activation not in ACT_TO_HF:
        raise HFExportError(f"this BERT has no Hugging Face {hf_name} equivalent: {hf_name} is "
                            f"{'post' if post_norm else 'pre'}-LN (post_norm={str(post_norm).lower()}) with LayerNorm, "
                            f"biases and activation in {sorted(ACT_TO_HF)}")
    if cfg.num_kv_heads != cfg.num_heads or cfg.kv_channels * cfg.num_heads != cfg.hidden_size or cfg.attention_scale:
        raise HFExportError("HF BERT needs multi-head attention with head dim = hidden / heads and the default scale")


def hf_config_kwargs(cfg: BertConfig) -> dict:
    labels = {}
    if cfg.task_head != "none":
        labels = dict(num_labels=cfg.num_labels)
        if cfg.label_names:
            labels.update(id2label=dict(enumerate(cfg.label_names)),
                          label2id={n: i for i, n in enumerate(cfg.label_names)})
    return dict(**labels, vocab_size=cfg.vocab_size, hidden_size=cfg.hidden_size, num_hidden_layers=cfg.num_layers,
                num_attention_heads=cfg.num_heads, intermediate_size=cfg.ffn_hidden_size,
                hidden_act=ACT_TO_HF[cfg.activation], max_position_embeddings=cfg.seq_length,
                type_vocab_size=max(cfg.num_tokentypes, 1), layer_norm_eps=cfg.norm_eps,
                hidden_dropout_prob=cfg.dropout, attention_probs_dropout_prob=cfg.attention_dropout)


def config_to_hf(cfg: BertConfig):
    from transformers import BertConfig as HFBertConfig

    check_exportable(cfg, True, "BertModel")
    return HFBertConfig(**hf_config_kwargs(cfg), architectures=[architecture(cfg)])


def embedding_rules(cfg: BertConfig) -> list[Rule]:
    e = "bert.embeddings."
    out = [same("embed.weight", e + "word_embeddings.weight"), same("pos_embed", e + "position_embeddings.weight")]
    if cfg.num_tokentypes:
        out.append(same("tokentype_embed", e + "token_type_embeddings.weight"))
    return out


def attention_rules(cfg: BertConfig, m: str, p: str, w: str) -> list[Rule]:
    """Layer `m` (megazoo) / `p` (HF): the fused QKV and the output projection, for weight/bias `w`."""
    return [fused_qkv(m + "attn.qkv." + w, *(p + f"attention.self.{x}." + w for x in ("query", "key", "value")),
                      cfg.num_heads, cfg.num_heads, cfg.kv_channels),
            same(m + "attn.proj." + w, p + "attention.output.dense." + w),
            same(m + "mlp.fc1." + w, p + "intermediate.dense." + w),
            same(m + "mlp.fc2." + w, p + "output.dense." + w)]


def head_rules(cfg: BertConfig) -> list[Rule]:
    out = []
    for w in ("weight", "bias"):
        if cfg.add_pooler:
            out.append(same("pooler." + w, "bert.pooler.dense." + w))
        if cfg.add_lm_head:
            out += [same("lm_dense." + w, "cls.predictions.transform.dense." + w),
                    same("lm_norm." + w, "cls.predictions.transform.LayerNorm." + w)]
        if cfg.add_binary_head:
            out.append(same("binary_head." + w, "cls.seq_relationship." + w))
        if cfg.task_head != "none":
            out.append(same("task_head.classifier." + w, f"{TASK_TENSOR[cfg.task_head]}.{w}"))
    if cfg.add_lm_head:
        out.append(same("lm_bias", "cls.predictions.bias"))
    return out


def rules(cfg: BertConfig) -> list[Rule]:
    e = "bert.embeddings."
    out = embedding_rules(cfg) + [same("embed_norm.weight", e + "LayerNorm.weight"),
                                  same("embed_norm.bias", e + "LayerNorm.bias")]
    for i in range(cfg.num_layers):
        p, m = f"bert.encoder.layer.{i}.", f"layers.{i}."
        for w in ("weight", "bias"):
            out += attention_rules(cfg, m, p, w)
            out += [same(m + "norm1." + w, p + "attention.output.LayerNorm." + w),
                    same(m + "norm2." + w, p + "output.LayerNorm." + w)]
    return out + head_rules(cfg)


def ignore(cfg: BertConfig) -> re.Pattern:
    # the decoder weight is the word embedding table and its bias is cls.predictions.bias (tied)
    return re.compile(r"position_ids$|^cls\.predictions\.decoder\.(weight|bias)$")


def export_state(cfg: BertConfig, hf_state: dict) -> dict:
    """A model without heads is written as BertModel (keys without the `bert.` prefix). HF's token
    and span classes have no pooler: a pooler the fine-tuned model kept is left out (it does not
    touch their logits, and so was never trained)."""
    if cfg.task_head in ("token", "span"):
        return {k: v for k, v in hf_state.items() if not k.startswith(PREFIX + "pooler.")}
    if cfg.add_lm_head or cfg.add_binary_head or cfg.task_head != "none":
        return hf_state
    return {k[len(PREFIX):] if k.startswith(PREFIX) else k: v for k, v in hf_state.items()}
