"""Fine-tuning heads on an encoder's last stage, and their losses.

    kind      reads                      logits (BertOutput.logits)     Hugging Face class (tensor)
    sequence  dropout(pooled [b, h])     [b, num_labels]                *ForSequenceClassification (classifier)
    token     dropout(hidden [b, s, h])  [b, s, num_labels]             *ForTokenClassification (classifier)
    span      hidden [b, s, h]           [b, s, 2] (start, end)         *ForQuestionAnswering (qa_outputs)
    choice    dropout(pooled [b*C, h])   [b*C] (choice_logits -> [b, C]) *ForMultipleChoice (classifier)

A head is one small linear layer, replicated on every tensor-parallel rank: it reads the encoder's
output after the sequence has been gathered, so its gradients are the same on every tp rank and
need no reduction. Its dropout draws from the "default" stream, which the tp ranks share, so they
agree on the mask. The weight is described like every megazoo parameter (normal(init_std), zero
bias), so a head starts identical at every tp/pp layout for a given seed.

Losses are fp32 sums with their counts, so a trainer can normalise by a global count:

    loss_sum, count = head_loss(kind, logits, batch)    # the mean is loss_sum / count
    count = head_count(kind, batch)                     # the same count, from the batch alone

batch keys: sequence/choice "labels" [b] (-100 ignored; float targets when num_labels == 1: a
regression with squared error, as HF), token "labels" [b, s] (-100 ignored), span
"start_positions" / "end_positions" [b].

The heads' inputs, shared by the tasks that fine-tune them: encoded.py (padded rows and targets),
qa.py (SQuAD features in, n-best answers out: span), choice.py (C option sequences per example: choice).
"""

from __future__ import annotations

from typing import Mapping

import torch
import torch.nn.functional as F
from torch import nn

from megazoo.core.parallel.context import ParallelContext
from megazoo.core.parallel.init import describe
from megazoo.core.parallel.layers import replicated_param
from megazoo.core.parallel.random import RNGTracker, dropout

IGNORE = -100
KINDS = ("sequence", "token", "span", "choice")
POOLED_HEADS = ("sequence", "choice")  # the heads that read the pooled [CLS] output only


class Dense(nn.Module):
    """A small tp-replicated linear layer (pooler, LM-head transform, binary head, task heads).

    `seq_sharded`: its input is sequence-sharded under sp, so the weight gradient must be summed
    over the tp group (replicated_param); on replicated input it must not be."""

    def __init__(self, fin: int, fout: int, ctx: ParallelContext, std: float, seq_sharded: bool = False, **kw):
        super().__init__()
        self.ctx, self.seq_sharded = ctx, seq_sharded
        self.weight = describe(nn.Parameter(torch.empty(fout, fin, **kw)), ("normal", std))
        self.bias = describe(nn.Parameter(torch.empty(fout, **kw)), ("zeros",))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.seq_sharded:
            return F.linear(x, replicated_param(self.weight, self.ctx), replicated_param(self.bias, self.ctx))
        return F.linear(x, self.weight, self.bias)


def num_outputs(kind: str, num_labels: int) -> int:
    if kind not in KINDS:
        raise ValueError(f"unknown task head {kind!r}; known: {', '.join(KINDS)}")
    return {"sequence": num_labels, "token": num_labels, "span": 2, "choice": 1}[kind]


