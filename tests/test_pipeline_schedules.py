"""Schedule tables against the published schedules, the point-to-point plan under rendezvous
semantics, bubble sizes against theory, and stage splits. Pure Python: no processes."""

import pytest

from megazoo.core.parallel.pipeline import ScheduleError, describe_split, format_table, schedule_table, simulate
from megazoo.core.parallel.pipeline.schedules import comm_plan
from megazoo.core.parallel.pipeline.stages import StageSplitError, chunk_ranges, split_layers


def tables(pp, m, vpp=1, **kw):
    return [format_table(t) for t in schedule_table(pp, m, vpp, **kw)]


# PipeDream-Flush / 1F1B, Narayanan et al. 2021 (Megatron-LM), figure 4 top: 4 devices, 8 micro-batches
# (the figure counts from 1; "F0.3" = forward of chunk 0, micro-batch 3)
ONE_F_ONE_B_4x8 = [
    "F0.0 F0.1 F0.2 F0.3 B0.0 F0.4 B0.1 F0.5 B0.2 F0.6 B0.3 F0.7 B0.4 B0.5 B0.6 B0.7",
    "F0.0 F0.1 F0.2 B0.0 F0.3 B0.1 F0.4 B0.2 F0.5 B0.3 F0.6 B0.4 F0.7 B0.5 B0.6 B0.7",
    "F0.0 F0.1 B0.0 F0.2 B0.1 F0.3 B0.2 F0.4 B0.3 F0.5 B0.4 F0.6 B0.5 F0.7 B0.6 B0.7",
    "F0.0 B0.0 F0.1 B0.1 F0.2 B0.2 F0.3 B0.3 F0.4 B0.4 F0.5 B0.5 F0.6 B0.6 F0.7 B0.7",
]

# interleaved 1F1B, same paper figure 4 bottom: 4 devices, 2 chunks each, 8 micro-batches.
# Warm-up (pp - r - 1) * 2 + (vpp - 1) * pp = 10, 8, 6, 4 forwards; chunks in groups of pp micro-batches
INTERLEAVED_4x2x8 = [
    "F0.0 F0.1 F0.2 F0.3 F1.0 F1.1 F1.2 F1.3 F0.4 F0.5 F0.6 B1.0 F0.7 B1.1 F1.4 B1.2 F1.5 B1.3 F1.6 B0.0 "
    "F1.7 B0.1 B0.2 B0.3 B1.4 B1.5 B1.6 B1.7 B0.4 B0.5 B0.6 B0.7",
    "F0.0 F0.1 F0.2 F0.3 F1.0 F1.1 F1.2 F1.3 F0.4 B1.0 F0.5 B1.1 F0.6 B1.2 F0.7 B1.3 F1.4 B0.0 F1.5 B0.1 "
    "F1.6 B0.2 F1.7 B0.3 B1.4 B1.5 B1.6 B1.7 B0.4 B0.5 B0.6 B0.7",
    "F0.0 F0.1 F0.2 F0.3 F1.0 F1.1 F1.2 B1.0 F1.3 B1.1 F0.4 B1.2 F0.5 B1.3 F0.6 B0.0 F0.7 B0.1 F1.4 B0.2 "
    "F1.5 B0.3 F1.6 B1.4 F1.7 B1.5 B1.6 B1.7 B0.4 B0.5 B0.6 B0.7",
    "F0.0 F0.1 F0.2 F0.3 F1.0 B1.0 F1.1 B1.1 F1.2 B1.2 F1.3 B1.3 F0.4 B0.0 F0.5 B0.1 F0.6 B0.2 F0.7 B0.3 "
    "F1.4 B1.4 F1.5 B1.5 F1.6 B1.6 F1.7 B1.7 B0.4 B0.5 B0.6 B0.7",
]


def test_1f1b_matches_published_table():
    assert tables(4, 8) == ONE_F_ONE_B_4x8


def test_1f1b_small_cases():
    assert tables(2, 3) == ["F0.0 F0.1 B0.0 F0.2 B0.1 B0.2", "F0.0 B0.0 F0.1 B0.1 F0.2 B0.2"]
    # fewer micro-batches than stages: warm-up is cut to m
    assert tables(4, 2)[0] == "F0.0 F0.1 B0.0 B0.1"
    assert tables(4, 2)[3] == "F0.0 B0.0 F0.1 B0.1"


def test_interleaved_matches_published_table():
    assert tables(4, 8, vpp=2) == INTERLEAVED_4x2x8


