"""The multiple-choice head on BERT (Megatron's MultipleChoice model).

Every option of a question is encoded as its own sequence; the pooled [CLS] output (tanh dense on
the first token) goes through dropout and a linear layer to one logit per option, and the 4 logits
of a question are compared with softmax cross-entropy. The head is tiny and replicated on every
tensor-parallel rank; the encoder underneath is whatever layout its ParallelContext says.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from megazoo.core.parallel.init import describe, initialize
from megazoo.core.parallel.random import dropout
from megazoo.tasks.race.data import NUM_CHOICES


class MultipleChoice(nn.Module):
    def __init__(self, bert: nn.Module, dropout_p: float = 0.1):
        super().__init__()
        if not getattr(bert.cfg, "add_pooler", False):
            raise ValueError("the RACE head reads BERT's pooled [CLS] output: build the encoder with add_pooler=True")
        if getattr(bert.ctx, "pp", 1) != 1:
            raise ValueError(f"the RACE fine-tuning runs with pipeline parallelism 1, got pp={bert.ctx.pp}; "
                             f"use tensor and data parallelism (parallel.tp, more ranks)")
        self.bert, self.ctx, self.dropout_p = bert, bert.ctx, dropout_p
        h = bert.cfg.hidden_size
        self.head_weight = describe(nn.Parameter(torch.empty(1, h)), ("normal", bert.cfg.init_std))
        self.head_bias = describe(nn.Parameter(torch.empty(1)), ("zeros",))

    def initialize_head(self, seed: int) -> "MultipleChoice":
        """Draw the head's weights (the encoder keeps its pretrained ones)."""
        holder = nn.Module()
        holder.head_weight, holder.head_bias = self.head_weight, self.head_bias  # names seed the draw
        initialize(holder, seed)
        return self

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor, attention_mask: torch.Tensor
                ) -> torch.Tensor:
        """[N, 4, L] inputs -> [N, 4] logits."""
        n, choices, length = input_ids.shape
        if choices != NUM_CHOICES:
            raise ValueError(f"expected {NUM_CHOICES} options per question, got {choices}")
        out = self.bert(input_ids=input_ids.reshape(n * choices, length),
                        token_type_ids=token_type_ids.reshape(n * choices, length),
                        attention_mask=attention_mask.reshape(n * choices, length))
        pooled = out.pooled
        if self.training and self.dropout_p > 0:
            # the "default" stream is the same on every tp rank, as the replicated pooled output needs
            rng = getattr(self.bert, "rng", None)
            pooled = dropout(pooled, self.dropout_p, rng.get("default") if rng is not None else None)
        return F.linear(pooled, self.head_weight, self.head_bias).view(n, choices)


def race_loss(logits: torch.Tensor, labels: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    """Softmax cross-entropy over the options of each question (fp32)."""
    return F.cross_entropy(logits.float(), labels, reduction=reduction)
