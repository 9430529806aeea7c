"""Self-attention, tensor- and sequence-parallel: MHA and GQA, causal/bidirectional/padding masks,
rotary or external positions, torch SDPA, an optional KV cache for generation. Without dropout and
padding mask, core attention takes the per-device fast path (megazoo.core.nn.fast_attention).
Under context parallelism (ctx.cp > 1) core attention is ring attention over the cp group
(megazoo.core.parallel.ring_attention); it takes no padding mask, dropout or KV cache yet.

The fused QKV weight is laid out per KV group, as Megatron-LM does: for each of the num_kv_heads
groups, its (num_heads / num_kv_heads) query heads, then its key head, then its value head. A
contiguous tp slice of that weight is then a whole set of groups, so tensor parallelism splits heads
without any reshuffle.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from megazoo.core.nn.config import TransformerConfig
from megazoo.core.nn.decode_linear import column_linear, row_linear
from megazoo.core.nn.fast_attention import causal_keep, fast_attention
from megazoo.core.nn.graph import builds_graph
from megazoo.core.nn.recompute import checkpoint
from megazoo.core.nn.rope import apply_rope
from megazoo.core.parallel.context import ParallelContext
from megazoo.core.parallel.layers import ColumnParallelLinear, RowParallelLinear
from megazoo.core.parallel.random import RNGTracker, dropout
from megazoo.core.parallel.ring_attention import ring_attention


class KVCache:
    """Keys and values of past positions, per layer: `layers[n]` is [b, kv_heads_local, t, d], a
    view of the first t positions of a buffer with room for more. A new position's keys and values
    are written into that room, so a decode step copies one position per layer instead of the whole
    past (a concatenation would copy t positions a token: quadratic in the generated length). The
    room doubles when it runs out."""

    def __init__(self):
        self.layers: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        self._room: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def length(self) -> int:
        return next(iter(self.layers.values()))[0].shape[2] if self.layers else 0

    def update(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Append k, v [b, kv, s, d] to the layer's past; returns all its keys and values so far."""
        past = self.layers[layer][0].shape[2] if layer in self.layers else 0
        t = past + k.shape[2]
        room = self._room.get(layer)
        if room is None or room[0].shape[2] < t or room[0].shape[:2] != k.shape[:2] or room[0].dtype != k.dtype:
            size = max(2 * t, t + 64)
            grown = tuple(x.new_empty(x.shape[0], x.shape[1], size, x.shape[3]) for x in (k, v))
            if past:
                for new, old in zip(grown, self.layers[layer]):
                    new[:, :, :past].copy_(old)
            room = self._room[layer] = grown
        room[0][:, :, past:t].copy_(k)
        room[1][:, :, past:t].copy_(v)
        self.layers[layer] = (room[0][:, :, :t], room[1][:, :, :t])
        return self.layers[layer]

    def select(self, index: torch.Tensor) -> None:
        """Keep the batch rows in `index` (beam or finished-sequence pruning)."""
        self.layers = {n: (k[index], v[index]) for n, (k, v) in self.layers.items()}
        self._room = {}  # the kept rows are compact copies; the next update makes room again


