"""Loss scaling and the LR schedule (units), and fp16 overflow handling across data-parallel ranks."""

import math

import pytest
import torch

from megazoo.core.optim import ConstantScaler, DynamicScaler, LRSchedule
from megazoo.core.parallel.launch import RankFailure, spawn
from megazoo.core.train import Trainer, TrainingStopped
from tests.train_cases import metrics, one_thread, tiny


def test_dynamic_scaler_defaults_hysteresis_and_growth():
    s = DynamicScaler()
    assert s.scale == 2.0**32 and s.hysteresis == 2 and s.growth_interval == 1000 and s.min_scale == 1.0
    s.update(True)
    assert s.scale == 2.0**32  # hysteresis: the first overflow does not back off
    s.update(True)
    assert s.scale == 2.0**31  # the second halves
    s.update(True)
    assert s.scale == 2.0**30  # no budget left until the scale grows again
    for _ in range(999):
        s.update(False)
    assert s.scale == 2.0**30
    s.update(False)
    assert s.scale == 2.0**31  # x2 after 1000 clean steps
    s.update(True)
    assert s.scale == 2.0**31  # the growth restored the hysteresis budget
    tiny_scaler = DynamicScaler(initial=2.0, min_scale=1.0, hysteresis=1)
    for _ in range(5):
        tiny_scaler.update(True)
    assert tiny_scaler.scale == 1.0  # never below min_scale
    restored = DynamicScaler()
    restored.load_state_dict(s.state_dict())
    assert restored.state_dict() == s.state_dict()
    assert ConstantScaler().scale == 1.0


def test_lr_schedules():
    cos = LRSchedule(1.0, 0.1, warmup=2, total=12, style="cosine")
    assert [cos(0), cos(1)] == [0.5, 1.0]
    assert cos(2) == pytest.approx(1.0) and cos(7) == pytest.approx(0.55) and cos(12) == pytest.approx(0.1)
    lin = LRSchedule(1.0, 0.0, warmup=0, total=10, style="linear")
    assert lin(5) == pytest.approx(0.5) and lin(20) == 0.0
    assert LRSchedule(1.0, 0.0, warmup=1, total=10, style="constant")(9) == 1.0
    with pytest.raises(ValueError, match="decay style must be one of cosine, linear, constant"):
        LRSchedule(1.0, 0.0, 0, 10, "exp")


INJECT_STEPS = (3, 4)


def _overflow_and_nan(root: str) -> dict:
    """fp16 on dp=2: rank 1 alone overflows at steps 3 and 4; then a NaN loss on rank 1 in fp32."""
    out = {}
    with one_thread():
        cfg = tiny(f"{root}/fp16", "precision.dtype=fp16", "precision.initial_scale=1024",
                   "precision.growth_interval=3")
        trainer = Trainer(cfg)
        rank = trainer.ctx.rank
        buffers, optimizer = trainer.optimizer.buffers, trainer.optimizer
        finish, step = buffers.finish, optimizer.step
        events = []

        def finish_and_inject():
            finish()
            if rank == 1 and trainer.step + 1 in INJECT_STEPS:
                buffers.main_grad[7] = float("inf")

        def step_and_watch(lr):
            before = buffers.param_data.clone()
            result = step(lr)
            events.append((trainer.step + 1, result.skipped, torch.equal(before, buffers.param_data)))
            return result

        buffers.finish, optimizer.step = finish_and_inject, step_and_watch
        trainer.fit()
        trainer.close()
        out["events"], out["skipped"] = events, trainer.skipped

        cfg = tiny(f"{root}/nan")
        trainer = Trainer(cfg)
        model = trainer.chunks[0]
        forward = model.forward

        def poisoned(*args, **kwargs):
            loss = forward(*args, **kwargs)
            return loss * float("nan") if rank == 1 and trainer.step + 1 == 3 else loss

        model.forward = poisoned
        try:
            trainer.fit()
            out["nan"] = None
        except TrainingStopped as e:
            out["nan"] = str(e)
        finally:
            trainer.close()
    return out


def test_overflow_on_one_rank_skips_the_step_everywhere_and_nan_stops(tmp_path):
    results = spawn(_overflow_and_nan, 2, str(tmp_path), timeout=300)
    for rank, res in enumerate(results):
        assert res["skipped"] == 2, rank
        for step, skipped, unchanged in res["events"]:
            assert skipped == (step in INJECT_STEPS), (rank, step)
            assert unchanged == skipped, (rank, step)  # a skipped step leaves the weights alone
        assert res["nan"] is not None and res["nan"].startswith("step 3: the loss is nan; stopping"), res["nan"]
    records = [r for r in metrics(tmp_path / "fp16") if r.get("split") != "valid"]
    scales = [r["loss_scale"] for r in records]
    # 1024 until the second overflow (hysteresis 2), 512 after it, x2 after 3 clean steps (5, 6, 7)
    assert scales == [1024, 1024, 1024, 1024, 512, 512, 512, 1024, 1024, 1024], scales
    assert [r.get("skipped", False) for r in records] == [s in INJECT_STEPS for s in range(1, 11)]
    assert all(math.isfinite(r["loss"]) for r in records)
    # the NaN run stopped at step 3: two logged steps, no hang
    assert [r["step"] for r in metrics(tmp_path / "nan")] == [1, 2]
