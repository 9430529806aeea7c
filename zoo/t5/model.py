"""T5 on the parallel core: encoder-decoder with relative position buckets, tensor- and
sequence-parallel. Pipeline parallelism is refused (as Megatron-LM does for T5): the decoder reads
the encoder's output at every layer, which a plain stage split does not carry.

Batch-first at the edges, [s, b, h] inside (s / tp under sequence parallelism).
"""

from __future__ import annotations

import dataclasses
import math

import torch
import torch.nn.functional as F
from torch import nn

from megazoo.core.nn.attention import Attention, KVCache
from megazoo.core.nn.block import TransformerLayer
from megazoo.core.nn.fast_attention import causal_keep
from megazoo.core.nn.mlp import MLP
from megazoo.core.nn.model import ParallelModel
from megazoo.core.nn.norm import build_norm
from megazoo.core.parallel import collectives as C
from megazoo.core.parallel.context import ParallelContext
from megazoo.core.parallel.cross_entropy import vocab_parallel_cross_entropy
from megazoo.core.parallel.embedding import VocabParallelEmbedding
from megazoo.core.parallel.init import describe
from megazoo.core.parallel.layers import ColumnParallelLinear, RowParallelLinear
from megazoo.core.parallel.random import RNGTracker, dropout
from megazoo.zoo.t5.config import T5Config


def relative_position_bucket(relative: torch.Tensor, bidirectional: bool, num_buckets: int, max_distance: int) -> torch.Tensor:
    """T5's bucketing of (key - query) offsets: half the buckets exact for small offsets, the rest
    logarithmically spaced up to max_distance; bidirectional splits the buckets by direction."""
    bucket = torch.zeros_like(relative)
    if bidirectional:
        num_buckets //= 2
        bucket = bucket + (relative > 0).long() * num_buckets
        n = relative.abs()
    else:
        n = (-relative).clamp(min=0)
    exact = num_buckets // 2
    scaled = torch.log(n.clamp(min=1).float() / exact) / math.log(max_distance / exact) * (num_buckets - exact)
    far = (exact + scaled.long()).clamp(max=num_buckets - 1)
    return bucket + torch.where(n < exact, n, far)