def test_interleaved_small_cases():
    assert tables(2, 4, vpp=2) == [
        "F0.0 F0.1 F1.0 F1.1 F0.2 B1.0 F0.3 B1.1 F1.2 B0.0 F1.3 B0.1 B1.2 B1.3 B0.2 B0.3",
        "F0.0 F0.1 F1.0 B1.0 F1.1 B1.1 F0.2 B0.0 F0.3 B0.1 F1.2 B1.2 F1.3 B1.3 B0.2 B0.3",
    ]
    # m == pp: every forward first (Megatron-LM's all-warm-up case)
    assert tables(2, 2, vpp=2)[1] == "F0.0 F0.1 F1.0 F1.1 B1.0 B1.1 B0.0 B0.1"


def test_every_action_once_and_forward_before_backward():
    for pp, m, vpp in [(2, 6, 1), (4, 8, 2), (4, 12, 3), (8, 16, 2), (3, 1, 1)]:
        for table in schedule_table(pp, m, vpp):
            f = [a[1:] for a in table if a[0] == "F"]
            b = [a[1:] for a in table if a[0] == "B"]
            assert sorted(f) == sorted(b) == sorted((c, i) for c in range(vpp) for i in range(m))
            assert all(table.index(("F",) + x) < table.index(("B",) + x) for x in f)


def test_forward_only_keeps_forward_order():
    assert tables(2, 4, vpp=2, forward_only=True)[0] == "F0.0 F0.1 F1.0 F1.1 F0.2 F0.3 F1.2 F1.3"


def test_micro_batches_that_do_not_fit_interleaving_fail_clearly():
    with pytest.raises(ScheduleError, match=r"multiple of pp=4, got 6"):
        schedule_table(4, 6, vpp=2)
    with pytest.raises(ScheduleError, match="unknown pipeline schedule"):
        schedule_table(2, 4, kind="zigzag")


@pytest.mark.parametrize("pp", [2, 3, 4, 8])
@pytest.mark.parametrize("vpp", [1, 2, 3])
def test_plans_never_deadlock_and_messages_match(pp, vpp):
    """Under NCCL-like rendezvous (a send completes only when its receive is posted, matched in
    order per pair of ranks) every plan runs to the end and every message is the expected one."""
    for m in range(1, 3 * pp + 1):
        for forward_only in (False, True):
            for kind in ("auto", "gpipe"):
                try:
                    tabs = schedule_table(pp, m, vpp, forward_only, kind)
                except ScheduleError:
                    continue
                simulate(tabs, vpp, paired=(kind == "auto" and vpp > 1))


@pytest.mark.parametrize("pp,vpp,m", [(2, 1, 4), (4, 1, 8), (4, 1, 16), (2, 2, 4), (4, 2, 8), (4, 4, 16), (8, 2, 16)])
def test_ideal_bubble_is_theory(pp, vpp, m):
    """With sends that never wait, the tables reach the bubble (p - 1) / (v * m) exactly
    (forward 1, backward 2 time units per micro-batch and stage)."""
    res = simulate(schedule_table(pp, m, vpp), vpp, rendezvous=False)
    assert res["makespan"] / (3 * m) - 1 == pytest.approx((pp - 1) / (vpp * m))


def test_1f1b_bubble_with_blocking_batches_is_theory():
    for pp, m in [(2, 8), (4, 8), (4, 16)]:
        res = simulate(schedule_table(pp, m), 1)
        assert res["makespan"] / (3 * m) - 1 == pytest.approx((pp - 1) / m)


def test_comm_plan_pairs_steady_state():
    table = schedule_table(2, 4)[0]  # F0 F1 B0 F2 B1 F3 B2 B3 on stage 0 of 2
    plan = comm_plan(table, 2, 1, 0)
    # after F1: send its activation and receive the gradient for B0 in one batch
    assert sorted((op.op, op.what) for op in plan[2]) == [("recv", ("grad", 0, 0)), ("send", ("act", 0, 1))]


def test_split_layers_even_uneven_and_explicit():
    assert split_layers(8, 4) == [(0, 2), (2, 4), (4, 6), (6, 8)]
    assert split_layers(10, 4) == [(0, 3), (3, 6), (6, 8), (8, 10)]  # extra layers go to the first stages
    assert split_layers(8, 2, 2) == [(0, 2), (2, 4), (4, 6), (6, 8)]
    assert chunk_ranges(8, 2, 2, 1) == [(2, 4), (6, 8)]  # rank 1 holds virtual stages 1 and 3
    assert split_layers(8, 4, layers_per_stage=[3, 2, 2, 1]) == [(0, 3), (3, 5), (5, 7), (7, 8)]
    assert describe_split(8, 2, 2).splitlines() == ["stage 0: layers 0-1 | 4-5", "stage 1: layers 2-3 | 6-7"]
    with pytest.raises(StageSplitError, match="cannot fill"):
        split_layers(3, 2, 2)
    with pytest.raises(StageSplitError, match="sum to num_layers=8"):
        split_layers(8, 2, layers_per_stage=[4, 3])
