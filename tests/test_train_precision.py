"""bf16 and fp16 runs of the tiny recipe track the fp32 loss curve.

Tolerances (absolute, per step, on a loss near 6): bf16 0.05 (8 mantissa bits), fp16 0.01 (11 bits).
fp16 starts at loss scale 2^16 here: from the default 2^32 the first ~17 steps overflow and are
skipped while the scale backs off, which is the scaler's job but not what this test compares."""

from tests.train_cases import run_cases, tiny

TOLERANCE = {"bf16": 0.05, "fp16": 0.01}


def test_low_precision_tracks_fp32(tmp_path):
    common = ["train.steps=20", "train.lr=3e-3", "train.min_lr=3e-4"]
    got = run_cases({
        "fp32": tiny(tmp_path / "fp32", *common),
        "bf16": tiny(tmp_path / "bf16", *common, "precision.dtype=bf16"),
        "fp16": tiny(tmp_path / "fp16", *common, "precision.dtype=fp16", "precision.initial_scale=65536"),
    })
    ref = got["fp32"]["losses"]
    assert ref[-1] < ref[0] - 0.3  # the curve really moves
    for dtype, tol in TOLERANCE.items():
        losses = got[dtype]["losses"]
        worst = max(abs(a - b) for a, b in zip(losses, ref))
        assert worst <= tol, f"{dtype}: max |loss - fp32 loss| = {worst:.4f} > {tol}"
        assert abs(got[dtype]["valid"] - got["fp32"]["valid"]) <= tol
        # parameters stay in the compute dtype, the update in fp32: the learned weights agree closely
        err = max((got[dtype]["params"][k] - got["fp32"]["params"][k]).abs().max().item() for k in got["fp32"]["params"])
        assert err < 0.05, f"{dtype}: parameters drifted by {err}"
