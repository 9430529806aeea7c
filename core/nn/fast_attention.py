"""The fast path of core attention: no dropout, no padding mask, causal or full, MHA or GQA.

Two kernels compute the same softmax(q k^T * scale + causal bias) v:
  - "sdpa": torch's scaled_dot_product_attention (flash or memory-efficient kernels; on GPUs the
    flash kernel never stores the s x t score matrix);
  - "explicit": one batched GEMM into the scores (`baddbmm` adding a cached additive causal bias),
    softmax, one batched GEMM out. On CPUs with native bf16 this measured 28 ms per layer forward +
    backward against SDPA's flash kernel's 58 ms (bench model: seq 512, 12 heads, batch 4), at the
    same error against fp32, because both GEMMs run on the fast bf16 GEMM kernels.
GQA needs no repeat of keys and values: the `group` query heads of a KV head are stacked along the
rows of one GEMM ([b * kv, group * s, d] x [b * kv, d, t]).

Which kernel runs is a per-device rule (`megazoo.core.parallel.device.attention_kernel`), measured
once and written down rather than timed at run time, so that two runs of the same recipe compute
bit for bit the same thing. The explicit kernel stores the scores, so it is only used while they
stay small (EXPLICIT_MAX_BYTES per layer); above that, SDPA.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from megazoo.core.parallel.device import attention_kernel

EXPLICIT_MAX_BYTES = 256 * 2**20  # scores of one layer kept for backward: b * heads * s * t elements
_BIAS: dict[tuple, torch.Tensor] = {}


def causal_bias(s: int, t: int, group: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """[group * s, t] additive bias (0 where query i may see key j <= t - s + i, else -inf), cached:
    one per shape, dtype and device, built once and reused every step."""
    key = (s, t, group, dtype, str(device))
    bias = _BIAS.get(key)
    if bias is None:
        if len(_BIAS) > 64:  # generation grows t by one per token: keep the cache bounded
            _BIAS.clear()
        keep = torch.ones(s, t, dtype=torch.bool, device=device).tril(t - s)
        bias = torch.zeros(s, t, dtype=dtype, device=device).masked_fill_(~keep, float("-inf"))
        bias = bias.repeat(group, 1)
        _BIAS[key] = bias
    return bias


def explicit_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float, causal: bool) -> torch.Tensor:
    """q: [b, heads, s, d]; k, v: [b, kv, t, d] (heads a multiple of kv) -> [b, heads, s, d].
    causal: the s queries are the last s of the t positions (SDPA's is_causal when s == t)."""
    b, h, s, d = q.shape
    kv, t = k.shape[1], k.shape[2]
    group = h // kv
    q2 = q.reshape(b * kv, group * s, d)  # the group's query heads, stacked along the rows
    kt = k.reshape(b * kv, t, d).transpose(1, 2)
    if causal:
        scores = torch.baddbmm(causal_bias(s, t, group, q.dtype, q.device), q2, kt, alpha=scale)
    else:
        scores = torch.bmm(q2, kt).mul_(scale)
    probs = torch.softmax(scores, dim=-1)
    return torch.bmm(probs, v.reshape(b * kv, t, d)).view(b, h, s, d)


def fast_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float, causal: bool) -> torch.Tensor:
    """The kernel the device rule picks for these shapes (see the module docstring)."""
    b, h, s, _ = q.shape
    t = k.shape[2]
    kernel = attention_kernel(q.device, q.dtype)
    if kernel == "explicit" and b * h * s * t * q.element_size() <= EXPLICIT_MAX_BYTES:
        return explicit_attention(q, k, v, scale, causal)
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale, enable_gqa=h != k.shape[1])
