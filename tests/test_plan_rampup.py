"""`megazoo plan --train-tokens --rampup-batch-size`: the time to train with Megatron's batch ramp-up
(core/plan/train_time.py), checked against a hand sum over the steps, and its bad input."""

from __future__ import annotations

import contextlib
import io
import json
import random
from dataclasses import replace

import pytest

from megazoo.cli import main
from megazoo.core.plan.planner import plan
from megazoo.core.plan.shapes import Layout
from megazoo.core.plan.train_time import ramp_steps
from megazoo.core.train.rampup import BatchRamp
from megazoo.zoo.cards import card_shape

# MT-NLG as the paper ran it: TP 8 x PP 35 x DP 8, batch 1920 x 2048, 270B tokens, 32 -> 1920 over 12B tokens
MT_NLG = ("mt-nlg-530b", "--gpus", "2240", "--tp", "8", "--pp", "35", "--global-batch", "1920", "--recompute", "full",
          "--pipeline-engine", "deepspeed", "--no-scatter-gather")
MT_NLG_RUN = ("--train-tokens", "270e9", "--rampup-batch-size", "32", "32", "5859375",
              "--lr-warmup-tokens", "1B", "--lr-decay-tokens", "340B")


def plan_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["plan", *argv])
    return code, out.getvalue(), err.getvalue()


