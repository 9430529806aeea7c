"""Inputs of the multiple-choice head: C sequences per example, one logit each (zoo/heads "choice").

Each option is one `[CLS] a [SEP] b [SEP]` pair (pair_ids); a ChoiceBatch stores N examples as
[N, C, L] tensors, compactly (int32 ids, int8 types and mask), and hands out int64 model inputs
with the options flattened into the batch ([n * C, L'], question-major, as choice_logits expects).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch

from megazoo.core.train.rows import kept_length

FIELDS = ("input_ids", "token_type_ids", "attention_mask", "labels")


def pair_ids(a: Sequence[int], b: Sequence[int], max_seq_length: int, cls: int, sep: int, pad: int
             ) -> tuple[list[int], list[int], list[int]]:
    """(ids, token types, attention mask) of `[CLS] a [SEP] b [SEP]`, cut and padded to length."""
    ids = [cls, *a, sep, *b]
    types = [0] * (len(a) + 2) + [1] * len(b)
    if len(ids) >= max_seq_length:  # keep room for the closing [SEP]
        ids, types = ids[: max_seq_length - 1], types[: max_seq_length - 1]
    ids.append(sep)
    types.append(1)
    mask = [1] * len(ids)
    fill = max_seq_length - len(ids)
    return ids + [pad] * fill, types + [0] * fill, mask + [0] * fill


@dataclass
class ChoiceBatch:
    """Tensors for N examples: input_ids (int32), token_type_ids, attention_mask (int8) [N, C, L];
    labels [N] (int64, the right option). `select` gives int64 batches ready for the model;
    `sample(i)` is example i as a trainer sample (core/train/rows.Rows)."""

    input_ids: torch.Tensor
    token_type_ids: torch.Tensor
    attention_mask: torch.Tensor
    labels: torch.Tensor

    def __len__(self) -> int:
        return self.labels.shape[0]

    def sample(self, i: int) -> dict:
        return {k: getattr(self, k)[i] for k in FIELDS}

    def select(self, index, multiple: int = 1) -> "ChoiceBatch":
        """The examples at `index`, with columns that are padding in every row dropped (the
        results do not change: padding is masked out of attention; it only saves compute). The
        length kept is rounded up to `multiple` (at most the full length)."""
        mask = self.attention_mask[index]
        length = kept_length(mask, multiple)
        return ChoiceBatch(self.input_ids[index][..., :length].long(), self.token_type_ids[index][..., :length].long(),
                           mask[..., :length].long(), self.labels[index])


def micro_batch(inputs: ChoiceBatch, index) -> dict:
    """The examples at `index` as model inputs: their C options flattened into the batch
    ([n * C, L']), L' the longest real length rounded up to a multiple of 8 (columns that are
    padding in every row change nothing; they cost time)."""
    b = inputs.select(index, multiple=8)
    return {"input_ids": b.input_ids.flatten(0, 1), "token_type_ids": b.token_type_ids.flatten(0, 1),
            "attention_mask": b.attention_mask.flatten(0, 1), "labels": b.labels.long()}


def collate_choices(samples: list) -> dict:
    """Trainer samples ([C, L] each, ChoiceBatch.sample) -> [mb * C, L'] model inputs (micro_batch)."""
    stacked = ChoiceBatch(*(torch.stack([s[k] for s in samples]) for k in FIELDS))
    return micro_batch(stacked, slice(None))
