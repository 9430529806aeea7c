"""The spawn harness reports every rank that fails together, and does not wait on a stuck one."""

import time

import pytest

from megazoo.core.parallel.launch import RankFailure, spawn


def both_fail():
    import torch.distributed as dist

    raise ValueError(f"bad input on rank {dist.get_rank()}")


def one_fails_one_waits():
    import torch.distributed as dist

    if dist.get_rank() == 0:
        raise ValueError("rank 0 gave up")
    dist.barrier()  # never completes: rank 0 is gone


def test_every_failing_rank_is_reported():
    with pytest.raises(RankFailure) as info:
        spawn(both_fail, 2, timeout=120)
    msg = str(info.value)
    assert "rank 0 failed" in msg and "bad input on rank 0" in msg
    assert "rank 1 failed" in msg and "bad input on rank 1" in msg


def test_a_stuck_rank_does_not_delay_the_report():
    start = time.monotonic()
    with pytest.raises(RankFailure) as info:
        spawn(one_fails_one_waits, 2, timeout=120, dist_timeout=90)
    assert "rank 0 gave up" in str(info.value)
    assert time.monotonic() - start < 60  # the grace period, not rank 1's 90 s barrier timeout
