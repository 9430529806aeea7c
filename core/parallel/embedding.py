"""Vocabulary-parallel embedding and vocabulary padding."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from megazoo.core.parallel import collectives as C
from megazoo.core.parallel.context import ParallelContext
from megazoo.core.parallel.init import describe
# the one definition of the padded vocabulary (core/plan is torch-free, so it lives there)
from megazoo.core.plan.params import padded_vocab as padded_vocab_size


class VocabParallelEmbedding(nn.Module):
    """Embedding table split by rows across tp ranks; each rank looks up the ids it owns and the
    partial results are all-reduced. Output [b, s, h], replicated."""

    def __init__(self, vocab_size: int, hidden: int, ctx: ParallelContext, init_std: float = 0.02,
                 multiple: int = 128, dtype: torch.dtype | None = None, device=None):
        super().__init__()
        self.ctx = ctx
        self.vocab_size = vocab_size
        self.padded_size = padded_vocab_size(vocab_size, ctx.tp, multiple)
        self.local_rows = self.padded_size // ctx.tp
        self.start = ctx.tp_rank * self.local_rows
        self.weight = describe(nn.Parameter(torch.empty(self.local_rows, hidden, dtype=dtype, device=device)),
                               ("normal", init_std), tp_dim=0, vocab_rows=vocab_size)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        if self.ctx.tp == 1:
            return F.embedding(ids, self.weight)
        local = ids - self.start
        outside = (local < 0) | (local >= self.local_rows)
        out = F.embedding(local.masked_fill(outside, 0), self.weight)
        out = out.masked_fill(outside.unsqueeze(-1), 0.0)
        return C.reduce_from_region(out, self.ctx.tp_group)
