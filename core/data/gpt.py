"""GPT samples built as Megatron builds them.

Three indices, the same arrays Megatron's GPTDataset makes for the same seed:
  document index  the split's document (sequence) ids tiled once per epoch and shuffled with
                  numpy's RandomState(seed); when the last epoch is needed for fewer than 80% of an
                  epoch's samples it is shuffled apart, so the partial epoch is not skewed toward
                  whatever documents a global shuffle happened to put first;
  sample index    [num_samples + 1, 2]: (position in the document index, offset in that document)
                  where sample i starts; sample i is the seq_length + 1 tokens from its start to
                  the next sample's start inclusive, crossing document boundaries, so that inputs
                  tokens[:-1] of consecutive samples tile the token stream exactly once;
  shuffle index   a permutation of the samples (the partial last epoch again shuffled apart).
They are cached on disk under a hash of their description (cache.py).
"""

from __future__ import annotations

import os

import numpy as np

from megazoo.core.data.cache import cached_arrays, file_digest
from megazoo.core.data.errors import DataError
from megazoo.core.data.indexed import IndexedDataset

# A final epoch used for fewer than this fraction of an epoch's samples is shuffled separately.
SEPARATE_FINAL_EPOCH_THRESHOLD = 0.80
INDEX_VERSION = 1


