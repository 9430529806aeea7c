"""`data.path` parsing, train/valid/test splits, and blending datasets by weight.

data.path is one prefix, or weights and prefixes alternating as Megatron's --data-path takes them:
    "corpus/web"                       one dataset
    "0.7 corpus/web 0.3 corpus/books"  (or the same as a list) two datasets, blended 70/30
    ["corpus/web", "corpus/books"]     several prefixes without weights: weighted by their tokens
The split string "949,50,1" divides each dataset's documents into train/valid/test by weight.
Blending assigns sample i to the dataset whose realised count lags its weight most (Megatron's
greedy rule), so every prefix of the blend tracks the weights to within one sample per dataset.
"""

from __future__ import annotations

import math
import os
import re
from typing import Sequence

import numpy as np

from megazoo.core.data.cache import cached_arrays
from megazoo.core.data.errors import DataError

SPLIT_NAMES = ("train", "valid", "test")
# Each dataset in a blend is built with this much more than its share, as Megatron does, so the
# greedy assignment never runs a dataset past its end.
BLEND_SURPLUS = 0.005


def _is_number(word) -> bool:
    if isinstance(word, (int, float)) and not isinstance(word, bool):
        return True
    try:
        float(str(word))
        return True
    except ValueError:
        return False


def parse_data_path(value: str | Sequence | None) -> tuple[list[str], list[float] | None]:
    """-> (prefixes, normalised weights or None for 'weight by size'); ([], None) when unset."""
    if value is None:
        return [], None
    words = value.split() if isinstance(value, str) else [str(w) if not _is_number(w) else w for w in value]
    words = [w for w in words if not (isinstance(w, str) and not w.strip())]
    if not words:
        return [], None
    if len(words) == 1:
        if _is_number(words[0]):
            raise DataError(f"data.path: `{words[0]}` is a weight with no prefix after it")
        return [str(words[0])], None
    numeric = [_is_number(w) for w in words]
    if not any(numeric):
        return [str(w) for w in words], None
    if len(words) % 2 or not all(numeric[0::2]) or any(numeric[1::2]):
        raise DataError(f"data.path: expected one prefix, or weights and prefixes alternating "
                        f"(`0.7 data/a 0.3 data/b`), got {' '.join(map(str, words))}")
    weights = [float(w) for w in words[0::2]]
    if any(w < 0 or math.isnan(w) for w in weights) or sum(weights) <= 0:
        raise DataError(f"data.path: weights must be non-negative and not all zero, got {weights}")
    total = sum(weights)
    return [str(w) for w in words[1::2]], [w / total for w in weights]


def parse_split(split: str | Sequence[float]) -> list[float]:
    """"949,50,1" -> normalised [train, valid, test] weights (missing trailing entries are 0)."""
    if isinstance(split, str):
        parts = [p for p in re.split(r"[,/\s]+", split.strip()) if p]
        try:
            values = [float(p) for p in parts]
        except ValueError:
            raise DataError(f"data.split `{split}`: expected up to three numbers like `949,50,1`") from None
    else:
        values = [float(v) for v in split]
    if not 1 <= len(values) <= 3 or any(v < 0 for v in values) or sum(values) <= 0:
        raise DataError(f"data.split `{split}`: expected one to three non-negative weights, not all zero")
    values += [0.0] * (3 - len(values))
    total = sum(values)
    return [v / total for v in values]


def split_ranges(num_items: int, weights: Sequence[float]) -> list[tuple[int, int] | None]:
    """[begin, end) of each split over num_items, rounded at the cumulative book-ends as Megatron
    does; None for a split with zero weight."""
    bounds = np.cumsum([0.0, *weights])
    out: list[tuple[int, int] | None] = []
    for i, w in enumerate(weights):
        if w <= 0:
            out.append(None)
            continue
        out.append((int(round(bounds[i] * num_items)), int(round(bounds[i + 1] * num_items))))
    return out


def blend_sizes(size: int, weights: Sequence[float]) -> list[int]:
    """Samples to build from each dataset for a blend of `size`: its share plus a small surplus."""
    return [int(math.ceil(math.ceil(size * w) * (1 + BLEND_SURPLUS))) for w in weights]


def build_blending_indices(weights: Sequence[float], size: int) -> tuple[np.ndarray, np.ndarray]:
    """(dataset of each sample, that dataset's running sample number), greedily as Megatron does:
    sample i goes to the dataset maximising weight * max(i, 1) - samples it already has."""
    w = [float(x) for x in weights]
    n = len(w)
    counts = [0] * n
    dataset_index = np.empty(size, dtype=np.int16)
    sample_index = np.empty(size, dtype=np.int64)
    for i in range(size):
        scale = float(max(i, 1))
        best, best_err = 0, w[0] * scale - counts[0]
        for d in range(1, n):
            err = w[d] * scale - counts[d]
            if err > best_err:  # strict: ties go to the lower dataset, as in Megatron
                best, best_err = d, err
        dataset_index[i] = best
        sample_index[i] = counts[best]
        counts[best] += 1
    return dataset_index, sample_index


class BlendedDataset:
    """`size` samples drawn from `datasets` in the proportions `weights` (deterministic)."""

    def __init__(self, datasets: Sequence, weights: Sequence[float], size: int, split: str = "train",
                 cache_dir: str | os.PathLike | None = None, names: Sequence[str] | None = None):
        if len(datasets) != len(weights) or not datasets:
            raise DataError("a blend needs one weight per dataset")
        if len(datasets) > np.iinfo(np.int16).max:
            raise DataError(f"a blend of {len(datasets)} datasets is more than {np.iinfo(np.int16).max}")
        self.datasets, self.weights, self.size = list(datasets), [float(w) for w in weights], int(size)
        desc = {"class": "BlendedDataset", "weights": self.weights, "size": self.size, "split": split,
                "datasets": list(names) if names else [len(d) for d in datasets]}
        self.dataset_index, self.dataset_sample_index = cached_arrays(
            cache_dir, "BlendedDataset", split, desc, ("dataset_index", "dataset_sample_index"),
            lambda: build_blending_indices(self.weights, self.size))
        for d, ds in enumerate(self.datasets):
            used = int(np.count_nonzero(self.dataset_index == d))
            if used > len(ds):
                raise DataError(f"blend: dataset {d} ({names[d] if names else ''}) has {len(ds)} samples, "
                                f"the blend needs {used}; build it with more samples")

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, idx: int) -> dict:
        d = int(self.dataset_index[idx])
        item = dict(self.datasets[d][int(self.dataset_sample_index[idx])])
        item["dataset_id"] = np.array(d, dtype=np.int64)
        return item
