"""T5 (T5ForConditionalGeneration) <-> megazoo T5.

The relative-position table lives in the first block of each stack in HF (shared by all its
layers) and once per stack in megazoo. "gated-gelu" (T5 v1.1) is megazoo's geglu: wi_0 is the
gate, wi_1 the up projection.
"""

from __future__ import annotations

import re

from megazoo.zoo.hf.common import HFExportError, HFImportError, Rule, fused_qkv, same
from megazoo.zoo.t5.config import T5Config

MODEL_TYPE = "t5"
ARCH = "t5"
PREFIX = ""


def exports(cfg: T5Config) -> bool:
    """Whether this adapter writes the export of `cfg`: every T5."""
    return True


def config_from_hf(c, keys) -> T5Config:
    act = getattr(c, "dense_act_fn", "relu")
    gated = getattr(c, "is_gated_act", False)
    if (gated, act) == (False, "relu"):
        activation = "relu"
    elif gated and act in ("gelu_new", "gelu_pytorch_tanh"):
        activation = "geglu"
    else:
        raise HFImportError(f"T5 feed_forward_proj {c.feed_forward_proj!r} is not supported (relu or gated-gelu)")
    # transformers 5 always ties the head to the table and keeps v1.0's output scaling apart
    # (scale_decoder_outputs); older releases used tie_word_embeddings for both
    tied = bool(getattr(c, "tie_word_embeddings", True))
    start = getattr(c, "decoder_start_token_id", None)
    return T5Config(num_layers=c.num_layers, num_decoder_layers=c.num_decoder_layers, hidden_size=c.d_model,
                    num_heads=c.num_heads, kv_channels=c.d_kv, ffn_hidden_size=c.d_ff, vocab_size=c.vocab_size,
                    relative_attention_num_buckets=c.relative_attention_num_buckets,
                    relative_attention_max_distance=c.relative_attention_max_distance, norm_eps=c.layer_norm_epsilon,
                    activation=activation, tie_embeddings=tied,
                    scale_output=bool(getattr(c, "scale_decoder_outputs", tied)),
                    decoder_start_token_id=start if start is not None else (c.pad_token_id or 0), pad_token_id=c.pad_token_id or 0,
                    eos_token_id=c.eos_token_id if c.eos_token_id is not None else 1, dropout=c.dropout_rate)


def architecture(cfg: T5Config) -> str:
    return "T5ForConditionalGeneration"


def config_to_hf(cfg: T5Config):
    from transformers import T5Config as HFT5Config

    if not cfg.tie_embeddings:
        raise HFExportError("transformers 5 always ties T5's output layer to the embeddings; this T5 has an untied head")
    if cfg.norm != "rmsnorm" or cfg.bias or cfg.activation not in ("relu", "geglu") or cfg.attention_scale != 1.0:
        raise HFExportError("this T5 config has no HF T5 equivalent (rmsnorm, no biases, relu or geglu, scale 1)")
    return HFT5Config(vocab_size=cfg.vocab_size, d_model=cfg.hidden_size, d_kv=cfg.kv_channels, d_ff=cfg.ffn_hidden_size,
                      num_layers=cfg.num_layers, num_decoder_layers=cfg.num_decoder_layers, num_heads=cfg.num_heads,
                      relative_attention_num_buckets=cfg.relative_attention_num_buckets,
                      relative_attention_max_distance=cfg.relative_attention_max_distance, dropout_rate=cfg.dropout,
                      layer_norm_epsilon=cfg.norm_eps, feed_forward_proj="relu" if cfg.activation == "relu" else "gated-gelu",
                      tie_word_embeddings=cfg.scale_output, decoder_start_token_id=cfg.decoder_start_token_id,
                      pad_token_id=cfg.pad_token_id, eos_token_id=cfg.eos_token_id, is_encoder_decoder=True,
                      architectures=[architecture(cfg)])


def _mlp(cfg, m, p) -> list[Rule]:
    if cfg.activation == "geglu":
        return [same(m + "mlp.gate.weight", p + "DenseReluDense.wi_0.weight"), same(m + "mlp.fc1.weight", p + "DenseReluDense.wi_1.weight"),
                same(m + "mlp.fc2.weight", p + "DenseReluDense.wo.weight")]
    return [same(m + "mlp.fc1.weight", p + "DenseReluDense.wi.weight"), same(m + "mlp.fc2.weight", p + "DenseReluDense.wo.weight")]


def _attn(cfg, m, p) -> list[Rule]:
    return [fused_qkv(m + "qkv.weight", p + "q.weight", p + "k.weight", p + "v.weight", cfg.num_heads, cfg.num_heads, cfg.kv_channels),
            same(m + "proj.weight", p + "o.weight")]


def rules(cfg: T5Config) -> list[Rule]:
    out = [same("embed.weight", "shared.weight")]
    for stack, n in (("encoder", cfg.num_layers), ("decoder", cfg.num_decoder_layers)):
        out.append(same(f"{stack}.rel_bias.weight", f"{stack}.block.0.layer.0.SelfAttention.relative_attention_bias.weight"))
        for i in range(n):
            p, m = f"{stack}.block.{i}.layer.", f"{stack}.layers.{i}."
            out.append(same(m + "norm1.weight", p + "0.layer_norm.weight"))
            if stack == "encoder":
                out += _attn(cfg, m + "attn.", p + "0.SelfAttention.")
                out += [same(m + "norm2.weight", p + "1.layer_norm.weight")] + _mlp(cfg, m, p + "1.")
            else:
                out += _attn(cfg, m + "self_attn.", p + "0.SelfAttention.")
                out.append(same(m + "norm_cross.weight", p + "1.layer_norm.weight"))
                out += [same(m + f"cross_attn.{x}.weight", p + f"1.EncDecAttention.{x}.weight") for x in "qkv"]
                out.append(same(m + "cross_attn.proj.weight", p + "1.EncDecAttention.o.weight"))
                out += [same(m + "norm2.weight", p + "2.layer_norm.weight")] + _mlp(cfg, m, p + "2.")
        out.append(same(f"{stack}.final_norm.weight", f"{stack}.final_layer_norm.weight"))
    if not cfg.tie_embeddings:
        out.append(same("head.weight", "lm_head.weight"))
    return out


def ignore(cfg: T5Config) -> re.Pattern:
    # encoder/decoder embed_tokens are the shared table; a tied lm_head is too
    return re.compile(r"^(encoder|decoder)\.embed_tokens\.weight$" + (r"|^lm_head\.weight$" if cfg.tie_embeddings else ""))
