"""Expert parallelism equals one process (fp32, dropless): ep 2 and 4, with tp 2 (ep 2 with sp; ep 4
on 8 ranks, marked slow) and with data parallelism beside ep, plain and with the distributed
optimizer: the loss, every gradient after the data-parallel reduction, the gradient norm and the
weights after one AdamW step."""

import pytest
import torch

from megazoo.core.parallel.context import ParallelConfig, ParallelContext
from megazoo.core.parallel.launch import spawn
from tests.parity import moe_step

TOL = 1e-5
MOE = dict(num_experts=4, top_k=2, aux_loss=0.01, z_loss=0.001)
LAYOUTS = {  # world size -> [(name, layout, ParallelConfig, distributed optimizer)]
    2: [("ep2", "llama-tiny", dict(ep=2), False)],
    4: [("ep4", "gpt-tiny", dict(ep=4), False),
        ("ep2-tp2-sp", "llama-tiny", dict(tp=2, sp=True, ep=2), False),
        ("ep2-dp4", "gpt-tiny", dict(ep=2), False),
        ("ep2-dp4-zero", "llama-tiny", dict(ep=2), True)],
    8: [("ep4-tp2", "gpt-tiny", dict(tp=2, ep=4), False)],
}


def layout_cases(world: int) -> dict:
    out = {}
    for name, layout, parallel, distributed in LAYOUTS[world]:
        ctx = ParallelContext.build(ParallelConfig(**parallel))
        out[name] = (layout, moe_step(layout, ctx, MOE, distributed))
    return out


@pytest.fixture(scope="module")
def reference():
    return {layout: moe_step(layout, ParallelContext.single(), MOE) for layout in ("gpt-tiny", "llama-tiny")}


def close(a, b, what):
    err = (a - b).abs().max().item()
    assert err <= TOL * max(1.0, b.abs().max().item()), f"{what}: max abs difference {err:.3e}"


@pytest.mark.parametrize("world", [2, 4, pytest.param(8, marks=pytest.mark.slow)])
def test_expert_parallel_matches_one_process(world, reference):
    for rank, per_rank in enumerate(spawn(layout_cases, world, world, timeout=300)):
        for name, (layout, got) in per_rank.items():
            ref, tag = reference[layout], f"{name} rank {rank}"
            close(got["loss"], ref["loss"], f"{tag} loss")
            assert abs(got["grad_norm"] - ref["grad_norm"]) <= TOL * ref["grad_norm"], f"{tag} grad norm"
            if got["grads"] is not None:
                assert set(got["grads"]) == set(ref["grads"])
                for key, g in got["grads"].items():
                    close(g, ref["grads"][key], f"{tag} grad {key}")
            for key, p in got["params"].items():
                close(p, ref["params"][key], f"{tag} {key} after one step")


def test_experts_start_equal_whatever_the_layout(reference):
    """Expert e's weights at ep 2 x tp 2 are the slices of the one-process model's (init is by name)."""
    from megazoo.core.nn.moe.experts import Experts
    from megazoo.core.parallel.init import initialize
    from megazoo.zoo.gpt import TINY

    cfg = TINY["llama-tiny"](moe=MOE)
    full = Experts(cfg, ParallelContext.single())
    initialize(full, 7)
    for ep_rank in range(2):
        for tp_rank in range(2):
            ctx = ParallelContext(tp=2, dp=2, ep=2, rank=tp_rank + 2 * ep_rank, world_size=4)
            part = Experts(cfg, ctx)
            initialize(part, 7, tp=2, tp_rank=tp_rank)
            want = full.fc1_weight[2 * ep_rank:2 * ep_rank + 2, 48 * tp_rank:48 * (tp_rank + 1)]
            assert torch.equal(part.fc1_weight, want)
            assert torch.equal(part.fc2_weight, full.fc2_weight[2 * ep_rank:2 * ep_rank + 2, :, 48 * tp_rank:48 * (tp_rank + 1)])
