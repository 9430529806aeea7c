"""Padded encoder rows for the sequence, token and span heads, with what decoding needs.

One row is `[CLS] ... [SEP]` (or a `[CLS] a [SEP] b [SEP]` pair) as token ids, token types and an
attention mask, padded to the longest row; `targets` holds the head's training targets (sequence /
token "labels", span "start_positions" / "end_positions"). `Encoded.sample(i)` is row i as a
trainer sample, so core/train/rows.Rows serves it to the trainer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch


def check_tokenizer(tokenizer, task: str) -> None:
    """Refuse a tokenizer without [CLS] [SEP] [PAD] (a BERT input needs all three)."""
    for name in ("cls", "sep", "pad"):
        if getattr(tokenizer, name, None) is None:
            raise ValueError(f"tokenizer {getattr(tokenizer, 'name', tokenizer)!r} has no {name} token; {task} needs a "
                             f"BERT WordPiece tokenizer ([CLS] [SEP] [PAD])")


@dataclass
class Encoded:
    """Padded rows: input_ids, token_type_ids, attention_mask [N, L]; targets per kind; and what
    decoding needs (token head: the first sub-token of each kept word; span head: per row the
    question index, the token -> character offsets of the window and which tokens are max-context)."""

    input_ids: torch.Tensor
    token_type_ids: torch.Tensor
    attention_mask: torch.Tensor
    targets: dict
    words: list = field(default_factory=list)  # NER: per row the positions of each kept word's first sub-token
    # QA: per row (question index, {token: (char start, char end)}, the set of max-context tokens)
    rows: list = field(default_factory=list)

    def __len__(self) -> int:
        return self.input_ids.shape[0]

    def sample(self, i: int) -> dict:
        out = {"input_ids": self.input_ids[i], "token_type_ids": self.token_type_ids[i],
               "attention_mask": self.attention_mask[i]}
        out.update({k: v[i] for k, v in self.targets.items()})
        return out


def pad_rows(rows: list[list[int]], length: int, value: int) -> torch.Tensor:
    """[N, length] int64: each row followed by `value` up to `length`."""
    return torch.tensor([r + [value] * (length - len(r)) for r in rows], dtype=torch.long)


def finish_rows(ids, types, targets, tokenizer, length: int, **extra) -> Encoded:
    """Encoded of unpadded id and token-type rows: padded to `length` (at least 1) with the
    tokenizer's pad id and type 0, attention mask 1 on the real tokens."""
    length = max(length, 1)
    mask = [[1] * len(r) for r in ids]
    return Encoded(pad_rows(ids, length, tokenizer.pad), pad_rows(types, length, 0), pad_rows(mask, length, 0), targets,
                   **extra)
