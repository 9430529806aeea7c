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


def test_a_rank_stops_on_the_first_ctrl_c_and_ignores_the_next():
    """A terminal's Ctrl-C reaches every rank and the launcher forwards another SIGINT: the second
    one must not land in the rank's clean-up (where it printed a traceback from a closing progress
    bar)."""
    import subprocess
    import sys

    code = (
        "import os, signal\n"
        "from megazoo.core.parallel.launch import _interrupt_once\n"
        "_interrupt_once()\n"
        "try:\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    sum(range(10**6))\n"
        "    print('not interrupted')\n"
        "except KeyboardInterrupt:\n"
        "    os.kill(os.getpid(), signal.SIGINT)  # the launcher's forwarded signal, during clean-up\n"
        "    sum(range(10**6))\n"
        "    print('cleaned up')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "cleaned up" and "Traceback" not in done.stderr


def where_am_i():
    import os

    import torch.distributed as dist

    return dist.get_rank(), os.environ.get("MEGAZOO_TEST_MARK"), os.getcwd()


def test_ranks_run_in_the_callers_environment_and_folder(tmp_path, monkeypatch):
    """Ranks fork from a server that imported torch once (forkserver), yet each launch sees the
    caller's environment and working directory at the time of the call, as spawned processes do."""
    for mark in ("first", "second"):
        here = tmp_path / mark
        here.mkdir()
        monkeypatch.chdir(here)
        monkeypatch.setenv("MEGAZOO_TEST_MARK", mark)
        assert spawn(where_am_i, 2, timeout=120) == [(0, mark, str(here)), (1, mark, str(here))]


def total(tensors):
    return float(sum(t.sum() for t in tensors))


def test_many_tensor_arguments_reach_the_ranks():
    """A state dict of hundreds of tensors as an argument (a forkserver passes at most 256 file
    descriptors to a child, so tensors travel as pickled bytes, not shared storages)."""
    import torch

    tensors = [torch.full((3,), float(i)) for i in range(400)]
    assert spawn(total, 2, tensors, timeout=120) == [3.0 * sum(range(400))] * 2