class Attention(nn.Module):
    def __init__(self, cfg: TransformerConfig, ctx: ParallelContext, layer_number: int, dtype=None, device=None):
        super().__init__()
        cfg.check_tensor_parallel(ctx.tp)
        self.cfg, self.ctx, self.layer_number = cfg, ctx, layer_number
        self.d = cfg.kv_channels
        self.group = cfg.num_heads // cfg.num_kv_heads
        self.heads_local = cfg.num_heads // ctx.tp
        self.kv_local = cfg.num_kv_heads // ctx.tp
        self.scale = cfg.attention_scale or 1.0 / math.sqrt(self.d)
        self.qkv = ColumnParallelLinear(cfg.hidden_size, (cfg.num_heads + 2 * cfg.num_kv_heads) * self.d, ctx,
                                        bias=cfg.bias, init_std=cfg.init_std, dtype=dtype, device=device)
        self.proj = RowParallelLinear(cfg.num_heads * self.d, cfg.hidden_size, ctx, bias=cfg.bias,
                                      init_std=cfg.output_std, dtype=dtype, device=device)

    def core(self, q, k, v, mask, is_causal, generator):
        """q: [b, heads, s, d]; k, v: [b, kv, t, d] -> [b, heads, s, d]."""
        p = self.cfg.attention_dropout if self.training else 0.0
        if self.ctx.cp > 1:
            return ring_attention(q, k, v, self.scale, is_causal, self.ctx)
        if p == 0.0 and mask is None:
            return fast_attention(q, k, v, self.scale, is_causal)  # the per-device fast kernel
        if p == 0.0:
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal and mask is None,
                                                  scale=self.scale, enable_gqa=self.group > 1)
        # attention dropout draws from this tp rank's own stream, so the explicit path is used
        if self.group > 1:
            k, v = k.repeat_interleave(self.group, 1), v.repeat_interleave(self.group, 1)
        scores = torch.matmul(q, k.transpose(-1, -2)).float() * self.scale
        if is_causal and mask is None:
            mask = causal_keep(*scores.shape[-2:], q.device)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else scores + mask
        probs = dropout(torch.softmax(scores, -1).to(q.dtype), p, generator)
        return torch.matmul(probs, v)

    def _check_context_parallel(self, mask, cache) -> None:
        """What ring attention cannot do yet fails here, in one line, instead of silently."""
        cp = self.ctx.cp
        if cache is not None:
            raise ValueError(f"parallel.cp={cp}: generation with a KV cache is not supported under context "
                             "parallelism; generate with parallel.cp=1")
        if mask is not None:
            raise ValueError(f"parallel.cp={cp}: attention with a padding or custom mask is not supported under "
                             "context parallelism (ring attention knows causal and full masks); use parallel.cp=1")
        if self.training and self.cfg.attention_dropout > 0:
            raise ValueError(f"parallel.cp={cp}: attention dropout is not supported under context parallelism; "
                             "set model.attention_dropout=0")

    def forward(self, x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor] | None = None,
                mask: torch.Tensor | None = None, cache: KVCache | None = None,
                rng: RNGTracker | None = None, rows: slice | None = None) -> torch.Tensor:
        """rows: only these positions query (every position is still a key and value) and only their
        outputs come back, [len, b, h]. A model's last layer when its head reads some positions only:
        slice(0, 1) for a pooled-[CLS] head, slice(first, None) for a decoder whose loss starts at
        `first` (a causal model takes a suffix only). Not with a KV cache or sequence/context
        parallelism."""
        if rows is not None:
            if cache is not None or self.ctx.sp or self.ctx.cp > 1:
                raise ValueError("attention for some query positions only is not for a KV cache, sequence or "
                                 "context parallelism")
            if self.cfg.causal and rows.stop is not None:
                raise ValueError(f"a causal model's query rows must run to the end of the sequence, got {rows}")
        qkv = column_linear(self.qkv, x)  # [s, b, kv_local * (group + 2) * d]; s is the full sequence under sp
        s, b = qkv.shape[:2]
        heads = qkv.view(s, b, self.kv_local, self.group + 2, self.d)
        if rope is not None and not builds_graph(qkv):
            # no graph to build (decoding): q and k, adjacent in the layout, rotated in one pass
            qk, v = heads.split((self.group + 1, 1), dim=3)
            q, k = apply_rope(qk, *rope).split((self.group, 1), dim=3)
            rope = None
        else:
            # split, not sliced: the backward of a split writes the three gradients into one buffer, where
            # each slice's backward would zero-fill a full-size buffer of its own
            q, k, v = heads.split((self.group, 1, 1), dim=3)
        q = q.reshape(s, b, self.heads_local, self.d)
        q_rope = rope
        if rows is not None:
            q = q[rows]
            s = q.shape[0]
            if mask is not None and mask.shape[-2] > 1:
                mask = mask[..., rows, :]
            if rope is not None:
                q_rope = tuple(r[rows] for r in rope)  # each query keeps its own position's rotation
        k, v = k.squeeze(3), v.squeeze(3)
        if rope is not None:
            q, k = apply_rope(q, *q_rope), apply_rope(k, *rope)
        q, k, v = (t.permute(1, 2, 0, 3) for t in (q, k, v))  # [b, heads, s, d]
        is_causal = self.cfg.causal
        if self.ctx.cp > 1:
            self._check_context_parallel(mask, cache)
        if cache is not None:
            # new positions after a past: core attention's causal mask takes them as the last s (causal_keep)
            k, v = cache.update(self.layer_number, k, v)
            if s == 1:
                is_causal = False
        generator = rng.get("tensor-parallel") if rng is not None else None
        if self.cfg.recompute == "selective" and self.training and torch.is_grad_enabled():
            out = checkpoint(lambda q_, k_, v_: self.core(q_, k_, v_, mask, is_causal, generator), q, k, v, tracker=rng)
        else:
            out = self.core(q, k, v, mask, is_causal, generator)
        out = out.permute(2, 0, 1, 3).reshape(s, b, self.heads_local * self.d)
        return row_linear(self.proj, out)  # decoding: a packed product
