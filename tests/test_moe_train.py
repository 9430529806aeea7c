"""MoE through the real trainer: pipeline stages x data parallelism with the experts split over
ep 2 and the distributed optimizer (pp 2 x dp 2 = 4 gloo ranks) equal one process (fp32, dropless,
load-balancing and z-losses on, gradient clipping active): the losses, the gradient norms, the
logged auxiliary losses and the final weights. One micro-batch per step, as the load-balancing loss
is a function of each micro-batch's whole routing (summed over the data-parallel ranks)."""

import pytest

from megazoo.core.parallel.launch import spawn
from tests.noise import other_rounding, tolerances
from tests.train_cases import metrics, run_cases, tiny

TOL = 1e-5
MOE = ("train.steps=3", "model.moe.num_experts=4", "model.moe.top_k=2", "model.moe.aux_loss=0.01",
       "model.moe.z_loss=0.001")


def train_rows(run_dir) -> list[dict]:
    return [r for r in metrics(run_dir) if r.get("split", "train") == "train"]


def _layout(root: str) -> dict:
    return run_cases({"pp2-dp2-ep2-zero": tiny(f"{root}/ep", *MOE, "train.micro_batch=4", "parallel.pp=2",
                                                "parallel.ep=2", "optim.distributed=true")})


@pytest.mark.slow
def test_pipeline_and_expert_parallel_training_matches_one_process(tmp_path):
    reference = run_cases({"one": tiny(tmp_path / "one", *MOE, "train.micro_batch=8")})["one"]
    ref_rows = train_rows(tmp_path / "one")
    assert ref_rows[0]["grad_norm"] > 0.5  # clipping (clip_grad=0.5) is active, so the norm must be right
    for rank, per_rank in enumerate(spawn(_layout, 4, str(tmp_path), timeout=400)):
        got = per_rank["pp2-dp2-ep2-zero"]
        for step, (a, b) in enumerate(zip(got["losses"], reference["losses"]), 1):
            assert abs(a - b) <= TOL * max(1.0, abs(b)), f"rank {rank}: loss at step {step}: {a} vs {b}"
        params = dict(got["params"])
        if "head.weight" in params:  # the last stage's tied copy of the embedding
            params["embed.weight"] = params.pop("head.weight")
        assert params and set(params) <= set(reference["params"])
        assert any(".experts." in name for name in params)
        for name, p in params.items():
            err = (p - reference["params"][name]).abs().max().item()
            assert err <= TOL, f"rank {rank}: final {name} differs by {err:.3e}"
    rows = train_rows(tmp_path / "ep")
    assert len(rows) == len(ref_rows) == 3
    for got, ref in zip(rows, ref_rows):
        for key in ("loss", "grad_norm", "moe_aux_loss", "moe_z_loss"):
            assert abs(got[key] - ref[key]) <= TOL * max(1.0, abs(ref[key])), (key, got[key], ref[key])


def test_accumulated_micro_batches_weigh_the_auxiliary_loss_once(tmp_path):
    """The z-loss is a token mean, so two micro-batches of 4 must train exactly like one of 8: its
    gradient enters each micro-batch's backward with weight 1 / micro-batches (set by the trainer).
    The tolerance is the one-batch run's own float noise (tests/noise.py), at least 1e-5."""
    sets = ("train.steps=2", "model.moe.num_experts=4", "model.moe.z_loss=0.05")
    got = run_cases({"big": tiny(tmp_path / "big", *sets, "train.micro_batch=8"),
                     "acc": tiny(tmp_path / "acc", *sets, "train.micro_batch=4")})
    with other_rounding():
        again = run_cases({"big": tiny(tmp_path / "again", *sets, "train.micro_batch=8")})["big"]
    big, acc = got["big"], got["acc"]
    tol = tolerances(big, again)
    assert tol["params"] <= 1e-4, tol  # rounding noise, far below what a double-counted loss moves
    for name, p in acc["params"].items():
        err = (p - big["params"][name]).abs().max().item()
        assert err <= tol["params"], f"final {name} differs by {err:.3e} (tolerance {tol['params']:.2e})"
    for a, b in zip(train_rows(tmp_path / "acc"), train_rows(tmp_path / "big")):
        assert abs(a["moe_z_loss"] - b["moe_z_loss"]) <= tol["losses"] * b["moe_z_loss"]