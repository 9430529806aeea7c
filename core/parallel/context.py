"""ParallelContext: the degrees of parallelism, this rank's coordinates and its process groups.

Rank order (as Megatron-LM's default "tp-cp-ep-dp-pp"): tensor-parallel fastest, then
context-parallel, then data-parallel, then pipeline-parallel, so

    rank = tp_rank + tp * (cp_rank + cp * (dp_rank + dp * pp_rank))

The tp ranks of one model slice are neighbours (on one node, where NVLink is), the cp ranks next
(the ring of key/value exchanges), and the pp stages are the slowest-varying coordinate. Expert
parallelism is carved out of the data-parallel ranks: ep consecutive dp ranks form an expert group
(ep_rank = dp_rank % ep), and the expert-data-parallel group of an expert's weights is the ranks
with the same (tp, pp, ep_rank) over the remaining dp / ep data-parallel ranks and every cp rank.

Gradients of dense parameters are reduced over `dp_cp_group` (dp x cp: the cp ranks see different
tokens of the same samples); those of expert parameters over `expert_dp_group`. The context is built once and passed to every
layer that communicates; nothing in megazoo keeps a process group at module level.
"""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass, field

import torch
import torch.distributed as dist

from megazoo.core.parallel.device import pick_backend, pick_device


SHARD_MODES = ("none", "optimizer", "grads", "full")  # parallel.shard (core/optim/buffers.py uses the same)


class ParallelConfigError(ValueError):
    """A parallel layout that cannot work, with the numbers that make it so."""


