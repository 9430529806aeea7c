"""The fast path of core attention: no dropout, no padding mask, causal or full, MHA or GQA.

Two kernels compute the same softmax(q k^T * scale + causal bias) v:
  - "sdpa": torch's scaled_dot_product_attention (flash or memory-efficient kernels; on GPUs the
    flash kernel never stores the s x t score matrix);
  - "explicit": one batched GEMM into the scores (`baddbmm` adding a cached additive causal bias),
    softmax, one batched GEMM out. Both GEMMs run on the CPU's fast GEMM kernels (bf16 ones where
    the CPU has native bf16), at the same error against fp64 as SDPA.
GQA needs no repeat of keys and values: the `group` query heads of a KV head are stacked along the
rows of one GEMM ([b * kv, group * s, d] x [b * kv, d, t]).

Causal and long enough (s >= 2 * QUERY_BLOCK_ROWS), the explicit kernel splits the queries into
blocks of at least QUERY_BLOCK_ROWS rows (at most MAX_QUERY_BLOCKS blocks) and gives each block
only the keys up to its last query, so the products, the softmax and the stored probabilities skip
most of the masked upper triangle: at 4 blocks they cover 10/16 of the s x t scores. Bench shapes
(seq 512, 12 heads, batch 4, forward + backward, 2 threads): bf16 44 ms against 67 ms unblocked and
78 ms for SDPA; fp32 63 ms against SDPA's 81 ms.

Which kernel runs is a rule per device, dtype and shape (`megazoo.core.parallel.device.
attention_kernel`), measured once and written down rather than timed at run time, so that two runs
of the same recipe compute bit for bit the same thing. The explicit kernel stores the scores, so it
is only used while they stay small (EXPLICIT_MAX_BYTES per layer); above that, SDPA.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from megazoo.core.nn.graph import builds_graph
from megazoo.core.parallel.device import attention_kernel

EXPLICIT_MAX_BYTES = 256 * 2**20  # scores of one layer kept for backward: b * heads * s * t elements
QUERY_BLOCK_ROWS = 128  # causal: the fewest query rows in a block (smaller blocks lose more than they skip)
MAX_QUERY_BLOCKS = 8
_BIAS: dict[tuple, torch.Tensor] = {}


def causal_keep(s: int, t: int, device) -> torch.Tensor:
    """[s, t] boolean, True where query i, the (t - s + i)-th of t positions, may see key j: the
    causal mask of s queries that are the last s positions (all of them when s == t; the new ones
    after a KV cache's past; a suffix a last layer computes alone). SDPA's own is_causal aligns
    the queries with the first keys instead."""
    return torch.ones(s, t, dtype=torch.bool, device=device).tril(t - s)


def causal_bias(s: int, t: int, group: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """[group * s, t] additive bias (0 where query i may see key j <= t - s + i, else -inf), cached:
    one per shape, dtype and device, built once and reused every step."""
    key = (s, t, group, dtype, str(device))
    bias = _BIAS.get(key)
    if bias is None:
        if len(_BIAS) > 64:  # generation grows t by one per token: keep the cache bounded
            _BIAS.clear()
        keep = causal_keep(s, t, device)
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
    kt = k.reshape(b * kv, t, d).transpose(1, 2)
    v2 = v.reshape(b * kv, t, d)
    if not causal:
        scores = torch.bmm(q.reshape(b * kv, group * s, d), kt).mul_(scale)
        return torch.bmm(torch.softmax(scores, dim=-1), v2).view(b, h, s, d)
    blocks = max(1, min(MAX_QUERY_BLOCKS, s // QUERY_BLOCK_ROWS))
    bounds = [s * i // blocks for i in range(blocks + 1)]
    # split, not sliced: the blocks' gradients are written into one buffer (a slice's backward would
    # zero-fill a buffer of the whole q for each block)
    parts = q.reshape(b * kv, group, s, d).split([hi - lo for lo, hi in zip(bounds, bounds[1:])], dim=2)
    outs = []
    for lo, hi, part in zip(bounds, bounds[1:], parts):
        end = t - s + hi  # the keys this block's last query may see
        qi = part.reshape(b * kv, group * (hi - lo), d)  # the group's query heads, stacked along the rows
        scores = torch.baddbmm(causal_bias(hi - lo, end, group, q.dtype, q.device), qi, kt[:, :, :end], alpha=scale)
        out = torch.bmm(torch.softmax(scores, dim=-1), v2[:, :end])
        outs.append(out.view(b * kv, group, hi - lo, d))
    out = outs[0] if blocks == 1 else torch.cat(outs, dim=2)
    return out.view(b, h, s, d)


def fast_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float, causal: bool) -> torch.Tensor:
    """The kernel the device rule picks for these shapes (see the module docstring)."""
    b, h, s, _ = q.shape
    t = k.shape[2]
    kernel = attention_kernel(q.device, q.dtype, s, t, causal, backward=builds_graph(q, k, v))
    if kernel == "explicit" and b * h * s * t * q.element_size() <= EXPLICIT_MAX_BYTES:
        return explicit_attention(q, k, v, scale, causal)
    if causal and s != t:  # the queries are the last s positions, where SDPA's is_causal takes the first s
        return F.scaled_dot_product_attention(q, k, v, attn_mask=causal_keep(s, t, q.device), scale=scale,
                                              enable_gqa=h != k.shape[1])
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale, enable_gqa=h != k.shape[1])
