"""Crash during save: a process SIGKILLed at each moment of writing a checkpoint leaves the previous
one loadable; the half-written one is ignored, refused when named, and removed by the next save."""

import os
import subprocess
import sys
import textwrap

import pytest
import torch

from megazoo.core.checkpoint import CheckpointError, find_latest, load_checkpoint, save_checkpoint
from megazoo.core.checkpoint.storage import stale_dirs
from megazoo.core.parallel.context import ParallelContext

CHILD = textwrap.dedent("""
    import os, signal, sys, torch
    from megazoo.core.checkpoint import save_checkpoint, storage
    from megazoo.core.parallel.context import ParallelContext
    root, stage = sys.argv[1], sys.argv[2]
    ctx = ParallelContext(device=torch.device("cpu"))
    state = lambda v: {"model": {"w": torch.full((256, 256), float(v)), "b": torch.full((7,), float(v))}, "step": v}
    save_checkpoint(root, 1, state(1), ctx, {"arch": "toy"})
    def die(*a, **k):
        os.kill(os.getpid(), signal.SIGKILL)
    if stage == "data":  # in the middle of writing a shard file
        import torch.distributed.checkpoint.filesystem as fs
        def half(transforms, stream, *a, **k):
            stream.write(b"partial" * 100)
            stream.flush()
            die()
        fs._write_item = half
    elif stage == "meta":  # shards written, meta.json not yet
        storage.write_json = die
    elif stage == "rename":  # meta.json written, directory not yet renamed
        storage.commit = die
    elif stage == "latest":  # renamed, `latest` marker not yet updated
        storage.update_latest = die
    save_checkpoint(root, 2, state(2), ctx, {"arch": "toy"})
    sys.exit(3)  # not reached
""")

STAGES = ["data", "meta", "rename", "latest"]


@pytest.fixture(scope="module")
def crashed(tmp_path_factory):
    """One killed child per stage, run side by side."""
    roots = {s: tmp_path_factory.mktemp(s) for s in STAGES}
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    procs = {s: subprocess.Popen([sys.executable, "-c", CHILD, str(r), s], env=env, stderr=subprocess.PIPE)
             for s, r in roots.items()}
    for s, p in procs.items():
        _, err = p.communicate(timeout=300)
        assert p.returncode == -9, f"{s}: exit {p.returncode}\n{err.decode()}"
    return roots


def _template():
    return {"model": {"w": torch.zeros(256, 256), "b": torch.zeros(7)}, "step": -1}


@pytest.mark.parametrize("stage", STAGES)
def test_kill_during_save(crashed, stage):
    root, ctx = crashed[stage], ParallelContext(device=torch.device("cpu"))
    complete = stage == "latest"  # killed after the atomic rename: the new checkpoint is whole
    assert (root / "latest").read_text().strip() == "iter_0000001"
    assert find_latest(root).name == ("iter_0000002" if complete else "iter_0000001")
    state, info = load_checkpoint(root, _template(), ctx)  # resume=auto semantics
    want = 2 if complete else 1
    assert info["step"] == want and state["step"] == want
    assert torch.equal(state["model"]["w"], torch.full((256, 256), float(want)))
    if not complete:
        (half,) = stale_dirs(root)
        assert half.name == "iter_0000002.tmp"
        with pytest.raises(CheckpointError, match="unfinished save"):
            load_checkpoint(half, _template(), ctx)
        save_checkpoint(root, 3, {**_template(), "step": 3}, ctx)  # the next save cleans up
        assert stale_dirs(root) == [] and find_latest(root).name == "iter_0000003"
        assert (root / "latest").read_text().strip() == "iter_0000003"
