"""What every model of the zoo shares: layout-independent initialisation with its RNG streams, and
dropout on the residual stream drawn from the right stream."""

from __future__ import annotations

import torch
from torch import nn

from megazoo.core.parallel.init import initialize
from megazoo.core.parallel.random import RNGTracker, dropout


class ParallelModel(nn.Module):
    """Base of a model stage with `cfg` (dropout), `ctx` (a ParallelContext) and `rng`."""

    rng: RNGTracker | None = None

    def initialize(self, seed: int):
        """This rank's slice of the TP=1 model of `seed`, and the RNG streams. Streams are per
        (virtual) stage, keyed by the stage's first layer, so the chunks one rank holds under
        interleaving do not share dropout masks."""
        initialize(self, seed, self.ctx.tp, self.ctx.tp_rank)
        device = next(self.parameters()).device
        first_layer = getattr(self, "layer_range", (0,))[0]
        self.rng = RNGTracker(seed, self.ctx.tp_rank, first_layer, "cpu" if device.type == "meta" else device)
        return self

    def _drop(self, x: torch.Tensor) -> torch.Tensor:
        """Hidden dropout: a per-tp-rank stream when the sequence is split over tp ranks, else the
        stream the tp ranks share."""
        if not self.training or self.cfg.dropout == 0.0:
            return x
        stream = "tensor-parallel" if self.ctx.sp else "default"
        return dropout(x, self.cfg.dropout, self.rng.get(stream) if self.rng else None)