def num_epochs_for(tokens_per_epoch: int, seq_length: int, num_samples: int | None) -> int:
    """Fewest epochs whose tokens give `num_samples` samples of seq_length + 1 (one shared token)."""
    if num_samples is None:
        return 1
    needed = num_samples * seq_length + 1
    return max(1, -(-needed // tokens_per_epoch))


def build_document_index(documents: np.ndarray, num_epochs: int, rng: np.random.RandomState,
                         separate_final_epoch: bool) -> np.ndarray:
    """Document ids repeated per epoch, shuffled (the last epoch apart when asked)."""
    if separate_final_epoch and num_epochs > 1:
        first = build_document_index(documents, num_epochs - 1, rng, False)
        last = build_document_index(documents, 1, rng, False)
        return np.concatenate([first, last])
    index = np.tile(np.asarray(documents, dtype=np.int32), num_epochs)
    rng.shuffle(index)
    return index


def build_sample_index(sizes: np.ndarray, document_index: np.ndarray, seq_length: int,
                       num_samples: int) -> np.ndarray:
    """Start (document-index position, offset) of each of num_samples samples, plus the end.

    Sample i starts at flat token position i * seq_length of the documents laid end to end in
    document-index order; a position maps to the (non-empty) document containing it.
    """
    lengths = np.asarray(sizes, dtype=np.int64)[document_index]
    ends = np.cumsum(lengths)
    positions = np.arange(num_samples + 1, dtype=np.int64) * seq_length
    doc = np.searchsorted(ends, positions, side="right")
    offset = positions - (ends[doc] - lengths[doc])
    dtype = np.int32 if max(len(document_index), int(lengths.max(initial=0))) < 2**31 - 1 else np.int64
    index = np.stack([doc, offset], axis=1).astype(dtype)
    index[0] = 0  # Megatron starts at (0, 0) even when the first document happens to be empty
    return index


def build_shuffle_index(first: int, total: int, rng: np.random.RandomState) -> np.ndarray:
    """Shuffle [0, first) and [first, total) apart and concatenate."""
    dtype = np.uint32 if total < np.iinfo(np.uint32).max - 1 else np.int64
    head = np.arange(first, dtype=dtype)
    rng.shuffle(head)
    if first == total:
        return head
    tail = np.arange(first, total, dtype=dtype)
    rng.shuffle(tail)
    return np.concatenate([head, tail])


def build_gpt_indices(sizes: np.ndarray, documents: np.ndarray, seq_length: int, num_samples: int | None,
                      seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(document index, sample index, shuffle index) for these documents, as Megatron builds them."""
    tokens_per_epoch = int(np.asarray(sizes, dtype=np.int64)[documents].sum())
    num_epochs = num_epochs_for(tokens_per_epoch, seq_length, num_samples)
    per_epoch = (tokens_per_epoch - 1) // seq_length
    separate = False
    sans_final = 0
    if num_epochs > 1:
        sans_final = ((num_epochs - 1) * tokens_per_epoch - 1) // seq_length
        from_final = num_samples - sans_final
        separate = from_final < int(SEPARATE_FINAL_EPOCH_THRESHOLD * per_epoch)
    rng = np.random.RandomState(seed)
    document_index = build_document_index(documents, num_epochs, rng, separate)
    total = (num_epochs * tokens_per_epoch - 1) // seq_length
    sample_index = build_sample_index(sizes, document_index, seq_length, total)
    shuffle_index = build_shuffle_index(sans_final if separate else total, total, rng)
    return document_index, sample_index, shuffle_index


def index_fingerprint(ds: IndexedDataset) -> str:
    """Content hash of a dataset's .idx (cached on the object): keys the sample-index cache."""
    if not hasattr(ds, "_fingerprint"):
        ds._fingerprint = file_digest(ds.idx_file)
    return ds._fingerprint


class GPTDataset:
    """Samples `{"tokens": int64[seq_length + 1]}` over the sequences `indices` of an indexed dataset.

    The model's input is tokens[:-1] and its labels tokens[1:]. `len()` is every sample of the
    epochs needed for `num_samples` (one epoch when None), like Megatron's.
    """

    def __init__(self, indexed: IndexedDataset, indices: np.ndarray, num_samples: int | None,
                 seq_length: int, seed: int, split: str = "train",
                 cache_dir: str | os.PathLike | None = None):
        if seq_length < 1:
            raise DataError(f"seq_length must be positive, got {seq_length}")
        self.indexed, self.seq_length, self.seed, self.split = indexed, seq_length, seed, split
        indices = np.asarray(indices, dtype=np.int64)
        tokens = int(indexed.sequence_lengths[indices].sum(dtype=np.int64)) if len(indices) else 0
        if tokens - 1 < seq_length:
            raise DataError(f"{indexed.prefix}: the {split} split has {len(indices)} documents with "
                            f"{tokens} tokens, fewer than one sample of seq_length + 1 = {seq_length + 1}; "
                            f"give it more data or a larger share in data.split")
        desc = {"class": "GPTDataset", "version": INDEX_VERSION, "path": os.path.abspath(indexed.prefix),
                "idx_md5": index_fingerprint(indexed), "split": split,
                "indices": [int(indices[0]), int(indices[-1]) + 1, len(indices)],
                "num_samples": num_samples, "seq_length": seq_length, "seed": seed}
        self.document_index, self.sample_index, self.shuffle_index = cached_arrays(
            cache_dir, "GPTDataset", split, desc, ("document_index", "sample_index", "shuffle_index"),
            lambda: build_gpt_indices(indexed.sequence_lengths, indices, seq_length, num_samples, seed))

    def __len__(self) -> int:
        return len(self.sample_index) - 1

    def locate(self, idx: int) -> list[tuple[int, int, int | None]]:
        """(sequence id, offset, length or None for 'to its end') parts of sample idx."""
        if not 0 <= idx < len(self):
            raise IndexError(f"sample {idx} out of range ({len(self)} samples)")
        i = int(self.shuffle_index[idx])
        # one slice + tolist() instead of many numpy scalar reads: this runs once per sample
        (beg, beg_off), (end, end_off) = self.sample_index[i:i + 2].tolist()
        docs = self.document_index[beg:end + 1].tolist()
        if beg == end:
            return [(docs[0], beg_off, end_off - beg_off + 1)]
        parts = [(docs[0], beg_off, None)]
        parts += [(d, 0, None) for d in docs[1:-1]]
        parts.append((docs[-1], 0, end_off + 1))
        return parts

    def __getitem__(self, idx: int) -> dict[str, np.ndarray]:
        parts = [self.indexed.get(seq, off, n) for seq, off, n in self.locate(int(idx))]
        tokens = np.concatenate(parts).astype(np.int64)
        if len(tokens) != self.seq_length + 1:  # cannot happen on a valid index; guard stale caches
            raise DataError(f"{self.indexed.prefix}: sample {idx} has {len(tokens)} tokens, expected "
                            f"{self.seq_length + 1}; delete the cached indices and rebuild")
        return {"tokens": tokens}