class RelativeBias(nn.Module):
    """Per-head bias table [buckets, heads], split by heads across tp ranks."""

    def __init__(self, cfg: T5Config, ctx: ParallelContext, bidirectional: bool, **kw):
        super().__init__()
        self.cfg, self.bidirectional = cfg, bidirectional
        self.weight = describe(nn.Parameter(torch.empty(cfg.relative_attention_num_buckets, cfg.num_heads // ctx.tp, **kw)),
                               ("normal", cfg.init_std), tp_dim=1)

    def forward(self, q_start: int, s: int, t: int) -> torch.Tensor:
        """[1, heads_local, s, t] bias for queries q_start..q_start+s and keys 0..t."""
        q = torch.arange(q_start, q_start + s, device=self.weight.device)
        k = torch.arange(t, device=self.weight.device)
        buckets = relative_position_bucket(k[None, :] - q[:, None], self.bidirectional,
                                           self.cfg.relative_attention_num_buckets, self.cfg.relative_attention_max_distance)
        return self.weight[buckets].permute(2, 0, 1).unsqueeze(0)


def _additive(bias: torch.Tensor, keep: torch.Tensor | None) -> torch.Tensor:
    """bias + (0 where keep else the dtype's minimum): finite, so fully masked rows stay finite."""
    if keep is None:
        return bias
    return bias + torch.zeros((), dtype=bias.dtype, device=bias.device).masked_fill(~keep, torch.finfo(bias.dtype).min)


class T5Cache:
    """Decoder self-attention keys/values (growing) and cross-attention keys/values (computed once)."""

    def __init__(self):
        self.self_attn = KVCache()
        self.cross: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def length(self) -> int:
        return self.self_attn.length()

    def select(self, index: torch.Tensor) -> None:
        self.self_attn.select(index)
        self.cross = {n: (k[index], v[index]) for n, (k, v) in self.cross.items()}


class CrossAttention(nn.Module):
    def __init__(self, cfg: T5Config, ctx: ParallelContext, layer_number: int, **kw):
        super().__init__()
        self.cfg, self.ctx, self.layer_number = cfg, ctx, layer_number
        self.d, self.heads_local = cfg.kv_channels, cfg.num_heads // ctx.tp
        inner = cfg.num_heads * cfg.kv_channels
        self.q = ColumnParallelLinear(cfg.hidden_size, inner, ctx, bias=False, init_std=cfg.init_std, **kw)
        self.k = ColumnParallelLinear(cfg.hidden_size, inner, ctx, bias=False, init_std=cfg.init_std, **kw)
        self.v = ColumnParallelLinear(cfg.hidden_size, inner, ctx, bias=False, init_std=cfg.init_std, **kw)
        self.proj = RowParallelLinear(inner, cfg.hidden_size, ctx, bias=False, init_std=cfg.output_std, **kw)

    def _heads(self, x: torch.Tensor) -> torch.Tensor:  # [s, b, heads*d] -> [b, heads, s, d]
        return x.view(x.shape[0], x.shape[1], self.heads_local, self.d).permute(1, 2, 0, 3)

    def forward(self, x, enc, mask, cache: T5Cache | None, rng: RNGTracker | None):
        q = self._heads(self.q(x))
        if cache is not None and self.layer_number in cache.cross:
            k, v = cache.cross[self.layer_number]
        else:
            k, v = self._heads(self.k(enc)), self._heads(self.v(enc))
            if cache is not None:
                cache.cross[self.layer_number] = (k, v)
        p = self.cfg.attention_dropout if self.training else 0.0
        if p == 0.0:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=self.cfg.attention_scale)
        else:
            scores = torch.matmul(q, k.transpose(-1, -2)).float() * self.cfg.attention_scale
            scores = scores + mask if mask is not None else scores
            gen = rng.get("tensor-parallel") if rng is not None else None
            out = torch.matmul(dropout(torch.softmax(scores, -1).to(q.dtype), p, gen), v)
        s, b = x.shape[0] * (self.ctx.tp if self.ctx.sp else 1), x.shape[1]
        return self.proj(out.permute(2, 0, 1, 3).reshape(s, b, self.heads_local * self.d))


class DecoderLayer(nn.Module):
    def __init__(self, cfg: T5Config, ctx: ParallelContext, layer_number: int, **kw):
        super().__init__()
        self.cfg, self.ctx = cfg, ctx
        self.norm1 = build_norm(cfg.norm, cfg.hidden_size, ctx, cfg.norm_eps, **kw)
        self.self_attn = Attention(cfg, ctx, layer_number, **kw)
        self.norm_cross = build_norm(cfg.norm, cfg.hidden_size, ctx, cfg.norm_eps, **kw)
        self.cross_attn = CrossAttention(cfg, ctx, layer_number, **kw)
        self.norm2 = build_norm(cfg.norm, cfg.hidden_size, ctx, cfg.norm_eps, **kw)
        self.mlp = MLP(cfg, ctx, **kw)

    def _drop(self, x, rng):
        if not self.training or self.cfg.dropout == 0.0:
            return x
        gen = None if rng is None else rng.get("tensor-parallel" if self.ctx.sp else "default")
        return dropout(x, self.cfg.dropout, gen)

    def forward(self, x, enc, self_mask, cross_mask, cache: T5Cache | None, rng):
        x = x + self._drop(self.self_attn(self.norm1(x), None, self_mask, cache.self_attn if cache else None, rng), rng)
        x = x + self._drop(self.cross_attn(self.norm_cross(x), enc, cross_mask, cache, rng), rng)
        return x + self._drop(self.mlp(self.norm2(x)), rng)


class Stack(nn.Module):
    """The encoder (bidirectional) or the decoder (causal, with cross-attention)."""

    def __init__(self, cfg: T5Config, ctx: ParallelContext, decoder: bool, **kw):
        super().__init__()
        self.decoder = decoder
        n = cfg.num_decoder_layers if decoder else cfg.num_layers
        lcfg = dataclasses.replace(cfg, causal=decoder)
        self.rel_bias = RelativeBias(cfg, ctx, bidirectional=not decoder, **kw)
        make = (lambda i: DecoderLayer(lcfg, ctx, i, **kw)) if decoder else (lambda i: TransformerLayer(lcfg, ctx, i, **kw))
        self.layers = nn.ModuleDict({str(i): make(i) for i in range(n)})
        self.final_norm = build_norm(cfg.norm, cfg.hidden_size, ctx, cfg.norm_eps, **kw)


class T5Model(ParallelModel):
    def __init__(self, cfg: T5Config, ctx: ParallelContext | None = None, dtype=None, device=None):
        super().__init__()
        ctx = ctx or ParallelContext.single()
        if ctx.pp > 1:
            raise ValueError(f"T5 does not support pipeline parallelism (parallel.pp={ctx.pp}); as in Megatron-LM, "
                             "use tensor (and sequence) parallelism with parallel.pp=1")
        cfg.check_tensor_parallel(ctx.tp)
        self.cfg, self.ctx = cfg, ctx
        self.rng: RNGTracker | None = None
        kw = dict(dtype=dtype, device=device)
        self.embed = VocabParallelEmbedding(cfg.vocab_size, cfg.hidden_size, ctx, 1.0, cfg.make_vocab_size_divisible_by, **kw)
        self.encoder = Stack(cfg, ctx, decoder=False, **kw)
        self.decoder = Stack(cfg, ctx, decoder=True, **kw)
        padded = cfg.padded_vocab(ctx.tp)
        if cfg.tie_embeddings:
            self.head = ColumnParallelLinear(cfg.hidden_size, padded, ctx, bias=False, weight=self.embed.weight, **kw)
        else:
            self.head = ColumnParallelLinear(cfg.hidden_size, padded, ctx, bias=False, init_std=cfg.init_std, **kw)
            describe(self.head.weight, ("normal", cfg.init_std), tp_dim=0, vocab_rows=cfg.vocab_size)

    def _embed(self, ids):
        x = self.embed(ids).transpose(0, 1).contiguous()
        if self.ctx.sp:
            if x.shape[0] % self.ctx.tp:
                raise ValueError(f"sequence length {x.shape[0]} is not divisible by tp={self.ctx.tp} (sequence parallelism)")
            x = C.scatter_to_sequence(x, self.ctx.tp_group)
        return self._drop(x)

    def encode(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """input_ids [b, t] -> encoder output [b, t, h] (full sequence)."""
        x = self._embed(input_ids)
        t = input_ids.shape[1]
        keep = None if attention_mask is None else attention_mask.bool()[:, None, None, :]
        mask = _additive(self.encoder.rel_bias(0, t, t).to(x.dtype), keep)
        for layer in self.encoder.layers.values():
            x = layer(x, None, mask, None, self.rng)
        x = self._drop(self.encoder.final_norm(x))
        if self.ctx.sp:
            x = C.gather_from_sequence(x, self.ctx.tp_group, grad_is_partial=False)
        return x.transpose(0, 1)

    def decode(self, decoder_input_ids: torch.Tensor, encoder_hidden: torch.Tensor,
               attention_mask: torch.Tensor | None = None, decoder_attention_mask: torch.Tensor | None = None,
               labels: torch.Tensor | None = None, cache: T5Cache | None = None) -> torch.Tensor:
        """Logits [b, s, vocab], or the per-token loss [b, s] with labels (0 where -100)."""
        past = cache.length() if cache is not None else 0
        x = self._embed(decoder_input_ids)
        s = decoder_input_ids.shape[1]
        t = past + s
        keep = causal_keep(s, t, x.device)[None, None]
        if decoder_attention_mask is not None:
            keep = keep & decoder_attention_mask.bool()[:, None, None, :]
        self_mask = _additive(self.decoder.rel_bias(past, s, t).to(x.dtype), keep)
        cross_mask = None
        if attention_mask is not None:
            cross_mask = _additive(torch.zeros((), dtype=x.dtype, device=x.device), attention_mask.bool()[:, None, None, :])
        enc = encoder_hidden.transpose(0, 1)
        if self.ctx.sp:
            enc = C.scatter_to_sequence(enc, self.ctx.tp_group)
        for layer in self.decoder.layers.values():
            x = layer(x, enc, self_mask, cross_mask, cache, self.rng)
        x = self._drop(self.decoder.final_norm(x))
        if self.cfg.scale_output:
            x = x * self.cfg.hidden_size ** -0.5
        logits = self.head(x)
        if labels is not None:
            loss = vocab_parallel_cross_entropy(logits, labels.transpose(0, 1), self.cfg.vocab_size, self.ctx.tp_group)
            return loss.transpose(0, 1)
        logits = C.gather_from_region(logits, self.ctx.tp_group, dim=-1)[..., : self.cfg.vocab_size]
        return logits.transpose(0, 1)

    def forward(self, input_ids: torch.Tensor, decoder_input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                decoder_attention_mask: torch.Tensor | None = None, labels: torch.Tensor | None = None,
                encoder_hidden: torch.Tensor | None = None, cache: T5Cache | None = None) -> torch.Tensor:
        if encoder_hidden is None:
            encoder_hidden = self.encode(input_ids, attention_mask)
        return self.decode(decoder_input_ids, encoder_hidden, attention_mask, decoder_attention_mask, labels, cache)
