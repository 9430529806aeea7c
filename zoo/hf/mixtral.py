"""Mixtral (MixtralForCausalLM) <-> megazoo GPT in the Llama layout with MoE MLPs in every layer.

Attention, norms and embeddings are Llama's (zoo/hf/llama.py). Each layer's sparse MLP: the router
`mlp.gate.weight` [E, h] is megazoo's `mlp.router.weight`; transformers 5 stores the experts fused,
`mlp.experts.gate_up_proj` [E, 2f, h] (gate rows first, then up) and `mlp.experts.down_proj`
[E, h, f], which are megazoo's stacked `gate_weight`, `fc1_weight` and `fc2_weight`. Older folders
(`block_sparse_moe.experts.{e}.w1/w3/w2.weight`, `block_sparse_moe.gate.weight`) are read too.
Mixtral's router is softmax, top-k, renormalised (megazoo's `gating: softmax, renormalize: true`).

Its load-balancing loss (used when `output_router_logits`) sums over the k choices, so it is
top_k x megazoo's num_experts x sum f_i P_i: `router_aux_loss_coef` c maps to `model.moe.aux_loss`
= c x top_k and back.
"""

from __future__ import annotations

import re

import torch

from megazoo.zoo.gpt.config import GPTConfig, llama_layout
from megazoo.zoo.hf import llama
from megazoo.zoo.hf.common import HFExportError, HFImportError, Rule, same

MODEL_TYPE = "mixtral"
ARCH = "llama"
PREFIX = "model."
_LEGACY = re.compile(r"^(.*\.layers\.\d+\.)block_sparse_moe\.experts\.(\d+)\.(w[123])\.weight$")


def exports(cfg: GPTConfig) -> bool:
    """Whether this adapter writes the export of `cfg`: a decoder with experts."""
    return cfg.moe is not None


def config_from_hf(c, keys) -> GPTConfig:
    if c.hidden_act != "silu":
        raise HFImportError(f"Mixtral hidden_act {c.hidden_act!r} is not supported (megazoo's SwiGLU uses silu)")
    if getattr(c, "sliding_window", None):
        raise HFImportError(f"Mixtral sliding_window={c.sliding_window} is not supported (megazoo attends to the "
                            "whole context); set it to null")
    if getattr(c, "router_jitter_noise", 0.0):
        raise HFImportError(f"Mixtral router_jitter_noise={c.router_jitter_noise} is not supported; set it to 0")
    k = c.num_experts_per_tok
    aux = float(c.router_aux_loss_coef) * k if getattr(c, "output_router_logits", False) else 0.0
    moe = dict(num_experts=c.num_local_experts, top_k=k, every=1, aux_loss=aux, gating="softmax", renormalize=True)
    return llama_layout(num_layers=c.num_hidden_layers, hidden_size=c.hidden_size, num_heads=c.num_attention_heads,
                        num_kv_heads=c.num_key_value_heads or c.num_attention_heads, ffn_hidden_size=c.intermediate_size,
                        kv_channels=getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads,
                        vocab_size=c.vocab_size, seq_length=c.max_position_embeddings, norm_eps=c.rms_norm_eps,
                        rope_theta=llama._rope_theta(c), tie_embeddings=bool(getattr(c, "tie_word_embeddings", False)),
                        bias=False, attention_dropout=float(getattr(c, "attention_dropout", 0.0)), moe=moe)


def config_to_hf(cfg: GPTConfig):
    from transformers import MixtralConfig

    moe = cfg.moe
    if (cfg.position != "rope" or cfg.norm != "rmsnorm" or cfg.activation != "swiglu" or cfg.bias
            or cfg.attention_scale is not None):
        raise HFExportError("this GPT config has no Mixtral equivalent: Mixtral needs rope positions, rmsnorm, "
                            "swiglu, no biases and the default attention scale")
    if moe is None or moe.every != 1 or moe.gating != "softmax" or not moe.renormalize:
        raise HFExportError("Mixtral needs experts in every layer (model.moe.every=1) with softmax gating and "
                            "renormalised top-k weights")
    return MixtralConfig(vocab_size=cfg.vocab_size, hidden_size=cfg.hidden_size,
                         intermediate_size=moe.ffn_hidden_size or cfg.ffn_hidden_size,
                         num_hidden_layers=cfg.num_layers, num_attention_heads=cfg.num_heads,
                         num_key_value_heads=cfg.num_kv_heads, head_dim=cfg.kv_channels, hidden_act="silu",
                         max_position_embeddings=cfg.seq_length, rms_norm_eps=cfg.norm_eps,
                         rope_parameters={"rope_type": "default", "rope_theta": cfg.rope_theta},
                         tie_word_embeddings=cfg.tie_embeddings, attention_dropout=cfg.attention_dropout,
                         num_local_experts=moe.num_experts, num_experts_per_tok=moe.top_k,
                         output_router_logits=moe.aux_loss > 0, router_aux_loss_coef=moe.aux_loss / moe.top_k,
                         router_jitter_noise=0.0, sliding_window=None, architectures=["MixtralForCausalLM"])


def rules(cfg: GPTConfig) -> list[Rule]:
    out = [r for r in llama.rules(cfg) if ".mlp." not in r.name]  # attention, norms, embeddings
    for i in range(cfg.num_layers):
        p, m = f"model.layers.{i}.mlp.", f"layers.{i}.mlp."
        out += [same(m + "router.weight", p + "gate.weight"),
                same(m + "experts.gate_weight", p + "experts.gate_proj"),  # the halves of gate_up_proj
                same(m + "experts.fc1_weight", p + "experts.up_proj"),
                same(m + "experts.fc2_weight", p + "experts.down_proj")]
    return out


def ignore(cfg: GPTConfig) -> re.Pattern:
    return llama.ignore(cfg)


def import_state(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Split the fused gate_up_proj into its halves; stack an older folder's per-expert weights."""
    out, legacy = {}, {}
    for key, t in state.items():
        match = _LEGACY.match(key)
        if match:
            legacy.setdefault((match.group(1), match.group(3)), {})[int(match.group(2))] = t
        elif key.endswith(".experts.gate_up_proj"):
            gate, up = t.chunk(2, dim=1)
            out[key[:-len("gate_up_proj")] + "gate_proj"] = gate.contiguous()
            out[key[:-len("gate_up_proj")] + "up_proj"] = up.contiguous()
        else:
            out[key.replace(".block_sparse_moe.gate.", ".mlp.gate.")] = t
    names = {"w1": "gate_proj", "w3": "up_proj", "w2": "down_proj"}
    for (layer, w), experts in legacy.items():
        out[f"{layer}mlp.experts.{names[w]}"] = torch.stack([experts[e] for e in sorted(experts)])
    return out


def export_state(cfg: GPTConfig, hf_state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Fuse each layer's gate and up halves into transformers 5's gate_up_proj."""
    out = {}
    for key, t in hf_state.items():
        if key.endswith(".experts.up_proj"):
            continue
        if key.endswith(".experts.gate_proj"):
            up = hf_state[key[:-len("gate_proj")] + "up_proj"]
            out[key[:-len("gate_proj")] + "gate_up_proj"] = torch.cat([t, up], dim=1).contiguous()
        else:
            out[key] = t
    return out
