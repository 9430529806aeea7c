"""GPT-2 (GPT2LMHeadModel) <-> megazoo GPT (learned positions, LayerNorm, GELU, biases).

GPT-2's Conv1D layers store weights transposed ([in, out]); its c_attn packs all query heads, then
all key heads, then all value heads, which megazoo lays out per head (q, k, v of head 0, then head 1...).
HF's activation "gelu_new" is the tanh GELU, megazoo's "gelu".
"""

from __future__ import annotations

import re

from megazoo.zoo.gpt.config import GPTConfig, gpt2_layout
from megazoo.zoo.hf.common import HFExportError, HFImportError, Rule, fused_qkv, same, transposed

MODEL_TYPE = "gpt2"
ARCH = "gpt"
PREFIX = "transformer."
IGNORE = re.compile(r"(\.attn\.bias|\.attn\.masked_bias)$")
ACT_TO_MZ = {"gelu_new": "gelu", "gelu_pytorch_tanh": "gelu", "gelu": "gelu_exact", "relu": "relu"}
ACT_TO_HF = {"gelu": "gelu_new", "gelu_exact": "gelu", "relu": "relu"}


def exports(cfg: GPTConfig) -> bool:
    """Whether this adapter writes the export of `cfg`: a dense decoder without rotary positions."""
    return cfg.moe is None and cfg.position != "rope"


def config_from_hf(c, keys) -> GPTConfig:
    if c.activation_function not in ACT_TO_MZ:
        raise HFImportError(f"GPT-2 activation {c.activation_function!r} is not supported; supported: {sorted(ACT_TO_MZ)}")
    if getattr(c, "scale_attn_by_inverse_layer_idx", False):
        raise HFImportError("GPT-2 with scale_attn_by_inverse_layer_idx=True is not supported")
    tied = getattr(c, "tie_word_embeddings", True) or "lm_head.weight" not in keys
    return gpt2_layout(num_layers=c.n_layer, hidden_size=c.n_embd, num_heads=c.n_head, ffn_hidden_size=c.n_inner or 4 * c.n_embd,
                       vocab_size=c.vocab_size, seq_length=c.n_positions, norm_eps=c.layer_norm_epsilon,
                       activation=ACT_TO_MZ[c.activation_function], tie_embeddings=bool(tied),
                       attention_scale=None if getattr(c, "scale_attn_weights", True) else 1.0,
                       dropout=c.resid_pdrop, attention_dropout=c.attn_pdrop)


def check_exportable(cfg: GPTConfig) -> None:
    bad = []
    if cfg.position != "learned" or cfg.norm != "layernorm" or not cfg.bias:
        bad.append("learned positions, LayerNorm and biases")
    if cfg.activation not in ACT_TO_HF:
        bad.append(f"activation in {sorted(ACT_TO_HF)}")
    if cfg.num_kv_heads != cfg.num_heads or cfg.kv_channels * cfg.num_heads != cfg.hidden_size:
        bad.append("multi-head attention with head dim = hidden / heads")
    if cfg.attention_scale not in (None, 1.0):
        bad.append("the default attention scale")
    if bad:
        raise HFExportError(f"this GPT config has no GPT-2 equivalent: GPT-2 needs {'; '.join(bad)}")


def config_to_hf(cfg: GPTConfig):
    from transformers import GPT2Config

    check_exportable(cfg)
    return GPT2Config(vocab_size=cfg.vocab_size, n_positions=cfg.seq_length, n_embd=cfg.hidden_size, n_layer=cfg.num_layers,
                      n_head=cfg.num_heads, n_inner=cfg.ffn_hidden_size, activation_function=ACT_TO_HF[cfg.activation],
                      layer_norm_epsilon=cfg.norm_eps, tie_word_embeddings=cfg.tie_embeddings,
                      scale_attn_weights=cfg.attention_scale is None, resid_pdrop=cfg.dropout, embd_pdrop=cfg.dropout,
                      attn_pdrop=cfg.attention_dropout, architectures=["GPT2LMHeadModel"])


def rules(cfg: GPTConfig) -> list[Rule]:
    out = [same("embed.weight", "transformer.wte.weight"), same("pos_embed", "transformer.wpe.weight")]
    for i in range(cfg.num_layers):
        p, m = f"transformer.h.{i}.", f"layers.{i}."
        for w in ("weight", "bias"):
            qkv = fused_qkv(m + "attn.qkv." + w, "q", "k", "v", cfg.num_heads, cfg.num_heads, cfg.kv_channels)
            # c_attn is one tensor: split it into q, k, v (all heads each) around the per-head map
            out.append(Rule(m + "attn.qkv." + w, [p + "attn.c_attn." + w],
                            (lambda ts, f=qkv.to_mz, w=w: f(list((ts[0].t() if w == "weight" else ts[0]).chunk(3, 0)))),
                            (lambda t, f=qkv.to_hf, w=w: [_join(f(t), w)])))
            out += [same(m + "norm1." + w, p + "ln_1." + w), same(m + "norm2." + w, p + "ln_2." + w)]
        out += [transposed(m + "attn.proj.weight", p + "attn.c_proj.weight"), same(m + "attn.proj.bias", p + "attn.c_proj.bias"),
                transposed(m + "mlp.fc1.weight", p + "mlp.c_fc.weight"), same(m + "mlp.fc1.bias", p + "mlp.c_fc.bias"),
                transposed(m + "mlp.fc2.weight", p + "mlp.c_proj.weight"), same(m + "mlp.fc2.bias", p + "mlp.c_proj.bias")]
    out += [same("final_norm.weight", "transformer.ln_f.weight"), same("final_norm.bias", "transformer.ln_f.bias")]
    if not cfg.tie_embeddings:
        out.append(same("head.weight", "lm_head.weight"))
    return out


def _join(parts, w):
    import torch

    t = torch.cat(parts, 0)
    return t.t().contiguous() if w == "weight" else t


def ignore(cfg: GPTConfig) -> re.Pattern:
    return re.compile(IGNORE.pattern + (r"|^lm_head\.weight$" if cfg.tie_embeddings else ""))
