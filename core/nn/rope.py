"""Rotary position embeddings (the "rotate half" layout used by Llama and Hugging Face)."""

from __future__ import annotations

import torch


def rope_tables(seq_len: int, dim: int, theta: float, device=None, dtype=torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin of shape [seq_len, dim] for positions 0..seq_len-1."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.float64, device=device) / dim))
    pos = torch.arange(seq_len, dtype=torch.float64, device=device)
    freqs = torch.outer(pos, inv_freq)
    emb = torch.cat([freqs, freqs], dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x: [s, b, heads, d]; cos/sin: [s, d] or [s, b, d] for per-sample positions."""
    if cos.dim() == 2:
        cos, sin = cos[:, None, None, :], sin[:, None, None, :]
    else:
        cos, sin = cos[:, :, None, :], sin[:, :, None, :]
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return (x * cos.to(x.dtype)) + (rotated * sin.to(x.dtype))