@dataclass
class ParallelConfig:
    """Degrees of parallelism. dp is derived from the world size: world = tp * cp * pp * dp."""

    tp: int = 1
    pp: int = 1
    vpp: int = 1  # virtual pipeline stages (model chunks) per pp rank
    sp: bool = False  # sequence parallelism inside the tp group
    cp: int = 1  # context parallelism: the sequence split over cp ranks (ring attention)
    ep: int = 1  # expert parallelism: MoE experts split over ep of the data-parallel ranks
    # what data parallelism shards (ZeRO's stages): none | optimizer (ZeRO-1, as optim.distributed=true)
    # | grads (ZeRO-2: and the gradients) | full (ZeRO-3: and the weights, gathered layer by layer)
    shard: str = "none"
    shard_prefetch: bool = True  # shard=full: gather the next layer's weights while this one computes

    def validate(self, world_size: int) -> int:
        """Check the degrees against `world_size` and return dp; raise ParallelConfigError."""
        for name in ("tp", "pp", "vpp", "cp", "ep"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ParallelConfigError(f"parallel.{name} must be a positive integer, got {value!r}")
        model = self.tp * self.cp * self.pp
        if world_size % model != 0:
            raise ParallelConfigError(
                f"world size {world_size} is not divisible by tp x cp x pp = {self.tp} x {self.cp} x {self.pp} = "
                f"{model}; choose degrees whose product divides the number of ranks"
            )
        dp = world_size // model
        if dp % self.ep != 0:
            raise ParallelConfigError(
                f"parallel.ep={self.ep} must divide the data-parallel size {dp} (world {world_size} = tp {self.tp} x "
                f"cp {self.cp} x pp {self.pp} x dp {dp}): expert parallelism is carved out of the data-parallel ranks"
            )
        if self.sp and self.tp == 1:
            raise ParallelConfigError(
                "parallel.sp=true needs parallel.tp > 1: sequence parallelism splits the sequence "
                "across the tensor-parallel group, which has one rank here; set parallel.sp=false"
            )
        if self.shard not in SHARD_MODES:
            raise ParallelConfigError(f"parallel.shard must be one of {', '.join(SHARD_MODES)}, got {self.shard!r} "
                                      f"(optimizer: ZeRO-1, grads: ZeRO-2, full: ZeRO-3)")
        if self.vpp > 1 and self.pp == 1:
            raise ParallelConfigError("parallel.vpp > 1 needs parallel.pp > 1 (interleaving needs a pipeline)")
        return dp


@dataclass
class ParallelContext:
    """This rank's place in the (tp, cp, dp, pp) grid (ep inside dp) and the groups it talks over.

    Groups are None when the world has a single process; collectives then become identities.
    """

    tp: int = 1
    pp: int = 1
    dp: int = 1
    vpp: int = 1
    sp: bool = False
    cp: int = 1
    ep: int = 1
    rank: int = 0
    world_size: int = 1
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    backend: str = "gloo"
    tp_group: object = None
    pp_group: object = None
    dp_group: object = None
    cp_group: object = None  # the ring of ranks holding the chunks of one sequence
    dp_cp_group: object = None  # dp x cp: where dense gradients are reduced (dp_group when cp = 1)
    ep_group: object = None  # ep consecutive dp ranks that exchange tokens for their experts
    expert_dp_group: object = None  # same (tp, pp, ep_rank), every cp rank: where expert gradients are reduced
    mp_group: object = None  # tp x pp: the ranks holding one full model replica
    embedding_group: object = None  # first and last pp stage of this pipeline (tied embeddings)
    pp_ranks: tuple = (0,)  # global ranks of this rank's pipeline, stage order
    dp_ranks: tuple = (0,)
    tp_ranks: tuple = (0,)
    cp_ranks: tuple = (0,)
    ep_ranks: tuple = (0,)

    # coordinates --------------------------------------------------------------------------
    @property
    def tp_rank(self) -> int:
        return self.rank % self.tp

    @property
    def cp_rank(self) -> int:
        return (self.rank // self.tp) % self.cp

    @property
    def dp_rank(self) -> int:
        return (self.rank // (self.tp * self.cp)) % self.dp

    @property
    def pp_rank(self) -> int:
        return self.rank // (self.tp * self.cp * self.dp)

    @property
    def ep_rank(self) -> int:
        return self.dp_rank % self.ep

    @property
    def expert_dp_rank(self) -> int:
        """This rank's place in expert_dp_group: (dp_rank // ep) x cp + cp_rank."""
        return (self.dp_rank // self.ep) * self.cp + self.cp_rank

    @property
    def dp_cp(self) -> int:
        """The number of ranks dense gradients are reduced over."""
        return self.dp * self.cp

    @property
    def dp_cp_rank(self) -> int:
        return self.dp_rank * self.cp + self.cp_rank

    @property
    def expert_dp(self) -> int:
        """The number of ranks an expert's gradients are reduced over."""
        return self.dp // self.ep * self.cp

    @property
    def is_first_stage(self) -> bool:
        return self.pp_rank == 0

    @property
    def is_last_stage(self) -> bool:
        return self.pp_rank == self.pp - 1

    @property
    def is_distributed(self) -> bool:
        return self.world_size > 1

    def rank_of(self, tp_rank: int, dp_rank: int, pp_rank: int, cp_rank: int = 0) -> int:
        return tp_rank + self.tp * (cp_rank + self.cp * (dp_rank + self.dp * pp_rank))

    def describe(self) -> str:
        return (f"rank {self.rank}/{self.world_size}: tp {self.tp_rank}/{self.tp}, "
                + (f"cp {self.cp_rank}/{self.cp}, " if self.cp > 1 else "")
                + f"dp {self.dp_rank}/{self.dp}" + (f" (ep {self.ep_rank}/{self.ep})" if self.ep > 1 else "")
                + f", pp {self.pp_rank}/{self.pp}" + (f" x vpp {self.vpp}" if self.vpp > 1 else "")
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
        ctx = cls(tp=config.tp, pp=config.pp, dp=dp, vpp=config.vpp, sp=config.sp, cp=config.cp, ep=config.ep,
                  rank=rank, world_size=world, device=device or pick_device(), backend=pick_backend())
        if world == 1:
            return ctx
        tp, pp, cp, ep = config.tp, config.pp, config.cp, config.ep
        timeout = datetime.timedelta(seconds=timeout_s or float(os.environ.get("MEGAZOO_DIST_TIMEOUT", "600")))

        def new_group(ranks):
            return dist.new_group(ranks, timeout=timeout)

        grid = [(p, d, c) for p in range(pp) for d in range(dp) for c in range(cp)]
        for p, d, c in grid:  # tp groups: consecutive ranks
            ranks = [ctx.rank_of(t, d, p, c) for t in range(tp)]
            group = new_group(ranks)
            if rank in ranks:
                ctx.tp_group, ctx.tp_ranks = group, tuple(ranks)
        for p in range(pp):  # cp groups: the ring of one sequence's chunks
            for d in range(dp):
                for t in range(tp):
                    ranks = [ctx.rank_of(t, d, p, c) for c in range(cp)]
                    group = new_group(ranks) if cp > 1 else None
                    if rank in ranks:
                        ctx.cp_group, ctx.cp_ranks = group, tuple(ranks)
        for p in range(pp):  # dp groups
            for c in range(cp):
                for t in range(tp):
                    ranks = [ctx.rank_of(t, d, p, c) for d in range(dp)]
                    group = new_group(ranks)
                    if rank in ranks:
                        ctx.dp_group, ctx.dp_ranks = group, tuple(ranks)
        for p in range(pp):  # dp x cp groups (dense gradients); the dp group itself when cp = 1
            for t in range(tp):
                ranks = [ctx.rank_of(t, d, p, c) for d in range(dp) for c in range(cp)]
                group = new_group(ranks) if cp > 1 else None
                if rank in ranks:
                    ctx.dp_cp_group = group if cp > 1 else ctx.dp_group
        for p in range(pp):  # ep groups (consecutive dp ranks) and expert-dp groups
            for c in range(cp):
                for t in range(tp):
                    for first in range(0, dp, ep):
                        ranks = [ctx.rank_of(t, d, p, c) for d in range(first, first + ep)]
                        group = new_group(ranks) if ep > 1 else None
                        if rank in ranks:
                            ctx.ep_group, ctx.ep_ranks = group, tuple(ranks)
            for t in range(tp):
                for e in range(ep):
                    ranks = sorted(ctx.rank_of(t, d, p, c) for d in range(e, dp, ep) for c in range(cp))
                    group = new_group(ranks) if ep > 1 else None
                    if rank in ranks:
                        ctx.expert_dp_group = group if ep > 1 else ctx.dp_cp_group
        for d in range(dp):  # pp groups, and the embedding group of each pipeline
            for c in range(cp):
                for t in range(tp):
                    ranks = [ctx.rank_of(t, d, p, c) for p in range(pp)]
                    group = new_group(ranks)
                    emb_ranks = sorted({ranks[0], ranks[-1]})
                    emb_group = new_group(emb_ranks)
                    if rank in ranks:
                        ctx.pp_group, ctx.pp_ranks = group, tuple(ranks)
                    if rank in emb_ranks:
                        ctx.embedding_group = emb_group
        for d in range(dp):  # model-parallel groups: one full replica
            for c in range(cp):
                ranks = [ctx.rank_of(t, d, p, c) for p in range(pp) for t in range(tp)]
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
