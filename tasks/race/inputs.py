"""Model inputs for RACE as Megatron-LM builds them.

For each of the 4 options: `[CLS] qa [SEP] article [SEP]`, where qa is the question with every
"_" replaced by the option (a cloze question) or `question + " " + option`; both texts pass
through `clean_text`; qa is cut to `max_qa_length` tokens (128); the whole sequence to
`max_seq_length` (512) by dropping the article's tail and keeping the final [SEP]. Token types are
0 for [CLS] qa [SEP] and 1 for article [SEP]; padding has type 0 and attention mask 0.
"""

from __future__ import annotations

import re
from typing import Sequence

import torch

from megazoo.tasks.race.data import NUM_CHOICES, RaceQuestion
from megazoo.zoo.heads.choice import ChoiceBatch, pair_ids


MAX_QA_LENGTH = 128
MAX_SEQ_LENGTH = 512


def clean_text(text: str) -> str:
    """Newlines and runs of whitespace become one space; " . " becomes ". " (Megatron's clean-up)."""
    text = re.sub(r"\s+", " ", text.replace("\n", " "))
    for _ in range(3):
        text = text.replace(" . ", ". ")
    return text


def qa_text(question: str, option: str) -> str:
    return question.replace("_", option) if "_" in question else question + " " + option


def build_inputs(questions: Sequence[RaceQuestion], tokenizer, max_seq_length: int = MAX_SEQ_LENGTH,
                 max_qa_length: int = MAX_QA_LENGTH) -> ChoiceBatch:
    """Encode questions with a megazoo tokenizer (needs .encode, .cls, .sep, .pad)."""
    if max_seq_length < 3:
        raise ValueError(f"max_seq_length must be at least 3 ([CLS] [SEP] [SEP]), got {max_seq_length}")
    for name in ("cls", "sep", "pad"):
        if getattr(tokenizer, name, None) is None:
            raise ValueError(f"tokenizer {getattr(tokenizer, 'name', tokenizer)!r} has no {name} token; RACE "
                             f"needs a BERT-style tokenizer ([CLS] [SEP] [PAD])")
    article_ids: dict[str, list[int]] = {}
    ids, types, masks, labels = [], [], [], []
    for q in questions:
        if q.article not in article_ids:
            article_ids[q.article] = tokenizer.encode(clean_text(q.article))
        qa = tokenizer.encode_batch([clean_text(qa_text(q.question, o)) for o in q.options])
        rows = [pair_ids(a[:max_qa_length], article_ids[q.article], max_seq_length,
                         tokenizer.cls, tokenizer.sep, tokenizer.pad) for a in qa]
        ids.append([r[0] for r in rows])
        types.append([r[1] for r in rows])
        masks.append([r[2] for r in rows])
        labels.append(q.label)
    shape = (len(labels), NUM_CHOICES, max_seq_length)
    # compact storage (the full RACE train split at 512 is ~1 GB this way, 4 GB as int64);
    # select() hands out int64 micro-batches
    return ChoiceBatch(torch.tensor(ids, dtype=torch.int32).view(shape),
                       torch.tensor(types, dtype=torch.int8).view(shape),
                       torch.tensor(masks, dtype=torch.int8).view(shape), torch.tensor(labels, dtype=torch.long))
