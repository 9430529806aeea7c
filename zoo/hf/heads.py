"""Attention-head padding: run a model whose head count the tensor-parallel degree does not divide
(SmolLM2: 9 query heads in 3 KV groups) by adding KV groups whose q/k/v rows and output-projection
columns are zero. A zero group's value vectors are zero and its output columns are zero, so it adds
exactly nothing to the layer's output, and its gradients are zero too (training leaves it zero).
`unpad_heads` removes the groups again, giving back the original tensors bit for bit.
"""

from __future__ import annotations

import dataclasses
import re

import torch

from megazoo.core.plan.traits import TRAITS
from megazoo.zoo.hf.shard import LayoutError

_QKV = re.compile(r"^(.*\battn)\.qkv\.(weight|bias)$")


def padded_kv_heads(num_kv_heads: int, tp: int) -> int:
    return -(-num_kv_heads // tp) * tp


def _check(arch: str):
    if arch not in TRAITS or not TRAITS[arch].head_padding:
        able = [name for name, t in TRAITS.items() if t.head_padding]
        raise LayoutError(f"head padding supports {', '.join(able[:-1])} and {able[-1]} models, not {arch!r}")


def pad_heads(arch: str, cfg, state: dict[str, torch.Tensor], tp: int):
    """(config, state) with num_kv_heads rounded up to a multiple of tp (same heads per group)."""
    _check(arch)
    kv, group, d = cfg.num_kv_heads, cfg.num_heads // cfg.num_kv_heads, cfg.kv_channels
    kvp = padded_kv_heads(kv, tp)
    if kvp == kv:
        return cfg, state
    out = dict(state)
    for name, t in state.items():
        m = _QKV.match(name)
        if m:
            g = t.reshape(kv, group + 2, d, *t.shape[1:])
            out[name] = torch.cat([g, g.new_zeros((kvp - kv,) + tuple(g.shape[1:]))], 0).reshape(-1, *t.shape[1:])
            proj = m.group(1) + ".proj.weight"
            w = state[proj].reshape(state[proj].shape[0], kv, group * d)
            out[proj] = torch.cat([w, w.new_zeros(w.shape[0], kvp - kv, group * d)], 1).reshape(w.shape[0], -1)
    return dataclasses.replace(cfg, num_heads=kvp * group, num_kv_heads=kvp), out


def unpad_heads(arch: str, cfg, state: dict[str, torch.Tensor], num_kv_heads: int):
    """Undo pad_heads: keep the first num_kv_heads groups (the padded ones must still be zero)."""
    _check(arch)
    kvp, group, d = cfg.num_kv_heads, cfg.num_heads // cfg.num_kv_heads, cfg.kv_channels
    if kvp == num_kv_heads:
        return cfg, state
    out = dict(state)
    for name, t in state.items():
        m = _QKV.match(name)
        if m:
            g = t.reshape(kvp, group + 2, d, *t.shape[1:])
            proj = m.group(1) + ".proj.weight"
            w = state[proj].reshape(state[proj].shape[0], kvp, group * d)
            if g[num_kv_heads:].any() or w[:, num_kv_heads:].any():
                raise ValueError(f"{name}: the padded attention heads are not zero; they cannot be removed")
            out[name] = g[:num_kv_heads].reshape(-1, *t.shape[1:]).contiguous()
            out[proj] = w[:, :num_kv_heads].reshape(w.shape[0], -1).contiguous()
    return dataclasses.replace(cfg, num_heads=num_kv_heads * group, num_kv_heads=num_kv_heads), out
