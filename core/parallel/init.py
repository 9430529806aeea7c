"""Weight initialisation that is independent of the parallel layout.

Every parameter is drawn in full (its "master" shape) from a generator seeded by the run seed and
the parameter's name, then this rank keeps its tensor-parallel slice. A TP=N model therefore holds
exactly the slices of the TP=1 model of the same seed, and a pipeline stage the same layers as the
whole model (layer names carry global indices).

Layers describe their parameters with attributes set at construction:
  tp_dim      the dimension split across tp ranks, or None when replicated
  init        ("normal", std) | ("zeros",) | ("ones",)
  vocab_rows  for vocabulary-padded tables: the real number of rows (the rest are zero padding)
  ep_dim, ep, ep_rank   MoE expert weights (describe_expert): the expert dimension, split in
              consecutive blocks over the ep ranks, so expert e is the same tensor at every ep and tp
"""

from __future__ import annotations

import zlib

import torch
from torch import nn


def describe(param: nn.Parameter, init: tuple, tp_dim: int | None = None, vocab_rows: int | None = None,
             init_name: str | None = None) -> nn.Parameter:
    """Attach init metadata; `init_name` draws the master under another parameter's name (a
    tied copy on another pipeline stage starts equal to the original)."""
    param.init = init
    param.tp_dim = tp_dim
    param.vocab_rows = vocab_rows
    param.init_name = init_name
    return param


def describe_expert(param: nn.Parameter, init: tuple, tp_dim: int | None, ctx) -> nn.Parameter:
    """Expert weights: dimension 0 is the expert, this rank holds block ctx.ep_rank of ctx.ep; their
    gradients are reduced over the expert-data-parallel group (`expert`)."""
    describe(param, init, tp_dim)
    param.ep_dim, param.ep, param.ep_rank = 0, ctx.ep, ctx.ep_rank
    param.expert = True
    return param


def master_tensor(name: str, shape: tuple[int, ...], init: tuple, seed: int) -> torch.Tensor:
    kind = init[0]
    if kind == "zeros":
        return torch.zeros(shape)
    if kind == "ones":
        return torch.ones(shape)
    if kind == "normal":
        g = torch.Generator().manual_seed((seed * 1_000_003 + zlib.crc32(name.encode())) % (2**63))
        return torch.randn(shape, generator=g) * init[1]
    raise ValueError(f"unknown init {init!r} for parameter {name}")


def local_slice(master: torch.Tensor, param: nn.Parameter, tp: int, tp_rank: int) -> torch.Tensor:
    """Pad a vocabulary table to the padded size, then keep this rank's tp slice."""
    tp_dim = getattr(param, "tp_dim", None)
    if getattr(param, "vocab_rows", None) is not None:
        padded_rows = param.shape[0] * (tp if tp_dim == 0 else 1)
        pad = torch.zeros((padded_rows - master.shape[0],) + tuple(master.shape[1:]), dtype=master.dtype)
        master = torch.cat([master, pad], 0)
    ep_dim = getattr(param, "ep_dim", None)
    if ep_dim is not None and param.ep > 1:
        master = master.chunk(param.ep, dim=ep_dim)[param.ep_rank]
    if tp_dim is None or tp == 1:
        return master
    return master.chunk(tp, dim=tp_dim)[tp_rank]


def master_shape(param: nn.Parameter, tp: int) -> tuple[int, ...]:
    shape = list(param.shape)
    tp_dim = getattr(param, "tp_dim", None)
    if tp_dim is not None:
        shape[tp_dim] *= tp
    if getattr(param, "vocab_rows", None) is not None:
        shape[0] = param.vocab_rows
    if getattr(param, "ep_dim", None) is not None:
        shape[param.ep_dim] *= param.ep
    return tuple(shape)


@torch.no_grad()
def initialize(module: nn.Module, seed: int, tp: int = 1, tp_rank: int = 0) -> None:
    """Initialise every described parameter of `module` (meta tensors are left alone)."""
    for name, param in module.named_parameters():
        if param.is_meta or not hasattr(param, "init"):
            continue
        name = getattr(param, "init_name", None) or name
        master = master_tensor(name, master_shape(param, tp), param.init, seed)
        param.copy_(local_slice(master, param, tp, tp_rank).to(param.dtype))
