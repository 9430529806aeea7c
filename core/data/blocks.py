"""Sentence blocks: the sample mapping BERT and T5 samples are cut from.

A block is a run of consecutive sentences (sequences of a document in a --split-sentences dataset)
whose tokens reach a target length (the full length, or with probability short_seq_prob a random
shorter one, as Megatron does to teach short inputs). Blocks never cross documents. Epochs are
added until num_samples blocks exist; the whole mapping is then shuffled with the seed.
"""

from __future__ import annotations

import os

import numpy as np

from megazoo.core.data.cache import cached_arrays
from megazoo.core.data.errors import DataError
from megazoo.core.data.indexed import IndexedDataset

BLOCKS_VERSION = 1


def build_blocks(sentence_lengths: np.ndarray, document_indices: np.ndarray, documents: np.ndarray,
                 max_tokens: int, num_samples: int | None, seed: int, min_sentences: int,
                 short_seq_prob: float) -> np.ndarray:
    """[n, 3] int64 rows (first sentence, end sentence exclusive, target length), shuffled."""
    rng = np.random.RandomState(seed)
    lengths = np.asarray(sentence_lengths, dtype=np.int64)
    rows: list[tuple[int, int, int]] = []

    def target() -> int:
        if short_seq_prob > 0 and rng.random_sample() < short_seq_prob:
            return int(rng.randint(2, max_tokens + 1))
        return max_tokens

    epochs = 0
    while True:
        added = 0
        for doc in documents:
            first, end = int(document_indices[doc]), int(document_indices[doc + 1])
            if end - first < min_sentences:
                continue
            goal, start, total = target(), first, 0
            for s in range(first, end):
                total += int(lengths[s])
                if total >= goal or s == end - 1:
                    if s + 1 - start >= min_sentences and total > 0:
                        rows.append((start, s + 1, goal))
                        added += 1
                    goal, start, total = target(), s + 1, 0
        epochs += 1
        if added == 0 or num_samples is None or len(rows) >= num_samples:
            break
    mapping = np.asarray(rows, dtype=np.int64).reshape(-1, 3)
    rng.shuffle(mapping)
    return mapping


class SentenceBlocks:
    """The block mapping of one split of a sentence-split dataset, cached on disk."""

    def __init__(self, indexed: IndexedDataset, documents: np.ndarray, max_tokens: int,
                 num_samples: int | None, seed: int, split: str, kind: str, min_sentences: int,
                 short_seq_prob: float, cache_dir: str | os.PathLike | None = None):
        from megazoo.core.data.gpt import index_fingerprint

        self.indexed = indexed
        documents = np.asarray(documents, dtype=np.int64)
        desc = {"class": kind, "version": BLOCKS_VERSION, "path": os.path.abspath(indexed.prefix),
                "idx_md5": index_fingerprint(indexed), "split": split,
                "documents": [int(documents[0]), int(documents[-1]) + 1, len(documents)] if len(documents) else [],
                "num_samples": num_samples, "max_tokens": max_tokens, "seed": seed,
                "min_sentences": min_sentences, "short_seq_prob": short_seq_prob}
        (self.mapping,) = cached_arrays(
            cache_dir, kind, split, desc, ("blocks",),
            lambda: (build_blocks(indexed.sequence_lengths, indexed.document_indices, documents,
                                  max_tokens, num_samples, seed, min_sentences, short_seq_prob),))
        if len(self.mapping) == 0:
            need = f"at least {min_sentences} sentences" if min_sentences > 1 else "any tokens"
            raise DataError(f"{indexed.prefix}: no document of the {split} split has {need}; "
                            f"{kind} samples are cut from sentences: preprocess with --split-sentences "
                            f"and give the split more documents")

    def __len__(self) -> int:
        return len(self.mapping)

    def sentences(self, idx: int) -> tuple[list[np.ndarray], int]:
        first, end, goal = (int(x) for x in self.mapping[idx])
        return [self.indexed[s] for s in range(first, end)], goal
