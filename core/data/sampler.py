"""Data-parallel sampling: disjoint micro-batches per DP rank, resumable at consumed samples.

As Megatron's pretraining sampler: the samples from `consumed_samples` on are taken in order in
groups of micro_batch * dp_size; DP rank r gets the r-th micro_batch slice of each group. So the
ranks never share a sample, the union over ranks of one step is a contiguous range, and resuming
a run at the checkpoint's consumed_samples continues exactly where it stopped (for any micro-batch
size or DP size, as long as the global order is the same). The datasets are already shuffled.
"""

from __future__ import annotations

from typing import Iterator, Mapping, Sequence

import numpy as np

from megazoo.core.data.errors import DataError


class DistributedBatchSampler:
    """Yields lists of sample indices, one micro-batch of this DP rank per step.

    `loop=True` wraps around at the end of the dataset (for validation iterators that run longer
    than one pass); indices then continue modulo total_samples.
    """

    def __init__(self, total_samples: int, consumed_samples: int, micro_batch: int, dp_rank: int,
                 dp_size: int, drop_last: bool = True, loop: bool = False):
        if total_samples <= 0:
            raise DataError(f"sampler: the dataset has no samples (total_samples={total_samples})")
        if micro_batch < 1 or dp_size < 1:
            raise DataError(f"sampler: micro_batch ({micro_batch}) and dp_size ({dp_size}) must be >= 1")
        if not 0 <= dp_rank < dp_size:
            raise DataError(f"sampler: dp_rank {dp_rank} outside 0..{dp_size - 1}")
        if consumed_samples < 0 or (not loop and consumed_samples > total_samples):
            raise DataError(f"sampler: consumed_samples {consumed_samples} outside 0..{total_samples}; "
                            f"the checkpoint was made with more data than this dataset has")
        if loop and total_samples < micro_batch * dp_size:
            raise DataError(f"sampler: {total_samples} samples cannot fill one step of "
                            f"{micro_batch} x {dp_size} samples")
        self.total, self.consumed = total_samples, consumed_samples
        self.micro_batch, self.dp_rank, self.dp_size = micro_batch, dp_rank, dp_size
        self.drop_last, self.loop = drop_last, loop

    @property
    def step_size(self) -> int:
        """Samples consumed by all DP ranks together per micro-batch step."""
        return self.micro_batch * self.dp_size

    def __len__(self) -> int:
        """Micro-batches this rank yields (steps left); infinite when looping."""
        if self.loop:
            raise TypeError("a looping sampler has no length")
        left = self.total - self.consumed
        return left // self.step_size if self.drop_last else -(-left // self.step_size)

    def __iter__(self) -> Iterator[list[int]]:
        lo = self.dp_rank * self.micro_batch
        start = self.consumed
        while True:
            if not self.loop and start >= self.total:
                return
            end = start + self.step_size
            if not self.loop and end > self.total:
                if self.drop_last:
                    return
                # the last partial group, split between ranks the same way
                part = list(range(start, self.total))[lo:lo + self.micro_batch]
                if part:
                    yield part
                return
            yield [(i % self.total) for i in range(start + lo, start + lo + self.micro_batch)]
            start = end


def collate(items: Sequence[Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Stack a list of sample dicts into one dict of [batch, ...] int64 arrays."""
    return {key: np.stack([np.asarray(item[key]) for item in items]) for key in items[0]}


def micro_batches(dataset, micro_batch: int, dp_rank: int = 0, dp_size: int = 1, consumed_samples: int = 0,
                  loop: bool = False, as_torch: bool = False) -> Iterator[dict]:
    """This DP rank's micro-batches of `dataset` from `consumed_samples` on, collated.

    With as_torch=True the arrays become torch tensors (zero-copy from the collated arrays).
    """
    sampler = DistributedBatchSampler(len(dataset), consumed_samples, micro_batch, dp_rank, dp_size,
                                      drop_last=True, loop=loop)
    for indices in sampler:
        batch = collate([dataset[i] for i in indices])
        if as_torch:
            import torch

            batch = {k: torch.from_numpy(v) for k, v in batch.items()}
        yield batch
