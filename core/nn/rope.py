"""Rotary position embeddings (the "rotate half" layout used by Llama and Hugging Face)."""

from __future__ import annotations

import torch

from megazoo.core.nn.graph import builds_graph


def rope_tables(seq_len: int, dim: int, theta: float, device=None, dtype=torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin of shape [seq_len, dim] for positions 0..seq_len-1."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.float64, device=device) / dim))
    pos = torch.arange(seq_len, dtype=torch.float64, device=device)
    freqs = torch.outer(pos, inv_freq)
    emb = torch.cat([freqs, freqs], dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, inverse: bool) -> torch.Tensor:
    """x rotated pairwise (i, i + d/2) by the tables' angles, written half by half into one new tensor:
    out1 = x1 c1 - x2 s1, out2 = x2 c2 + x1 s2 (the "rotate half" form x cos + [-x2, x1] sin); with
    inverse, the transposed map (the backward): out1 = x1 c1 + x2 s2, out2 = x2 c2 - x1 s1."""
    half = x.shape[-1] // 2
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    x1, x2, o1, o2 = x[..., :half], x[..., half:], out[..., :half], out[..., half:]
    c1, c2, s1, s2 = cos[..., :half], cos[..., half:], sin[..., :half], sin[..., half:]
    torch.mul(x1, c1, out=o1)
    o1.addcmul_(x2, s2 if inverse else s1, value=1.0 if inverse else -1.0)
    torch.mul(x2, c2, out=o2)
    o2.addcmul_(x1, s1 if inverse else s2, value=-1.0 if inverse else 1.0)
    return out


class _Rope(torch.autograd.Function):
    """The rotation as one autograd node: its backward is the inverse rotation of the gradient (two
    products per half), where autograd through slices, a negation and a concatenation would zero-fill
    and copy full-size buffers for every slice."""

    @staticmethod
    def forward(ctx, x, cos, sin):
        ctx.save_for_backward(cos, sin)
        return _rotate(x, cos, sin, inverse=False)

    @staticmethod
    def backward(ctx, grad):
        cos, sin = ctx.saved_tensors
        return _rotate(grad, cos, sin, inverse=True), None, None


def rope_broadcast(cos: torch.Tensor, sin: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """cos/sin of [s, d] or [s, b, d] (per-sample positions) as apply_rope multiplies them: [s, 1, 1, d]
    or [s, b, 1, d] in `dtype`. A model shapes its tables once per forward pass; every layer reuses them."""
    if cos.dim() == 2:
        cos, sin = cos[:, None, None, :], sin[:, None, None, :]
    else:
        cos, sin = cos[:, :, None, :], sin[:, :, None, :]
    return cos.to(dtype), sin.to(dtype)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x: [s, b, heads..., d] (one or more head dimensions: [s, b, heads, d], or q and k together as
    [s, b, kv, group + 1, d]); cos/sin: [s, d] or [s, b, d] for per-sample positions, or already shaped
    by rope_broadcast. Equal to x * cos + cat([-x2, x1]) * sin (the Llama / Hugging Face layout)."""
    if cos.dim() < 4:
        cos, sin = rope_broadcast(cos, sin, x.dtype)
    if x.dim() > cos.dim():  # more head dimensions than one: the tables broadcast over all of them
        ones = (1,) * (x.dim() - cos.dim())
        cos, sin = (t.reshape(*t.shape[:-1], *ones, t.shape[-1]) for t in (cos, sin))
    cos, sin = cos.to(x.dtype), sin.to(x.dtype)  # no copies when they match
    if not builds_graph(x):
        return _rotate(x, cos, sin, inverse=False)  # no graph to build (decoding): skip the autograd node's cost
    return _Rope.apply(x, cos, sin)
