"""Issue #39 point 4: batch-size ramp-up (Megatron's --rampup-batch-size) and schedules in tokens.

A tiny GPT ramps its global batch 2 -> 8 by 2 over 12 samples: the logged batches follow Megatron's
formula (written out here), dp=2 equals dp=1 at every step, a resume in mid-ramp equals the
uninterrupted run bit for bit, the lr under a token schedule equals a hand computation, and bad
settings fail in one line before any work."""

import math

import pytest

from megazoo.cli import main
from megazoo.core.parallel.launch import spawn
from megazoo.core.train import Trainer
from megazoo.core.train.errors import ConfigError
from tests.train_cases import metrics, one_thread, run_cases, tiny

START, INCREMENT, SAMPLES, GLOBAL, STEPS = 2, 2, 12, 8, 8
RAMP = [f"train.rampup_batch_size=[{START}, {INCREMENT}, {SAMPLES}]", f"train.global_batch={GLOBAL}",
        f"train.steps={STEPS}", "model.dropout=0.0", "model.attention_dropout=0.0"]


def megatron_batch(consumed: int) -> int:
    """RampupBatchsizeNumMicroBatchesCalculator.update, written out."""
    per_increment = SAMPLES / ((GLOBAL - START) // INCREMENT)
    if consumed > SAMPLES:
        return GLOBAL
    return START + int(consumed / per_increment) * INCREMENT


def expected_batches() -> list[int]:
    out, consumed = [], 0
    for _ in range(STEPS):
        out.append(megatron_batch(consumed))
        consumed += out[-1]
    return out


def train_rows(run_dir) -> list[dict]:
    return [r for r in metrics(run_dir) if r.get("split", "train") == "train"]


def test_logged_global_batch_follows_megatron(tmp_path):
    batches = expected_batches()
    assert batches == [2, 2, 4, 6, 8, 8, 8, 8]  # the formula's steps, also worked out by hand
    run_cases({"ramp": tiny(tmp_path / "ramp", *RAMP, "train.micro_batch=2")})
    rows = train_rows(tmp_path / "ramp")
    assert [r["global_batch"] for r in rows] == batches
    consumed = [sum(batches[: i + 1]) for i in range(STEPS)]
    assert [r["consumed_samples"] for r in rows] == consumed
    assert [r["consumed_tokens"] for r in rows] == [c * 32 for c in consumed]


def _dp2(root: str) -> dict:
    return run_cases({"dp2": tiny(f"{root}/dp2", *RAMP, "train.micro_batch=1")})["dp2"]


def test_dp2_equals_dp1_at_every_ramp_step(tmp_path):
    ref = run_cases({"dp1": tiny(tmp_path / "dp1", *RAMP, "train.micro_batch=1")})["dp1"]
    results = spawn(_dp2, 2, str(tmp_path), timeout=400)
    assert len(set(ref["losses"])) == STEPS  # the run really trains
    for rank, got in enumerate(results):
        assert got["losses"] == pytest.approx(ref["losses"], abs=1e-5, rel=0), rank
        for name, value in ref["params"].items():
            assert (got["params"][name] - value).abs().max() <= 1e-5, (rank, name)
    assert [r["global_batch"] for r in train_rows(tmp_path / "dp2")] == expected_batches()


def test_resume_in_mid_ramp_is_bitwise_exact(tmp_path):
    whole = tiny(tmp_path / "whole", *RAMP)
    first = tiny(tmp_path / "split", *RAMP, "train.steps=3", "checkpoint.save=true", "checkpoint.resume=auto")
    rest = tiny(tmp_path / "split", *RAMP, "checkpoint.save=true", "checkpoint.resume=auto")
    run_cases({"whole": whole, "first": first})
    with one_thread():
        trainer = Trainer(rest)
        try:
            assert trainer.step == 3 and trainer.consumed_samples == 8  # in mid-ramp: the next batch is 6
            assert trainer.batch_size() == 6
            trainer.fit()
        finally:
            trainer.close()
    keys = ("step", "loss", "lr", "grad_norm", "global_batch", "consumed_samples")
    want = [{k: r[k] for k in keys} for r in train_rows(tmp_path / "whole")]
    got = [{k: r[k] for k in keys} for r in train_rows(tmp_path / "split")]
    assert got == want  # bit for bit, step 1 to 8


def test_token_schedule_lr_equals_hand_computation(tmp_path):
    lr, min_lr, seq = 1e-3, 1e-4, 32
    warmup, decay = 5 * seq, 30 * seq  # tokens: 5 and 30 samples
    cfg = tiny(tmp_path / "tokens", *RAMP, f"train.lr_warmup_tokens={warmup}", f"train.lr_decay_tokens={decay}",
               "train.warmup=0", f"train.lr={lr}", f"train.min_lr={min_lr}")
    run_cases({"tokens": cfg})
    rows = train_rows(tmp_path / "tokens")
    # by hand: tokens consumed before each step (samples 0, 2, 4, 8, 14, 22, 30, 38 times 32)
    before = [0, 64, 128, 256, 448, 704, 960, 1216]
    cosine = [min_lr + (lr - min_lr) * 0.5 * (1 + math.cos(math.pi * (p - 160) / 800)) for p in before]
    hand = [lr * 64 / 160, lr * 128 / 160, lr, cosine[3], cosine[4], cosine[5], min_lr, min_lr]
    assert [r["lr"] for r in rows] == pytest.approx(hand, rel=1e-12, abs=0)
    assert rows[3]["lr"] == pytest.approx(1e-4 + 9e-4 * 0.5 * (1 + math.cos(0.12 * math.pi)), rel=1e-12)


def test_sample_schedule_lr_equals_hand_computation(tmp_path):
    """train.lr_warmup_samples / lr_decay_samples: under the ramp with a linear decay, and without a
    ramp (constant batch 8) with an unset decay end, i.e. the run's last sample."""
    lr, min_lr = 1e-3, 1e-4
    ramp = tiny(tmp_path / "ramp", *RAMP, "train.lr_warmup_samples=3", "train.lr_decay_samples=20",
                "train.decay=linear", "train.warmup=0", f"train.lr={lr}", f"train.min_lr={min_lr}")
    plain = tiny(tmp_path / "plain", "train.steps=5", "train.lr_warmup_samples=12", "train.warmup=0",
                 f"train.lr={lr}", f"train.min_lr={min_lr}", "model.dropout=0.0", "model.attention_dropout=0.0")
    run_cases({"ramp": ramp, "plain": plain})
    # the ramp: samples consumed before each step 0, 2, 4, 8, 14, 22, 30, 38 (batches 2, 2, 4, 6, 8, ...);
    # warm-up lr x min(p + q, 3) / 3, then linear from p = 3 to p = 20, min_lr from there on
    linear = [min_lr + (lr - min_lr) * (1 - (p - 3) / 17) for p in (4, 8, 14)]
    hand = [lr * 2 / 3, lr, *linear, min_lr, min_lr, min_lr]
    assert [r["lr"] for r in train_rows(tmp_path / "ramp")] == pytest.approx(hand, rel=1e-12, abs=0)
    assert [r["consumed_samples"] for r in train_rows(tmp_path / "ramp")] == [2, 4, 8, 14, 22, 30, 38, 46]
    # no ramp: 8 samples a step, warm-up 12 samples, cosine to the run's end at 5 x 8 = 40 samples
    cosine = [min_lr + (lr - min_lr) * 0.5 * (1 + math.cos(math.pi * (p - 12) / 28)) for p in (16, 24, 32)]
    hand = [lr * 8 / 12, lr, *cosine]
    assert [r["lr"] for r in train_rows(tmp_path / "plain")] == pytest.approx(hand, rel=1e-12, abs=0)


def test_step_schedule_without_ramp_is_unchanged(tmp_path):
    """No ramp, no sample/token key: the step schedule lr x (k + 1) / warmup, then cosine over the steps."""
    run_cases({"plain": tiny(tmp_path / "plain", "train.steps=4", "train.warmup=2")})
    lrs = [r["lr"] for r in train_rows(tmp_path / "plain")]
    cos = [1e-4 + 9e-4 * 0.5 * (1 + math.cos(math.pi * k / 2)) for k in (0, 1)]
    assert lrs[:2] == [1e-3 * 1 / 2, 1e-3 * 2 / 2]  # exactly the old formula
    assert lrs[2:] == pytest.approx(cos, rel=1e-12, abs=0)


@pytest.mark.parametrize("extra, world, words", [
    (["train.rampup_batch_size=[2, 4, 12]"], 1,
     "the increment 4 does not divide train.global_batch - start = 8 - 2 = 6"),
    (["train.rampup_batch_size=[2, 2, 12]"], 2, "multiple of train.micro_batch x data-parallel size = 2 x 2 = 4"),
    (["train.rampup_batch_size=[8, 2, 12]"], 1, "the start batch must be below train.global_batch=8"),
    (["train.rampup_batch_size=[2, 2]"], 1, "expected three integers"),
    (["train.lr_warmup_tokens=100000"], 1, "train.lr_warmup_tokens=100,000 is longer than the run's 2,560 tokens"),
    (["train.lr_warmup_tokens=64", "train.lr_decay_tokens=32"], 1, "ends before the warm-up"),
])
def test_bad_settings_fail_in_one_line_before_any_work(tmp_path, extra, world, words):
    cfg = tiny(tmp_path / "bad", "train.global_batch=8", "train.micro_batch=2", "train.warmup=0", *extra)
    with pytest.raises(ConfigError) as e:
        cfg.validate(world)
    assert words in str(e.value) and "\n" not in str(e.value)
    assert not (tmp_path / "bad").exists()


def test_cli_refuses_a_bad_ramp_with_exit_2(tmp_path, capsys):
    run = tmp_path / "cli"
    code = main(["train", "gpt-tiny", "--set", "train.global_batch=8", "train.micro_batch=2",
                 "train.rampup_batch_size=[2, 4, 12]", f"log.dir={run}", "log.progress=false"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "train.rampup_batch_size" in err, err
    assert not run.exists()
