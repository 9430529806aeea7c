"""The load-balanced split of a sequence over the context-parallel group (Megatron-LM's
get_batch_on_this_cp_rank).

The sequence is cut into 2 x cp equal chunks; cp rank r holds chunks r and 2cp-1-r, one early and
one late, so that under a causal mask every rank has the same amount of attention work. Every
tensor of a micro-batch with a sequence dimension (dim 1 of the length of input_ids: tokens, labels,
loss mask, position ids) is split the same way; per-sample tensors (e.g. a sentence label [b]) are
left whole. Position ids, when the micro-batch has none, are the chunks' global positions
(`cp_positions`), which the models use for rotary angles and learned position embeddings.
"""

from __future__ import annotations

import torch


class ContextParallelError(ValueError):
    """A sequence or micro-batch that the cp split cannot take."""


def check_divisible(seq_length: int, cp: int, what: str = "model.seq_length") -> None:
    if seq_length % (2 * cp):
        raise ContextParallelError(
            f"{what}={seq_length} cannot be split into 2 x parallel.cp = {2 * cp} equal chunks (context "
            f"parallelism gives each cp rank one early and one late chunk); use a sequence length that is a "
            f"multiple of {2 * cp}, or a parallel.cp that divides {seq_length} / 2")


def chunk_index(seq: int, cp: int, cp_rank: int, device=None) -> torch.Tensor:
    """Global positions [2 * seq / (2cp)] of cp rank `cp_rank`'s two chunks, in local order."""
    check_divisible(seq, cp, "sequence length")
    c = seq // (2 * cp)
    first = torch.arange(cp_rank * c, (cp_rank + 1) * c, device=device)
    last = torch.arange((2 * cp - 1 - cp_rank) * c, (2 * cp - cp_rank) * c, device=device)
    return torch.cat([first, last])


def cp_positions(local: int, cp: int, cp_rank: int, device=None) -> torch.Tensor:
    """The global positions of a local sequence of length `local` (two chunks) on cp rank `cp_rank`."""
    return chunk_index(local * cp, cp, cp_rank, device)


def split_batch(mb: dict, cp: int, cp_rank: int) -> dict:
    """This cp rank's part of a micro-batch: every [b, s, ...] tensor cut to its two chunks."""
    if cp == 1:
        return mb
    ids = mb.get("input_ids")
    if ids is None or ids.dim() != 2:
        raise ContextParallelError(
            f"parallel.cp={cp} needs micro-batches with input_ids of shape [batch, sequence]; got "
            f"{'no input_ids' if ids is None else f'input_ids of shape {tuple(ids.shape)}'}: this model or task "
            "cannot be split over the sequence yet; set parallel.cp=1")
    seq = ids.shape[1]
    index = chunk_index(seq, cp, cp_rank, ids.device)
    out = {}
    for key, value in mb.items():
        split = torch.is_tensor(value) and value.dim() >= 2 and value.shape[1] == seq
        out[key] = value.index_select(1, index) if split else value
    return out
