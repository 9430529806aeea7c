"""The (tp, cp, dp, pp) grid with ep inside dp: documented rank order, and every group holds exactly
the ranks its docstring names (checked against the group membership torch.distributed reports)."""

import pytest
import torch.distributed as dist

from megazoo.core.parallel.context import ParallelConfig, ParallelConfigError, ParallelContext
from megazoo.core.parallel.launch import spawn


def _members(group) -> tuple:
    return tuple(sorted(dist.get_process_group_ranks(group))) if group is not None else None


def _groups(tp, cp, pp, ep):
    ctx = ParallelContext.build(ParallelConfig(tp=tp, cp=cp, pp=pp, ep=ep))
    return {"coords": (ctx.tp_rank, ctx.cp_rank, ctx.dp_rank, ctx.pp_rank, ctx.ep_rank, ctx.expert_dp_rank),
            "rank": ctx.rank, "dp": ctx.dp,
            "tp": _members(ctx.tp_group), "cp": _members(ctx.cp_group), "dp_g": _members(ctx.dp_group),
            "dp_cp": _members(ctx.dp_cp_group), "ep": _members(ctx.ep_group),
            "expert_dp": _members(ctx.expert_dp_group), "pp": _members(ctx.pp_group),
            "expert_dp_ranks_index": (sorted(dist.get_process_group_ranks(ctx.expert_dp_group)).index(ctx.rank)
                                      if ctx.expert_dp_group is not None else None)}


def _expected(rank, tp, cp, dp, pp, ep):
    def r(t, c, d, p):
        return t + tp * (c + cp * (d + dp * p))
    t, c, d, p = rank % tp, (rank // tp) % cp, (rank // (tp * cp)) % dp, rank // (tp * cp * dp)
    e = d % ep
    return {
        "coords": (t, c, d, p, e, (d // ep) * cp + c),
        "tp": tuple(sorted(r(x, c, d, p) for x in range(tp))),
        "cp": tuple(sorted(r(t, x, d, p) for x in range(cp))),
        "dp_g": tuple(sorted(r(t, c, x, p) for x in range(dp))),
        "dp_cp": tuple(sorted(r(t, y, x, p) for x in range(dp) for y in range(cp))),
        "ep": tuple(sorted(r(t, c, x, p) for x in range(d - e, d - e + ep))),
        "expert_dp": tuple(sorted(r(t, y, x, p) for x in range(e, dp, ep) for y in range(cp))),
        "pp": tuple(sorted(r(t, c, d, x) for x in range(pp))),
    }


LAYOUTS = [(1, 2, 1, 2, 8), (2, 2, 2, 1, 8), (1, 1, 1, 2, 4)]  # tp, cp, pp, ep, world


def _all_groups(layouts: list) -> list:
    return [_groups(*layout) for layout in layouts]  # new groups per layout


@pytest.fixture(scope="module")
def groups() -> dict:
    """(tp, cp, pp, ep, world) -> each rank's _groups; the layouts of one world size in one spawn."""
    out = {}
    for world in sorted({layout[-1] for layout in LAYOUTS}):
        layouts = [layout[:4] for layout in LAYOUTS if layout[-1] == world]
        per_rank = spawn(_all_groups, world, layouts)
        for i, layout in enumerate(layouts):
            out[(*layout, world)] = [r[i] for r in per_rank]
    return out


@pytest.mark.parametrize("tp,cp,pp,ep,world", LAYOUTS)
def test_groups_follow_the_documented_rank_order(tp, cp, pp, ep, world, groups):
    results = groups[(tp, cp, pp, ep, world)]
    assert len(results) == world
    for rank, got in enumerate(results):
        dp = got["dp"]
        want = _expected(rank, tp, cp, dp, pp, ep)
        assert got["rank"] == rank and got["coords"] == want["coords"]
        assert got["tp"] == want["tp"] and got["dp_g"] == want["dp_g"] and got["pp"] == want["pp"]
        assert got["dp_cp"] == want["dp_cp"]
        assert got["cp"] == (want["cp"] if cp > 1 else None)
        assert got["ep"] == (want["ep"] if ep > 1 else None)
        assert got["expert_dp"] == want["expert_dp"]
        # expert_dp_rank is this rank's index in its expert-dp group (the distributed optimizer's shard)
        assert got["expert_dp_ranks_index"] == want["coords"][5]


def test_world_not_divisible_by_tp_cp_pp():
    with pytest.raises(ParallelConfigError, match=r"not divisible by tp x cp x pp = 2 x 2 x 1 = 4"):
        ParallelConfig(tp=2, cp=2).validate(6)


def test_ep_must_divide_data_parallel():
    with pytest.raises(ParallelConfigError, match=r"parallel.ep=3 must divide the data-parallel size 4"):
        ParallelConfig(ep=3).validate(4)
    assert ParallelConfig(cp=2, ep=2).validate(8) == 4


def test_single_process_coordinates():
    ctx = ParallelContext(cp=2, ep=2, dp=2, pp=2, rank=5, world_size=8, tp=1)
    assert (ctx.cp_rank, ctx.dp_rank, ctx.pp_rank, ctx.ep_rank, ctx.expert_dp_rank) == (1, 0, 1, 0, 1)
    assert ctx.rank_of(0, 0, 1, 1) == 5 and ctx.dp_cp == 4 and ctx.expert_dp == 2
