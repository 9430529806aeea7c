"""fp32 parity of the trainer (tiny GPT, 10 steps, gloo on CPU): every way of splitting a global batch
and every memory/parallel option reproduces the single-process big-batch run, losses (as written to
metrics.jsonl) and final parameters, each to its tolerance measured from the reference's own float
noise (tests/noise.py; at least 1e-5)."""

import pytest

from megazoo.core.parallel.launch import spawn
from tests.noise import FLOOR, other_rounding, tolerances
from tests.train_cases import grad_norms, run_cases, tiny, train_losses


def tol(ref: dict, key: str) -> float:
    """The reference's measured tolerance for `key` (the floor for a reference without one)."""
    return ref.get("tol", {}).get(key, FLOOR)


def assert_same_run(got: dict, ref: dict, tag: str, stage_only: bool = False) -> None:
    assert len(got["losses"]) == len(ref["losses"]) == 10
    for step, (a, b) in enumerate(zip(got["losses"], ref["losses"]), 1):
        assert abs(a - b) <= tol(ref, "losses") * max(1.0, abs(b)), f"{tag}: loss at step {step}: {a} vs {b}"
    params = dict(got["params"])
    if stage_only:  # a pipeline stage holds part of the model; its tied head copy equals the embedding
        if "head.weight" in params:
            params["embed.weight"] = params.pop("head.weight")
        assert params and set(params) <= set(ref["params"])
    else:
        assert set(params) == set(ref["params"])
    for name, p in params.items():
        err = (p - ref["params"][name]).abs().max().item()
        assert err <= tol(ref, "params"), f"{tag}: final {name} differs by {err:.3e} (tolerance {tol(ref, 'params'):.2e})"


def assert_layouts_match(results: list, reference: dict, root, dirs: tuple, stage_only: bool = False) -> None:
    """Every rank's runs (spawn results) and the metrics.jsonl losses of the run dirs equal the reference."""
    for rank, per_rank in enumerate(results):
        for name, result in per_rank.items():
            assert_same_run(result, reference, f"{name} (rank {rank})", stage_only=stage_only)
    for name in dirs:
        losses = train_losses(root / name)
        assert all(abs(a - b) <= tol(reference, "losses") for a, b in zip(losses, reference["losses"])), name


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    root = tmp_path_factory.mktemp("ref")
    big = run_cases({"big": tiny(root / "big", "train.micro_batch=8")})["big"]  # one big batch, no accumulation
    big["metrics"] = train_losses(root / "big")
    big["grad_norms"] = grad_norms(root / "big")
    with other_rounding():  # the same run with the other attention kernel: the reference's own noise
        again = run_cases({"big": tiny(root / "again", "train.micro_batch=8")})["big"]
    again["grad_norms"] = grad_norms(root / "again")
    big["tol"] = tolerances({k: big[k] for k in again}, again)
    return big


def test_big_batch_metrics_hold_exact_losses(reference):
    # metrics.jsonl holds the exact float losses the trainer computed (no rounding)
    assert reference["metrics"] == reference["losses"]
    assert reference["grad_norms"][0] > 0.5  # clipping (clip_grad=0.5) is active, so its norm is checked too
    assert reference["losses"][-1] < reference["losses"][0] - 0.02  # it learns


def test_accumulation_and_recompute_match_big_batch(reference, tmp_path):
    cases = {
        "accumulate 4": tiny(tmp_path / "acc", "train.micro_batch=2"),
        "recompute selective": tiny(tmp_path / "sel", "recompute=selective"),
        "recompute full": tiny(tmp_path / "full", "recompute=full"),
    }
    got = run_cases(cases)
    for name, result in got.items():
        assert_same_run(result, reference, name)
    assert train_losses(tmp_path / "acc") == got["accumulate 4"]["losses"]
    for name in ("acc", "sel", "full"):
        assert all(abs(a - b) <= tol(reference, "grad_norms")
                   for a, b in zip(grad_norms(tmp_path / name), reference["grad_norms"])), name


def test_recompute_with_dropout_matches_no_recompute(tmp_path):
    drop = ["model.dropout=0.1", "model.attention_dropout=0.1"]
    got = run_cases({r: tiny(tmp_path / r, *drop, f"recompute={r}") for r in ("none", "selective", "full")})
    assert_same_run(got["selective"], got["none"], "selective with dropout")
    assert_same_run(got["full"], got["none"], "full with dropout")


def _two_rank_cases(root: str) -> dict:
    return run_cases({
        "dp2 x accumulate 2": tiny(f"{root}/dp2", "train.micro_batch=2"),
        "dp2 x accumulate 2, distributed optimizer": tiny(f"{root}/zero", "optim.distributed=true"),
        "dp2, distributed optimizer, small buckets": tiny(f"{root}/zero-b", "optim.distributed=true",
                                                          "optim.bucket_size=5000"),
        "dp2 without overlap": tiny(f"{root}/sync", "optim.overlap_grad_reduce=false", "optim.bucket_size=5000"),
        "tp2 + sp": tiny(f"{root}/tp2", "parallel.tp=2", "parallel.sp=true"),
        "pp2 (tied embedding across stages)": tiny(f"{root}/pp2", "parallel.pp=2"),
    })


def test_two_ranks_match_big_batch(reference, tmp_path):
    results = spawn(_two_rank_cases, 2, str(tmp_path), timeout=400)
    for rank, per_rank in enumerate(results):
        for name, result in per_rank.items():
            assert_same_run(result, reference, f"{name} (rank {rank})", stage_only=name.startswith("pp2"))
    for name in ("dp2", "zero", "tp2", "pp2"):  # rank 0 wrote the run's metrics
        losses = train_losses(tmp_path / name)
        assert all(abs(a - b) <= tol(reference, "losses") for a, b in zip(losses, reference["losses"])), name
        norms = grad_norms(tmp_path / name)  # global norm across tp/dp shards, replicated params once
        assert all(abs(a - b) <= tol(reference, "grad_norms") for a, b in zip(norms, reference["grad_norms"])), (name, norms)


def _four_rank_cases(root: str) -> dict:
    return run_cases({
        "pp2 x dp2, distributed optimizer, full recompute": tiny(f"{root}/pp2-dp2-zero", "parallel.pp=2",
                                                                  "optim.distributed=true", "recompute=full"),
        "tp2 x pp2 + sp": tiny(f"{root}/tp2-pp2-sp", "parallel.tp=2", "parallel.pp=2", "parallel.sp=true"),
    })


def test_pipeline_composes_with_zero_dp_tp_sp_and_recompute(reference, tmp_path):
    """3D parallelism through the real trainer: PP with the distributed optimizer over DP and full
    recompute, and PP with TP + SP, each equal to the single-process big batch."""
    results = spawn(_four_rank_cases, 4, str(tmp_path), timeout=400)
    assert_layouts_match(results, reference, tmp_path, ("pp2-dp2-zero", "tp2-pp2-sp"), stage_only=True)
    for name in ("pp2-dp2-zero", "tp2-pp2-sp"):
        norms = grad_norms(tmp_path / name)
        assert all(abs(a - b) <= tol(reference, "grad_norms") for a, b in zip(norms, reference["grad_norms"])), (name, norms)


def test_measured_tolerances_stay_tight(reference):
    """The reference's noise is rounding: its tolerances stay far below what a real bug moves (1e-3+)."""
    assert set(reference["tol"]) >= {"losses", "params", "grad_norms"}
    assert all(FLOOR <= t <= 1e-4 for t in reference["tol"].values()), reference["tol"]
