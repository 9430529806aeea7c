"""ParallelContext: the degrees of parallelism, this rank's coordinates and its process groups.

Rank order (as Megatron-LM's default): tensor-parallel fastest, then data-parallel, then
pipeline-parallel, so

    rank = tp_rank + tp * (dp_rank + dp * pp_rank)

The tp ranks of one model slice are neighbours (on one node, where NVLink is), and the pp stages
are the slowest-varying coordinate. The context is built once and passed to every layer that
communicates; nothing in megazoo keeps a process group at module level.
"""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass, field

import torch
import torch.distributed as dist

from megazoo.core.parallel.device import pick_backend, pick_device


class ParallelConfigError(ValueError):
    """A parallel layout that cannot work, with the numbers that make it so."""


@dataclass
class ParallelConfig:
    """Degrees of parallelism. dp is derived from the world size: world = tp * pp * dp."""

    tp: int = 1
    pp: int = 1
    vpp: int = 1  # virtual pipeline stages (model chunks) per pp rank
    sp: bool = False  # sequence parallelism inside the tp group
    cp: int = 1  # context parallelism: reserved, must be 1 for now

    def validate(self, world_size: int) -> int:
        """Check the degrees against `world_size` and return dp; raise ParallelConfigError."""
        for name in ("tp", "pp", "vpp", "cp"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ParallelConfigError(f"parallel.{name} must be a positive integer, got {value!r}")
        if self.cp != 1:
            raise ParallelConfigError("parallel.cp (context parallelism) is reserved and must be 1")
        if world_size % (self.tp * self.pp) != 0:
            raise ParallelConfigError(
                f"world size {world_size} is not divisible by tp x pp = {self.tp} x {self.pp} = "
                f"{self.tp * self.pp}; choose degrees whose product divides the number of ranks"
            )
        if self.sp and self.tp == 1:
            raise ParallelConfigError(
                "parallel.sp=true needs parallel.tp > 1: sequence parallelism splits the sequence "
                "across the tensor-parallel group, which has one rank here; set parallel.sp=false"
            )
        if self.vpp > 1 and self.pp == 1:
            raise ParallelConfigError("parallel.vpp > 1 needs parallel.pp > 1 (interleaving needs a pipeline)")
        return world_size // (self.tp * self.pp)


@dataclass
class ParallelContext:
    """This rank's place in the (tp, dp, pp) grid and the groups it talks over.

    Groups are None when the world has a single process; collectives then become identities.
    """

    tp: int = 1
    pp: int = 1
    dp: int = 1
    vpp: int = 1
    sp: bool = False
    rank: int = 0
    world_size: int = 1
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    backend: str = "gloo"
    tp_group: object = None
    pp_group: object = None
    dp_group: object = None
    mp_group: object = None  # tp x pp: the ranks holding one full model replica
    embedding_group: object = None  # first and last pp stage of this pipeline (tied embeddings)
    pp_ranks: tuple = (0,)  # global ranks of this rank's pipeline, stage order
    dp_ranks: tuple = (0,)
    tp_ranks: tuple = (0,)

    # coordinates --------------------------------------------------------------------------
    @property
    def tp_rank(self) -> int:
        return self.rank % self.tp

    @property
    def dp_rank(self) -> int:
        return (self.rank // self.tp) % self.dp

    @property
    def pp_rank(self) -> int:
        return self.rank // (self.tp * self.dp)

    @property
    def is_first_stage(self) -> bool:
        return self.pp_rank == 0

    @property
    def is_last_stage(self) -> bool:
        return self.pp_rank == self.pp - 1

    @property
    def is_distributed(self) -> bool:
        return self.world_size > 1

    def rank_of(self, tp_rank: int, dp_rank: int, pp_rank: int) -> int:
        return tp_rank + self.tp * (dp_rank + self.dp * pp_rank)

    def describe(self) -> str:
        return (f"rank {self.rank}/{self.world_size}: tp {self.tp_rank}/{self.tp}, dp {self.dp_rank}/{self.dp}, "
                f"pp {self.pp_rank}/{self.pp}" + (f" x vpp {self.vpp}" if self.vpp > 1 else "")
                + (", sp" if self.sp else "") + f", {self.backend} on {self.device}")

    # construction ---------------------------------------------------------------------------
    @classmethod
    def single(cls, device: torch.device | None = None) -> "ParallelContext":
        """One process, no communication."""
        return cls(device=device or pick_device(), backend=pick_backend())

    @classmethod
    def build(cls, config: ParallelConfig | None = None, device: torch.device | None = None,
              timeout_s: float | None = None) -> "ParallelContext":
        """Build the context for this rank; torch.distributed must be initialised when world > 1.

        Every rank creates every group in the same order, as torch.distributed requires. Each group
        gets the same timeout as the world (MEGAZOO_DIST_TIMEOUT, default 600 s), so a stuck rank in
        any group is reported instead of hanging for gloo's default 30 minutes.
        """
        config = config or ParallelConfig()
        world = dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1
        rank = dist.get_rank() if world > 1 else 0
        dp = config.validate(world)
        ctx = cls(tp=config.tp, pp=config.pp, dp=dp, vpp=config.vpp, sp=config.sp, rank=rank,
                  world_size=world, device=device or pick_device(), backend=pick_backend())
        if world == 1:
            return ctx
        tp, pp = config.tp, config.pp
        timeout = datetime.timedelta(seconds=timeout_s or float(os.environ.get("MEGAZOO_DIST_TIMEOUT", "600")))

        def new_group(ranks):
            return dist.new_group(ranks, timeout=timeout)

        for p in range(pp):  # tp groups: consecutive ranks
            for d in range(dp):
                ranks = [ctx.rank_of(t, d, p) for t in range(tp)]
                group = new_group(ranks)
                if rank in ranks:
                    ctx.tp_group, ctx.tp_ranks = group, tuple(ranks)
        for p in range(pp):  # dp groups
            for t in range(tp):
                ranks = [ctx.rank_of(t, d, p) for d in range(dp)]
                group = new_group(ranks)
                if rank in ranks:
                    ctx.dp_group, ctx.dp_ranks = group, tuple(ranks)
        for d in range(dp):  # pp groups, and the embedding group of each pipeline
            for t in range(tp):
                ranks = [ctx.rank_of(t, d, p) for p in range(pp)]
                group = new_group(ranks)
                emb_ranks = sorted({ranks[0], ranks[-1]})
                emb_group = new_group(emb_ranks)
                if rank in ranks:
                    ctx.pp_group, ctx.pp_ranks = group, tuple(ranks)
                if rank in emb_ranks:
                    ctx.embedding_group = emb_group
        for d in range(dp):  # model-parallel groups: one full replica
            ranks = [ctx.rank_of(t, d, p) for p in range(pp) for t in range(tp)]
            group = new_group(sorted(ranks))
            if rank in ranks:
                ctx.mp_group = group
        return ctx


def init_distributed(timeout_s: float | None = None) -> tuple[int, int]:
    """Initialise torch.distributed from the torchrun environment (RANK, WORLD_SIZE, MASTER_*).

    Returns (rank, world_size). A stuck collective raises after `timeout_s` (MEGAZOO_DIST_TIMEOUT,
    default 600 s) instead of hanging forever.
    """
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if world > 1 and not dist.is_initialized():
        timeout_s = timeout_s or float(os.environ.get("MEGAZOO_DIST_TIMEOUT", "600"))
        backend = pick_backend()
        kwargs = {}
        if backend == "nccl":
            kwargs["device_id"] = pick_device()
            torch.cuda.set_device(kwargs["device_id"])
        dist.init_process_group(backend, rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=timeout_s), **kwargs)
    return rank, world
