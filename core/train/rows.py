"""Encoded rows as trainer sources, and trimming their padding (shared by the fine-tuning tasks).

A trainer source has `len(source)` and `source.get(i)` -> one sample (a dict of tensors), for any
global sample index i (core/train/data.py Batches asks for indices past the end in later epochs):

    train = Shuffled(Rows(encoded_train), seed)   # a fresh seeded order every epoch
    valid = Rows(encoded_valid)                   # file order; wraps past the end
    valid = First(source, n)                      # the first n samples of any source, at every evaluation

`Rows` reads any table with `len(table)` and `table.sample(i)` (the span/token/sequence rows of
zoo/heads/qa.py's Encoded, the multiple-choice rows of zoo/heads/choice.py); core names neither.
"""

from __future__ import annotations

from typing import Protocol

import torch

from megazoo.core.train.data import EpochSource


class Table(Protocol):
    def __len__(self) -> int: ...

    def sample(self, i: int) -> dict: ...


class Rows:
    """A table as a trainer source: sample i -> the table's row i mod len (a last validation batch
    is filled from the start)."""

    def __init__(self, table: Table):
        self.table = table

    def __len__(self) -> int:
        return len(self.table)

    def get(self, i: int) -> dict:
        return self.table.sample(i % len(self.table))


class Shuffled:
    """A source's samples in a fresh seeded order every epoch (EpochSource over their indices)."""

    def __init__(self, rows, seed: int):
        self.rows, self.order = rows, EpochSource(list(range(len(rows))), seed)

    def __len__(self) -> int:
        return len(self.rows)

    def get(self, i: int) -> dict:
        return self.rows.get(self.order.get(i))


class First:
    """The first `n` samples of a source (all when n is 0; wrapping past them): a validation set that
    is the same samples at every evaluation."""

    def __init__(self, source, n: int):
        self.source, self.n = source, min(n, len(source)) if n else len(source)

    def __len__(self) -> int:
        return self.n

    def get(self, i: int):
        return self.source.get(i % self.n)


def kept_length(attention_mask: torch.Tensor, multiple: int = 1) -> int:
    """The columns to keep of a batch: the longest real row (at least 1) rounded up to `multiple`,
    at most the full width. The columns after it are padding in every row."""
    width = attention_mask.shape[-1]
    return min(width, -(-max(int(attention_mask.sum(-1).max()), 1) // multiple) * multiple)


def trim(batch: dict, multiple: int = 8) -> dict:
    """Drop the columns that are padding in every row (rounded up to `multiple`): they change
    nothing (masked out of attention, -100 labels), they only cost time. Every [rows, width]
    tensor of the batch is cut; the others (per-row targets) are kept whole."""
    mask = batch["attention_mask"]
    length = kept_length(mask, multiple)
    return {k: (v[:, :length] if v.dim() == 2 and v.shape[-1] == mask.shape[-1] else v) for k, v in batch.items()}