def megatron_steps(train_samples: int, global_batch: int, ramp: BatchRamp) -> list[int]:
    """Each step's global batch, one by one, as Megatron-LM's update_train_iters counts them (written
    here from its rule: ramp steps while consumed <= the ramp's samples, then whole global batches,
    a partial last batch dropped)."""
    batches, consumed = [], 0
    while consumed <= ramp.samples:
        batches.append(ramp(consumed))
        consumed += batches[-1]
    return batches + [global_batch] * ((train_samples - consumed) // global_batch)


@pytest.fixture(scope="module")
def mt_nlg():
    code, out, err = plan_cli(*MT_NLG, *MT_NLG_RUN, "--json")
    assert code == 0, err
    return json.loads(out)


def test_time_with_the_ramp_is_the_hand_sum_of_the_planners_step_times(mt_nlg):
    train = mt_nlg["train"]
    shape = card_shape("mt-nlg-530b")
    layout = Layout(gpus=2240, tp=8, pp=35, global_batch=1920, recompute="full", pipeline_engine="deepspeed",
                    scatter_gather=False)
    samples = 270_000_000_000 // 2048
    steps = megatron_steps(samples, 1920, BatchRamp(32, 32, 5_859_375, 1920))
    step_s = {b: plan(shape, replace(layout, global_batch=b), "a100-80gb").step_time_s for b in set(steps)}
    hand = 0.0
    for b in steps:  # step by step, not by group
        hand += step_s[b]
    assert train["samples"] == samples and train["steps"] == len(steps) == 80_086
    assert train["time_to_train_s"] == pytest.approx(hand, rel=1e-9)
    assert train["steps_no_ramp"] == samples // 1920
    assert train["time_to_train_no_ramp_s"] == pytest.approx(samples // 1920 * step_s[1920], rel=1e-12)
    assert step_s[1920] == pytest.approx(mt_nlg["step_time_s"], rel=1e-12)  # the plan's own step time
    # one row per batch size of the ramp, 32 to 1920 by 32, with its micro-batches per replica (dp 8)
    assert [s["batch"] for s in train["stages"]] == list(range(32, 1921, 32))
    assert all(s["micro_batches"] == s["batch"] // 8 for s in train["stages"])
    assert [s["steps"] for s in train["stages"]] == [steps.count(b) for b in range(32, 1921, 32)]
    assert all(s["step_time_s"] == pytest.approx(step_s[s["batch"]], rel=1e-12) for s in train["stages"])
    # the small batches run with a larger bubble share: the ramp costs time
    assert train["time_to_train_s"] > train["time_to_train_no_ramp_s"]
    ramp = train["ramp"]
    below = [b for b in steps if b < 1920]
    assert ramp["steps"] == len(below) and ramp["samples_consumed"] == sum(below)
    assert ramp["time_s"] == pytest.approx(sum(step_s[b] for b in below), rel=1e-9)


def test_token_schedule_is_placed_on_the_steps(mt_nlg):
    schedule = mt_nlg["train"]["schedule"]
    steps = megatron_steps(270_000_000_000 // 2048, 1920, BatchRamp(32, 32, 5_859_375, 1920))
    tokens, step = 0, 0
    while tokens < 1_000_000_000:  # the first step after which 1B tokens are consumed
        tokens += steps[step] * 2048
        step += 1
    assert schedule["warmup"]["step"] == step
    times = {s["batch"]: s["step_time_s"] for s in mt_nlg["train"]["stages"]}
    assert schedule["warmup"]["time_s"] == pytest.approx(sum(times[b] for b in steps[:step]), rel=1e-9)
    # MT-NLG's decay ends at 340B tokens, after its 270B-token run
    assert schedule["decay_end"]["step"] is None
    assert schedule["decay_end"]["fraction"] == pytest.approx(sum(steps) * 2048 / 340e9, rel=1e-12)


def test_text_shows_each_ramp_batch_and_both_times():
    code, out, _ = plan_cli(*MT_NLG, *MT_NLG_RUN)
    assert code == 0
    assert "batch ramp-up 32 -> 1920 by 32 every 99,311.4 samples" in out
    assert "time to train:" in out and "without the ramp" in out and "80,086 steps" in out
    assert "lr warm-up over 1,000,000,000 tokens ends after step" in out
    assert out.count("\n       32             4 ") == 1 and "\n    1,920           240 " in out


def test_without_a_ramp_the_time_is_full_steps():
    code, out, _ = plan_cli("gpt-345m", "--gpus", "8", "--global-batch", "64", "--train-tokens", "10M", "--json")
    train = json.loads(out)["train"]
    assert code == 0 and train["ramp"] is None and train["schedule"] is None
    assert train["steps"] == train["steps_no_ramp"] == 10_000_000 // 1024 // 64
    assert train["time_to_train_s"] == pytest.approx(train["time_to_train_no_ramp_s"], rel=1e-12)


def test_grouped_steps_equal_megatron_step_by_step():
    rng = random.Random(3)
    for _ in range(300):
        start, increment = rng.randint(1, 20), rng.randint(1, 20)
        full = start + increment * rng.randint(1, 12)
        ramp = BatchRamp(start, increment, rng.randint(0, 3000), full)
        samples = ramp.samples + rng.randint(full, 5000)
        grouped = [b for b, n in ramp_steps(samples, full, ramp) for _ in range(n)]
        assert grouped == megatron_steps(samples, full, ramp), ramp


@pytest.mark.parametrize("extra,message", [
    (("--train-tokens", "270B", "--rampup-batch-size", "32", "48", "5859375"),
     "--rampup-batch-size 32 48 5859375: the increment 48 does not divide --global-batch - start = 1920 - 32 = 1888"),
    (("--train-tokens", "270B", "--rampup-batch-size", "4", "4", "5859375"),
     "every step's batch must be a multiple of micro-batch x data-parallel size = 1 x 8 = 8"),
    (("--train-tokens", "270B", "--rampup-batch-size", "1920", "32", "5859375"),
     "the start batch must be below --global-batch 1920"),
    (("--train-tokens", "1e9", "--rampup-batch-size", "32", "32", "5859375"),
     "the ramp's 5,859,375 samples and one last step of up to 1,920 are more than the run's 488,281"),
    (("--rampup-batch-size", "32", "32", "5859375"), "--rampup-batch-size needs --train-tokens"),
    (("--train-tokens", "270B", "--lr-warmup-tokens", "300B"),
     "--lr-warmup-tokens 300,000,000,000 is longer than the run's 270,000,000,000 tokens"),
    (("--train-tokens", "270B", "--lr-warmup-tokens", "3B", "--lr-decay-tokens", "1B"),
     "--lr-decay-tokens 1,000,000,000 ends before the warm-up"),
    (("--train-tokens", "100",), "--train-tokens 100 is less than one sequence of 2,048 tokens"),
    (("--train-tokens", "270B", "--search"), "--train-tokens times one layout; drop --search"),
])
def test_bad_train_settings_are_one_line(extra, message):
    code, out, err = plan_cli(*MT_NLG, *extra)
    assert code == 2 and out == ""
    assert err.startswith("megazoo plan: error: ") and message in err and err.count("\n") == 1


def test_a_count_that_is_not_whole_is_refused_by_argparse():
    with pytest.raises(SystemExit) as e:
        plan_cli(*MT_NLG, "--train-tokens", "2.5x")
    assert e.value.code == 2


def test_a_ramp_of_more_batch_sizes_than_the_planner_plans_is_refused():
    code, out, err = plan_cli("gpt-345m", "--gpus", "1", "--global-batch", "2048", "--train-tokens", "1e12",
                              "--rampup-batch-size", "1", "1", "1000")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "--rampup-batch-size 1 1 1000: 2,047 batch sizes; the planner plans each, at most 1,024" in err
