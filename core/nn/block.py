"""The transformer layer (pre-LN by default; post-LN for the original BERT layout), with optional
bottleneck adapters (`adapter_size` > 0) on the attention and MLP outputs, before the residual add."""

from __future__ import annotations

import torch
from torch import nn

from megazoo.core.nn.adapter import Adapter
from megazoo.core.nn.attention import Attention, KVCache
from megazoo.core.nn.config import TransformerConfig
from megazoo.core.nn.mlp import MLP
from megazoo.core.nn.moe.layer import MoELayer
from megazoo.core.nn.norm import build_norm
from megazoo.core.parallel.context import ParallelContext
from megazoo.core.parallel.random import RNGTracker, dropout


class TransformerLayer(nn.Module):
    def __init__(self, cfg: TransformerConfig, ctx: ParallelContext, layer_number: int, dtype=None, device=None):
        super().__init__()
        self.cfg, self.ctx = cfg, ctx
        self.norm1 = build_norm(cfg.norm, cfg.hidden_size, ctx, cfg.norm_eps, bias=True, dtype=dtype, device=device)
        self.attn = Attention(cfg, ctx, layer_number, dtype=dtype, device=device)
        self.norm2 = build_norm(cfg.norm, cfg.hidden_size, ctx, cfg.norm_eps, bias=True, dtype=dtype, device=device)
        if cfg.moe is not None and cfg.moe.is_moe_layer(layer_number):  # experts instead of the dense MLP
            self.mlp = MoELayer(cfg, ctx, dtype=dtype, device=device)
        else:
            self.mlp = MLP(cfg, ctx, dtype=dtype, device=device)
        if cfg.adapter_size:  # no modules otherwise: parameter names (and checkpoints) stay as they were
            self.adapter1 = Adapter(cfg.hidden_size, cfg.adapter_size, ctx, cfg.init_std, dtype=dtype, device=device)
            self.adapter2 = Adapter(cfg.hidden_size, cfg.adapter_size, ctx, cfg.init_std, dtype=dtype, device=device)

    def _drop(self, x: torch.Tensor, rng: RNGTracker | None) -> torch.Tensor:
        if not self.training or self.cfg.dropout == 0.0:
            return x
        # under sp each tp rank holds different positions, so it needs its own stream
        generator = None if rng is None else rng.get("tensor-parallel" if self.ctx.sp else "default")
        return dropout(x, self.cfg.dropout, generator)

    def _branch(self, out: torch.Tensor, adapter: str, rng: RNGTracker | None) -> torch.Tensor:
        """A sublayer's output on its way to the residual add: dropout, then the adapter (where
        adapter-transformers puts Houlsby's adapter, so the adapter sees what the residual gets)."""
        out = self._drop(out, rng)
        return getattr(self, adapter)(out) if self.cfg.adapter_size else out

    def forward(self, x: torch.Tensor, rope=None, mask=None, cache: KVCache | None = None,
                rng: RNGTracker | None = None, rows: slice | None = None) -> torch.Tensor:
        """x: [s, b, h] (s / tp under sequence parallelism). rows: the layer's output at those
        positions only, [len, b, h] (they attend to every position they may see; the MLP and the
        residual run on them alone): the last layer under a head that reads [CLS] only, or a decoder's,
        whose loss falls on the positions from `rows.start` on."""
        rest = x if rows is None else x[rows]
        if self.cfg.post_norm:
            x = self.norm1(rest + self._branch(self.attn(x, rope, mask, cache, rng, rows), "adapter1", rng))
            return self.norm2(x + self._branch(self.mlp(x), "adapter2", rng))
        x = rest + self._branch(self.attn(self.norm1(x), rope, mask, cache, rng, rows), "adapter1", rng)
        return x + self._branch(self.mlp(self.norm2(x)), "adapter2", rng)
