"""Llama (LlamaForCausalLM) <-> megazoo GPT in the Llama layout (RoPE, RMSNorm, SwiGLU, GQA).

HF's Llama applies rotary embeddings in the "rotate half" convention, which is what
megazoo.core.nn.rope implements, so q/k need no permutation beyond megazoo's per-KV-group fusing.
(GGUF files store q/k interleaved; transformers undoes that when it loads them.)
"""

from __future__ import annotations

import re

from megazoo.zoo.gpt.config import GPTConfig, llama_layout
from megazoo.zoo.hf.common import HFExportError, HFImportError, Rule, fused_qkv, same

MODEL_TYPE = "llama"
ARCH = "llama"
PREFIX = "model."


def exports(cfg: GPTConfig) -> bool:
    """Whether this adapter writes the export of `cfg`: a dense decoder with rotary positions."""
    return cfg.moe is None and cfg.position == "rope"


def _rope_theta(c) -> float:
    params = getattr(c, "rope_parameters", None) or {}
    scaling = getattr(c, "rope_scaling", None) or {}
    kind = params.get("rope_type", scaling.get("rope_type", scaling.get("type", "default")))
    if kind not in (None, "default"):
        raise HFImportError(f"Llama rope scaling {kind!r} is not supported (only the default rotary embedding)")
    return float(params.get("rope_theta", getattr(c, "rope_theta", 10000.0)))


def config_from_hf(c, keys) -> GPTConfig:
    if c.hidden_act != "silu":
        raise HFImportError(f"Llama hidden_act {c.hidden_act!r} is not supported (megazoo's SwiGLU uses silu)")
    attn_bias, mlp_bias = bool(getattr(c, "attention_bias", False)), bool(getattr(c, "mlp_bias", False))
    if attn_bias != mlp_bias:
        raise HFImportError("Llama with attention_bias != mlp_bias is not supported (megazoo has one bias switch)")
    tied = bool(getattr(c, "tie_word_embeddings", False))
    return llama_layout(num_layers=c.num_hidden_layers, hidden_size=c.hidden_size, num_heads=c.num_attention_heads,
                        num_kv_heads=c.num_key_value_heads or c.num_attention_heads, ffn_hidden_size=c.intermediate_size,
                        kv_channels=getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads,
                        vocab_size=c.vocab_size, seq_length=c.max_position_embeddings, norm_eps=c.rms_norm_eps,
                        rope_theta=_rope_theta(c), tie_embeddings=tied, bias=attn_bias,
                        attention_dropout=float(getattr(c, "attention_dropout", 0.0)))


def config_to_hf(cfg: GPTConfig):
    from transformers import LlamaConfig

    if cfg.position != "rope" or cfg.norm != "rmsnorm" or cfg.activation != "swiglu" or cfg.attention_scale not in (None,):
        raise HFExportError("this GPT config has no Llama equivalent: Llama needs rope positions, rmsnorm, swiglu "
                            "and the default attention scale")
    return LlamaConfig(vocab_size=cfg.vocab_size, hidden_size=cfg.hidden_size, intermediate_size=cfg.ffn_hidden_size,
                       num_hidden_layers=cfg.num_layers, num_attention_heads=cfg.num_heads,
                       num_key_value_heads=cfg.num_kv_heads, head_dim=cfg.kv_channels, hidden_act="silu",
                       max_position_embeddings=cfg.seq_length, rms_norm_eps=cfg.norm_eps,
                       rope_parameters={"rope_type": "default", "rope_theta": cfg.rope_theta},
                       tie_word_embeddings=cfg.tie_embeddings, attention_bias=cfg.bias, mlp_bias=cfg.bias,
                       attention_dropout=cfg.attention_dropout, architectures=["LlamaForCausalLM"])


def rules(cfg: GPTConfig) -> list[Rule]:
    out = [same("embed.weight", "model.embed_tokens.weight")]
    ws = ("weight", "bias") if cfg.bias else ("weight",)
    for i in range(cfg.num_layers):
        p, m = f"model.layers.{i}.", f"layers.{i}."
        out += [same(m + "norm1.weight", p + "input_layernorm.weight"),
                same(m + "norm2.weight", p + "post_attention_layernorm.weight")]
        for w in ws:
            out += [fused_qkv(m + "attn.qkv." + w, *(p + f"self_attn.{x}_proj." + w for x in "qkv"),
                              cfg.num_heads, cfg.num_kv_heads, cfg.kv_channels),
                    same(m + "attn.proj." + w, p + "self_attn.o_proj." + w),
                    same(m + "mlp.fc1." + w, p + "mlp.up_proj." + w), same(m + "mlp.gate." + w, p + "mlp.gate_proj." + w),
                    same(m + "mlp.fc2." + w, p + "mlp.down_proj." + w)]
    out.append(same("final_norm.weight", "model.norm.weight"))
    if not cfg.tie_embeddings:
        out.append(same("head.weight", "lm_head.weight"))
    return out


def ignore(cfg: GPTConfig) -> re.Pattern:
    return re.compile(r"rotary_emb\.inv_freq$" + (r"|^lm_head\.weight$" if cfg.tie_embeddings else ""))
