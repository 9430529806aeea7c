"""Sentence pooling: one vector per sequence from an encoder's hidden states.

    pool(hidden [b, s, h], attention_mask [b, s], "mean" | "cls") -> [b, h]

Shared by `megazoo embed` (zoo/embed.py) and the bi-encoder heads. Pooling runs in fp32 whatever
the model's dtype: a mean over hundreds of bf16 vectors loses the digits that cosine similarity
compares.
"""

from __future__ import annotations

import torch

KINDS = ("mean", "cls")


def pool(hidden: torch.Tensor, attention_mask: torch.Tensor | None, kind: str = "mean") -> torch.Tensor:
    """`mean`: the average of the non-padding tokens (attention_mask 1 = token, 0 = padding; None:
    all tokens count), as sentence-transformers' mean pooling. `cls`: the first token's vector,
    the raw hidden state (no pooler dense/tanh), as sentence-transformers' CLS pooling."""
    if hidden.dim() != 3:
        raise ValueError(f"pool expects hidden states [batch, seq, hidden], got shape {tuple(hidden.shape)}")
    if kind == "cls":
        return hidden[:, 0].float()
    if kind != "mean":
        raise ValueError(f"unknown pooling {kind!r}; choose one of {', '.join(KINDS)}")
    x = hidden.float()
    if attention_mask is None:
        return x.mean(dim=1)
    if attention_mask.shape != hidden.shape[:2]:
        raise ValueError(f"attention_mask {tuple(attention_mask.shape)} does not match hidden "
                         f"{tuple(hidden.shape[:2])}")
    m = attention_mask.to(device=x.device, dtype=torch.float32).unsqueeze(-1)  # [b, s, 1]
    # clamp: an all-padding row gives zeros rather than NaN
    return (x * m).sum(dim=1) / m.sum(dim=1).clamp(min=1e-9)
