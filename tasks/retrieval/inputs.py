"""Bi-encoder inputs as DPR and Megatron build them.

A question is one segment, `[CLS] question [SEP]`; a passage is the pair (title, text),
`[CLS] title [SEP] text [SEP]` with token types 0 then 1 (DPR's `text_to_tensor(title,
text_pair=text)`). Truncation cuts the text first, then the title. A batch of rows is padded to
its longest row rounded up to a multiple of 8 (attention_mask 1 = token).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch


@dataclass
class Row:
    ids: list[int]
    types: list[int]


def question_row(tokens: list[int], cls: int, sep: int, max_len: int) -> Row:
    tokens = tokens[:max_len - 2]
    return Row([cls, *tokens, sep], [0] * (len(tokens) + 2))


def passage_row(title: list[int], text: list[int], cls: int, sep: int, max_len: int) -> Row:
    room = max_len - 3
    title = title[:room]
    text = text[:room - len(title)]
    return Row([cls, *title, sep, *text, sep], [0] * (len(title) + 2) + [1] * (len(text) + 1))


class RowEncoder:
    """Turns texts into Rows with a megazoo tokenizer (encode_batch without specials; cls/sep ids)."""

    def __init__(self, tokenizer, question_length: int, passage_length: int):
        if tokenizer.cls is None or tokenizer.sep is None:
            raise ValueError(f"tokenizer {tokenizer.name} has no [CLS]/[SEP]; a BERT bi-encoder needs them")
        self.tok, self.q_len, self.p_len = tokenizer, question_length, passage_length
        self.pad = tokenizer.pad if tokenizer.pad is not None else 0

    def questions(self, texts: Sequence[str]) -> list[Row]:
        return [question_row(t, self.tok.cls, self.tok.sep, self.q_len) for t in self.tok.encode_batch(list(texts))]

    def passages(self, titles: Sequence[str], texts: Sequence[str]) -> list[Row]:
        ti, tx = self.tok.encode_batch(list(titles)), self.tok.encode_batch(list(texts))
        return [passage_row(a, b, self.tok.cls, self.tok.sep, self.p_len) for a, b in zip(ti, tx)]


def pad_rows(rows: Sequence[Row], pad_id: int, multiple: int = 8, length: int | None = None) -> dict[str, torch.Tensor]:
    """input_ids, token_type_ids, attention_mask [len(rows), L]; L = `length` or the longest row
    rounded up to `multiple`."""
    longest = max(len(r.ids) for r in rows)
    L = length or -(-longest // multiple) * multiple
    ids = torch.full((len(rows), L), pad_id, dtype=torch.long)
    types = torch.zeros((len(rows), L), dtype=torch.long)
    mask = torch.zeros((len(rows), L), dtype=torch.long)
    for i, r in enumerate(rows):
        n = len(r.ids)
        ids[i, :n] = torch.tensor(r.ids)
        types[i, :n] = torch.tensor(r.types)
        mask[i, :n] = 1
    return {"input_ids": ids, "token_type_ids": types, "attention_mask": mask}
