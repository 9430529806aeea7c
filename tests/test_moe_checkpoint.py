"""Experts split over ep ranks save their global shape and reshard: a checkpoint of the one-process
MoE model loads at ep 2 (ZeRO-1 over the expert-dp group), that run's checkpoint loads back at
ep 1, and every one continues exactly like the run that never stopped (weights and Adam state)."""

from pathlib import Path

import torch

from megazoo.core.checkpoint import load_checkpoint, save_checkpoint
from megazoo.core.parallel.context import ParallelConfig, ParallelContext
from megazoo.core.parallel.launch import spawn
from tests.parity import MoERun

MOE = dict(num_experts=4, top_k=2, aux_loss=0.01)
TOL = 1e-5


def _resume(root: Path, ctx: ParallelContext, distributed: bool) -> MoERun:
    run = MoERun("llama-tiny", ctx, MOE, distributed, seed=999)  # another init: all must come from the file
    state, info = load_checkpoint(root, run.state(), ctx)
    assert info["step"] == 1
    run.load(state)
    return run


def at_ep2(root: str) -> dict:
    """Load the ep 1 checkpoint at ep 2 with ZeRO-1, save it again, take the second step."""
    ctx = ParallelContext.build(ParallelConfig(ep=2))
    run = _resume(Path(root) / "ep1", ctx, distributed=True)
    loaded = run.params()
    save_checkpoint(Path(root) / "ep2", 1, run.state(), ctx)
    run.step(data_seed=1)
    return {"loaded": loaded, "continued": run.params()}


def close(a, b, what):
    err = (a - b).abs().max().item()
    assert err <= TOL * max(1.0, b.abs().max().item()), f"{what}: max abs difference {err:.3e}"


def test_experts_reshard_ep1_to_ep2_and_back(tmp_path):
    ctx = ParallelContext.single()
    run = MoERun("llama-tiny", ctx, MOE)
    run.step(data_seed=0)
    after_one = run.params()
    save_checkpoint(tmp_path / "ep1", 1, run.state(), ctx)
    run.step(data_seed=1)
    reference = run.params()
    expert = "layers.0.mlp.experts.fc1_weight"
    assert reference[expert].shape[0] == 4
    for rank, got in enumerate(spawn(at_ep2, 2, str(tmp_path), timeout=300)):
        for name, p in got["loaded"].items():
            assert torch.equal(p, after_one[name]), f"rank {rank}: {name} loaded at ep 2"
        for name, p in got["continued"].items():
            close(p, reference[name], f"rank {rank}: {name} after the step at ep 2")
    back = _resume(tmp_path / "ep2", ctx, distributed=False)
    for name, p in back.params().items():
        assert torch.equal(p, after_one[name]), f"{name} loaded back at ep 1"
    back.step(data_seed=1)
    for name, p in back.params().items():
        close(p, reference[name], f"{name} after the step back at ep 1")
