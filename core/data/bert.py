"""BERT samples: sentence pairs with masked-LM targets and a sentence-order label.

Each sample is a block of consecutive sentences (blocks.py) cut at a random sentence into A and
B; with probability 1/2 the two are swapped and `is_random` is 1 (the sentence-order prediction
task Megatron's BERT trains; with binary_head=False there is one segment and no label). The pair
is truncated to seq_length - 3 tokens, laid out as [CLS] A [SEP] B [SEP], and 15% of its
non-special tokens are chosen for prediction: 80% of those become [MASK], 10% a random token, 10%
stay as they are. Every sample draws from RandomState(seed + index), so it does not depend on
which samples were read before it (resuming mid-epoch gives the same samples).

Item (int64 arrays of length seq_length unless noted):
  text          token ids after masking     types        segment ids (0 for A, 1 for B)
  labels        original id where predicted, -1 elsewhere
  loss_mask     1 where predicted           padding_mask 1 on real tokens, 0 on padding
  is_random     0-d: 1 when A and B were swapped
"""

from __future__ import annotations

import os

import numpy as np

from megazoo.core.data.blocks import SentenceBlocks
from megazoo.core.data.errors import DataError
from megazoo.core.data.indexed import IndexedDataset


def special_id_set(tokenizer) -> set[int]:
    ids = {getattr(tokenizer, n) for n in ("eod", "pad", "cls", "sep", "mask", "bos", "eos", "unk")}
    return {int(i) for i in ids if i is not None} | {int(i) for i in tokenizer.sentinels}


def random_token(rng: np.random.RandomState, vocab_size: int, specials: set[int]) -> int:
    while True:
        t = int(rng.randint(0, vocab_size))
        if t not in specials:
            return t


def mask_tokens(tokens: np.ndarray, candidates: np.ndarray, rng: np.random.RandomState, tokenizer,
                specials: set[int], prob: float = 0.15) -> tuple[np.ndarray, np.ndarray]:
    """Masked-LM corruption in place on a copy: returns (corrupted tokens, labels with -1)."""
    out = tokens.copy()
    labels = np.full_like(tokens, -1)
    if len(candidates) == 0:
        return out, labels
    count = min(len(candidates), max(1, int(round(len(candidates) * prob))))
    chosen = np.sort(rng.choice(candidates, size=count, replace=False))
    labels[chosen] = tokens[chosen]
    for pos in chosen:
        u = rng.random_sample()
        if u < 0.8:
            out[pos] = tokenizer.mask
        elif u >= 0.9:
            out[pos] = random_token(rng, tokenizer.vocab_size, specials)
        # else: keep the original token (still predicted)
    return out, labels


def truncate_pair(a: list[int], b: list[int], max_tokens: int, rng: np.random.RandomState) -> bool:
    """Trim the longer side, from its front or back at random, until the pair fits."""
    truncated = False
    while len(a) + len(b) > max_tokens:
        longer = a if len(a) > len(b) else b
        if rng.random_sample() < 0.5:
            del longer[0]
        else:
            longer.pop()
        truncated = True
    return truncated


def check_bert_options(tokenizer, seq_length: int) -> None:
    """Fail before any data work when the tokenizer or length cannot make BERT samples."""
    missing = [n for n in ("cls", "sep", "mask", "pad") if getattr(tokenizer, n) is None]
    if missing:
        raise DataError(f"tokenizer {tokenizer.name} has no {', '.join(missing)} token; BERT samples "
                        f"need [CLS] [SEP] [MASK] [PAD] (use bert-wordpiece, or a vocabulary that has them)")
    if seq_length < 5:
        raise DataError(f"BERT seq_length {seq_length} is too short; it needs room for [CLS] A [SEP] B [SEP]")


class BertDataset:
    """Masked-LM (+ sentence-order) samples over the documents `documents` of a sentence-split dataset."""

    def __init__(self, indexed: IndexedDataset, documents: np.ndarray, num_samples: int | None,
                 seq_length: int, seed: int, tokenizer, split: str = "train", masking_prob: float = 0.15,
                 short_seq_prob: float = 0.1, binary_head: bool = True,
                 cache_dir: str | os.PathLike | None = None):
        check_bert_options(tokenizer, seq_length)
        self.tokenizer, self.seq_length, self.seed = tokenizer, seq_length, seed
        self.masking_prob, self.binary_head = masking_prob, binary_head
        self.specials = special_id_set(tokenizer)
        reserved = 3 if binary_head else 2
        self.max_tokens = seq_length - reserved
        self.blocks = SentenceBlocks(indexed, documents, self.max_tokens, num_samples, seed, split,
                                     "BertDataset", 2 if binary_head else 1, short_seq_prob, cache_dir)

    def __len__(self) -> int:
        return len(self.blocks)

    def __getitem__(self, idx: int) -> dict[str, np.ndarray]:
        rng = np.random.RandomState((self.seed + int(idx)) % 2**32)
        sentences, goal = self.blocks.sentences(int(idx))
        tok = self.tokenizer
        if self.binary_head:
            cut = int(rng.randint(1, len(sentences)))
            a = np.concatenate(sentences[:cut]).tolist()
            b = np.concatenate(sentences[cut:]).tolist()
            is_random = rng.random_sample() < 0.5
            if is_random:
                a, b = b, a
        else:
            a, b, is_random = np.concatenate(sentences).tolist(), [], False
        truncated = truncate_pair(a, b, min(goal, self.max_tokens), rng)
        tokens = [tok.cls, *a, tok.sep] + ([*b, tok.sep] if self.binary_head else [])
        types = [0] * (len(a) + 2) + [1] * (len(tokens) - len(a) - 2)
        arr = np.asarray(tokens, dtype=np.int64)
        candidates = np.flatnonzero(~np.isin(arr, [tok.cls, tok.sep]))
        text, labels = mask_tokens(arr, candidates, rng, tok, self.specials, self.masking_prob)
        n, pad = len(arr), self.seq_length - len(arr)
        return {
            "text": np.concatenate([text, np.full(pad, tok.pad, dtype=np.int64)]),
            "types": np.asarray(types + [0] * pad, dtype=np.int64),
            "labels": np.concatenate([labels, np.full(pad, -1, dtype=np.int64)]),
            "loss_mask": np.concatenate([(labels >= 0).astype(np.int64), np.zeros(pad, dtype=np.int64)]),
            "padding_mask": np.concatenate([np.ones(n, dtype=np.int64), np.zeros(pad, dtype=np.int64)]),
            "is_random": np.array(int(is_random), dtype=np.int64),
            "truncated": np.array(int(truncated), dtype=np.int64),
        }