class TaskHead(nn.Module):
    """One head of KINDS; its parameters are `classifier.weight` [out, h] and `classifier.bias`."""

    def __init__(self, kind: str, hidden_size: int, num_labels: int, ctx: ParallelContext, std: float,
                 dropout_p: float = 0.0, **kw):
        super().__init__()
        self.kind, self.dropout_p = kind, dropout_p
        self.classifier = Dense(hidden_size, num_outputs(kind, num_labels), ctx, std, **kw)

    def forward(self, hidden: torch.Tensor, pooled: torch.Tensor | None, rng: RNGTracker | None) -> torch.Tensor:
        """hidden [b, s, h] (the whole sequence, on every tp rank), pooled [b, h] -> logits."""
        if self.kind in POOLED_HEADS:
            if pooled is None:
                raise ValueError(f"the {self.kind} head reads the pooled output: build the encoder with add_pooler")
            x = pooled
        else:
            x = hidden
        if self.kind != "span" and self.training and self.dropout_p > 0:  # HF's QA head has no dropout
            x = dropout(x, self.dropout_p, rng.get("default") if rng is not None else None)
        logits = self.classifier(x)
        return logits.squeeze(-1) if self.kind == "choice" else logits


# ------------------------------------------------------------------------------------ logits views
def choice_logits(logits: torch.Tensor, num_choices: int) -> torch.Tensor:
    """[b*C] choice logits (options flattened into the batch, question-major) -> [b, C]."""
    if logits.numel() % num_choices:
        raise ValueError(f"{logits.numel()} choice logits do not split into groups of {num_choices} options")
    return logits.reshape(-1, num_choices)


def span_logits(logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """[b, s, 2] -> start logits [b, s], end logits [b, s]."""
    return logits[..., 0], logits[..., 1]


# ------------------------------------------------------------------------------------------ losses
def _span_positions(positions: torch.Tensor, seq_len: int) -> torch.Tensor:
    """HF's rule: positions are clamped to [0, s] and s (outside the input) is ignored; our -100
    (an example to skip, e.g. batch padding) is ignored too instead of clamping to 0."""
    positions = positions.reshape(-1).long()
    return torch.where(positions == IGNORE, seq_len, positions.clamp(0, seq_len))


def head_count(kind: str, batch: Mapping[str, torch.Tensor], seq_len: int | None = None) -> torch.Tensor:
    """What head_loss's sum is divided by for a mean (fp32 scalar): the labelled examples
    (sequence, choice), the labelled tokens (token), or for span the mean of the valid start and
    end positions (the number of examples when both are inside the sequence, as usual).
    `seq_len` (span only) defaults to batch["input_ids"].shape[1]."""
    if kind == "span":
        s = batch["input_ids"].shape[1] if seq_len is None else seq_len
        valid = [(_span_positions(batch[k], s) != s).sum() for k in ("start_positions", "end_positions")]
        return (valid[0] + valid[1]).float() / 2
    return (batch["labels"] != IGNORE).sum().float()


def head_loss(kind: str, logits: torch.Tensor, batch: Mapping[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """(loss summed over the batch in fp32, head_count) for a head's logits as BertOutput gives them.

    sequence: cross-entropy over examples (num_labels == 1: squared error against float labels);
    token: cross-entropy over tokens; span: (CE(start) + CE(end)) / 2 per example, as HF;
    choice: cross-entropy over the options of each question, C = logits.numel() / labels.numel()."""
    if kind not in KINDS:
        raise ValueError(f"unknown task head {kind!r}; known: {', '.join(KINDS)}")
    logits = logits.float()
    if kind == "span":
        s = logits.shape[1]
        start, end = span_logits(logits)
        loss = sum(F.cross_entropy(lg, _span_positions(batch[k], s), ignore_index=s, reduction="sum")
                   for lg, k in ((start, "start_positions"), (end, "end_positions"))) / 2
        return loss, head_count(kind, batch, s)
    labels = batch["labels"]
    if kind == "sequence" and logits.shape[-1] == 1:  # regression (HF's num_labels == 1)
        keep = labels.reshape(-1) != IGNORE
        loss = F.mse_loss(logits.reshape(-1)[keep], labels.float().reshape(-1)[keep], reduction="sum")
        return loss, head_count(kind, batch)
    if kind == "choice":
        logits = choice_logits(logits, logits.numel() // max(labels.numel(), 1))
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1).long(), ignore_index=IGNORE,
                           reduction="sum")
    return loss, head_count(kind, batch)
