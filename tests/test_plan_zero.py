"""The planner knows ZeRO-1/2/3 and optimizer offload (issue 43 point 5): bytes per parameter per
rank of each mode, the data-parallel traffic and how much of it the compute hides, `megazoo plan
--shard` and `--optimizer-offload`, and `--search` with the sharding mode as a dimension."""

from __future__ import annotations

import json
from dataclasses import replace
from math import prod

import pytest

from megazoo.cli import main
from megazoo.core.plan import Layout, PlanError, plan, search, stage_params
from megazoo.core.plan.memory import (GIB, gathered_elements, grad_buckets, grad_units, megazoo_state_parts,
                                      stage_memory, zero3_units)
from megazoo.core.plan.zero import zero_bytes_per_param, zero_traffic_per_param
from megazoo.zoo.cards import card_shape
from tests.test_plan_small_scale import odd_model

DEVICE = ("weights", "grads", "main_weights", "adam")


def per_param(mode, dp, dtype="bf16", offload=None):
    parts = zero_bytes_per_param(mode, dp, dtype, offload)
    return {k: parts[k] for k in DEVICE}, parts


@pytest.mark.parametrize("dp", [1, 2, 4])
def test_bytes_per_parameter_of_each_mode(dp):
    d = dp
    # bf16: weights 2, fp32 main grads 4, fp32 main weights 4, Adam 8
    want = {"none": dict(weights=2, grads=4, main_weights=4, adam=8),
            "optimizer": dict(weights=2, grads=4 + (4 / d if d > 1 else 0), main_weights=4 / d, adam=8 / d),
            "grads": dict(weights=2, grads=4 / d, main_weights=4 / d, adam=8 / d),
            "full": dict(weights=2 / d, grads=4 / d, main_weights=4 / d, adam=8 / d)}
    for mode, parts in want.items():
        got, whole = per_param(mode, dp)
        assert got == pytest.approx(parts), mode
        assert whole["device"] == pytest.approx(sum(parts.values())) and whole["host"] == 0
    assert per_param("full", dp)[1]["device"] == pytest.approx(18 / dp)  # ZeRO-3 falls as 1/dp
    assert per_param("full", dp, "fp32")[1]["device"] == pytest.approx(16 / dp)  # fp32: no separate main weights
    assert per_param("optimizer", dp, "fp32")[0]["main_weights"] == 0
    # the sharded parts shrink with dp; ZeRO-1 and ZeRO-2 keep the whole weights
    totals = [per_param(m, dp)[1]["device"] for m in ("none", "optimizer", "grads", "full")]
    assert totals == sorted(totals, reverse=True) if dp > 1 else len(set(totals)) == 1


def test_zero3_total_falls_as_one_over_dp():
    totals = {dp: per_param("full", dp)[1]["device"] for dp in (1, 2, 4, 8)}
    for dp, total in totals.items():
        assert total * dp == pytest.approx(totals[1])
    zero1 = {dp: per_param("optimizer", dp)[1]["device"] for dp in (2, 4, 8)}
    assert all(v > 6 for v in zero1.values())  # ZeRO-1 keeps the whole weights and gradients: never below 6


@pytest.mark.parametrize("mode", ["none", "optimizer", "grads", "full"])
@pytest.mark.parametrize("dp", [1, 2, 4])
def test_bucket_exact_memory_agrees_with_the_per_parameter_rule(mode, dp):
    """megazoo_state_parts (padded buckets, the bucket in flight, the gathered units) less its two
    transients is zero_bytes_per_param times the stage's parameters, up to the buckets' padding."""
    shape = card_shape("gpt-345m")
    layout = Layout(gpus=dp, shard=mode)
    params = stage_params(shape, layout, 0)
    parts = megazoo_state_parts(shape, layout, 0)
    rule = zero_bytes_per_param(mode, dp)
    in_flight = max(p for _, p, _, _ in grad_buckets(shape, layout, 0))  # the largest bucket, fp32
    transient = {"grads": 4 * in_flight if mode in ("grads", "full") and dp > 1 else 0}
    for k in DEVICE:
        assert parts[k] - transient.get(k, 0) == pytest.approx(rule[k] * params, rel=1e-5), k
    roots, layers = zero3_units(shape, layout, 0)
    assert len(roots) == 1 and len(layers) == 24
    # ZeRO-3: the root unit (embedding, head) kept all step, and two layers with prefetch, one without
    assert parts["gathered"] == (2 * (roots[0] + 2 * max(layers)) if mode == "full" and dp > 1 else 0)
    no_prefetch = megazoo_state_parts(shape, replace(layout, shard_prefetch=False), 0)
    assert no_prefetch["gathered"] == (2 * (roots[0] + max(layers)) if mode == "full" and dp > 1 else 0)
    assert gathered_elements(shape, layout, 0) == roots[0] + 2 * max(layers)


def test_zero3_units_are_the_layers_and_what_a_chunk_holds_outside_them():
    shape = card_shape("gpt-345m")  # 24 layers
    for layout in (Layout(gpus=4, shard="full"), Layout(gpus=8, pp=2, vpp=2, shard="full"),
                   Layout(gpus=8, tp=2, shard="full")):
        for stage in range(layout.pp):
            units = grad_units(shape, layout, stage)
            held = sum(prod(s) for unit in units for part in unit for s in part)
            bucketed = sum(u for u, _, _, _ in grad_buckets(shape, layout, stage))
            assert held == stage_params(shape, layout, stage) == bucketed
            layers = 24 // layout.pp
            assert len(units) == layers + layout.vpp  # each chunk's root unit (embedding, head) and its layers
            roots = units[::len(units) // layout.vpp]
            assert any(r[0] or r[2] for r in roots) == (stage in (0, layout.pp - 1))  # a middle stage's are empty
    assert len(grad_units(shape, Layout(gpus=4, shard="optimizer"), 0)) == 1  # one unit unless ZeRO-3


def test_pipeline_and_expert_ranks_shard_their_own_parameters():
    shape = card_shape("gpt-345m")
    one = stage_memory(shape, Layout(gpus=4, pp=2, shard="full"), 1, 0.0)  # dp 2 per stage
    assert one.weights == pytest.approx(2 * one.params / 2, rel=1e-4)
    moe = replace(shape, num_experts=8, top_k=2, moe_every=2)
    layout = Layout(gpus=8, ep=4, shard="full")  # dense over dp 8, experts over expert-dp 2
    experts = sum(prod(s) for _, exp, _ in grad_units(moe, layout, 0) for s in exp)
    dense = stage_params(moe, layout, 0) - experts
    assert stage_memory(moe, layout, 0, 0.0).weights == pytest.approx(2 * (dense / 8 + experts / 2), rel=1e-4)


@pytest.mark.parametrize("mode", ["optimizer", "full"])
def test_offload_keeps_weights_and_gradients_on_the_device(mode):
    for dp in (1, 2, 4):
        dev, whole = per_param(mode, dp, offload="cpu")
        assert dev["main_weights"] == dev["adam"] == 0
        assert whole["host"] == pytest.approx(16 / dp)  # fp32 main weights, Adam and the gradient shard
        kept, _ = per_param(mode, dp)
        assert whole["device"] == pytest.approx(kept["weights"] + kept["grads"])
    assert per_param("none", 1, offload="cpu")[1]["device"] == 6  # one GPU: bf16 weights and fp32 gradients
    shape = card_shape("gpt-1.3b")
    on, off = (plan(shape, Layout(gpus=1, optimizer_offload=o)) for o in ("cpu", None))
    assert on.memory_breakdown_gb["optimizer"] == 0 and off.memory_breakdown_gb["optimizer"] > 14
    assert on.host_memory_gb_per_gpu == pytest.approx(16 * on.params_total / GIB, rel=1e-3)
    assert off.host_memory_gb_per_gpu == 0
    assert on.time_breakdown_s["optimizer"] > 10 * off.time_breakdown_s["optimizer"]  # the host steps slower


def test_traffic_ratios():
    for dp in (2, 4, 8):
        share = (dp - 1) / dp
        none, zero1, zero2, zero3 = (zero_traffic_per_param(m, dp) for m in ("none", "optimizer", "grads", "full"))
        assert none["elements"] == pytest.approx(2 * share)
        assert zero1["elements"] == zero2["elements"] == pytest.approx(none["elements"])  # the all-reduce's volume
        assert zero3["elements"] / zero1["elements"] == pytest.approx(1.5)
        # bytes: fp32 gradients, weights in the compute dtype
        assert zero3["bytes"] / zero1["bytes"] == pytest.approx((4 + 2 * 2) / (4 + 2))
        assert (zero_traffic_per_param("full", dp, dtype="fp32")["bytes"]
                / zero_traffic_per_param("optimizer", dp, dtype="fp32")["bytes"]) == pytest.approx(1.5)
        # each micro-batch reduce-scatters its own gradients (ZeRO-2) and gathers the weights twice (ZeRO-3)
        assert zero_traffic_per_param("grads", dp, 4)["elements"] == pytest.approx(5 * share)
        assert zero_traffic_per_param("full", dp, 4)["elements"] == pytest.approx(12 * share)
    assert all(v == 0 for v in zero_traffic_per_param("full", 1).values())


def test_planned_traffic_and_overlap():
    shape = card_shape("gpt-1.3b")
    plans = {m: plan(shape, Layout(gpus=8, global_batch=8, shard=m)) for m in ("none", "optimizer", "grads", "full")}
    # ZeRO-3's layers move (2 x 2 + 4) / (2 + 4) of ZeRO-1's bytes; its root unit (embedding, kept) as ZeRO-1's
    root = zero3_units(shape, Layout(gpus=8), 0)[0][0]
    share = root / plans["full"].params_per_gpu
    assert plans["full"].dp_traffic_gb / plans["optimizer"].dp_traffic_gb == pytest.approx(8 / 6 * (1 - share) + share)
    assert plans["none"].dp_traffic_gb * GIB == pytest.approx(2 * 7 / 8 * 4 * plans["none"].params_per_gpu)
    assert plans["optimizer"].step_time_s == plans["grads"].step_time_s  # one micro-batch: the same traffic
    # ZeRO-3: prefetch hides the gathers under compute; without it every gather waits
    off = plan(shape, Layout(gpus=8, global_batch=8, shard="full", shard_prefetch=False))
    on = plans["full"]
    assert off.time_breakdown_s["dp_comm"] == pytest.approx(off.dp_comm_s)  # nothing overlapped
    assert on.dp_comm_s == pytest.approx(off.dp_comm_s) and on.time_breakdown_s["dp_comm"] < 0.7 * on.dp_comm_s
    assert on.step_time_s < off.step_time_s
    layer = max(zero3_units(shape, Layout(gpus=8), 0)[1])  # prefetch holds one more layer
    assert (on.memory_breakdown_gb["gathered"] - off.memory_breakdown_gb["gathered"]) * GIB == 2 * layer
    # more micro-batches: ZeRO-2 and ZeRO-3 move more each step, ZeRO-1 the same
    many = {m: plan(shape, Layout(gpus=8, global_batch=32, shard=m)) for m in ("optimizer", "grads", "full")}
    assert many["optimizer"].dp_traffic_gb == pytest.approx(plans["optimizer"].dp_traffic_gb)
    assert many["optimizer"].step_time_s < many["grads"].step_time_s < many["full"].step_time_s
    one_gpu = plan(shape, Layout(gpus=1, shard="full"))
    assert one_gpu.dp_traffic_gb == 0 and one_gpu.time_breakdown_s["dp_comm"] == 0


def test_search_finds_zero3_only_when_needed():
    shape = card_shape("gpt-8.3b")
    # two 80 GB GPUs at tp 1, pp 1: only ZeRO-3 fits the 8.3B model's states
    ranked = search(shape, Layout(gpus=2, global_batch=16), "a100-80gb", per_layout=False)
    plain = [p for p in ranked if (p.layout["tp"], p.layout["pp"]) == (1, 1)]
    assert plain and {p.layout["shard"] for p in plain} == {"full"}
    # on four, ZeRO-1 fits too; with several micro-batches per step it is faster, and the best setting of
    # tp 1 x pp 1 is not ZeRO-3
    base = Layout(gpus=4, global_batch=64)
    best = {(p.layout["tp"], p.layout["pp"]): p for p in search(shape, base, "a100-80gb", micro_batches=(1,))}
    assert best[(1, 1)].layout["shard"] in ("optimizer", "grads")
    zero3 = search(shape, base, "a100-80gb", micro_batches=(1,), shards=("full",))
    assert {p.layout["shard"] for p in zero3} == {"full"}
    assert {(1, 1): p for p in zero3 if (p.layout["tp"], p.layout["pp"]) == (1, 1)}[(1, 1)].tokens_per_s \
        < best[(1, 1)].tokens_per_s


def test_bad_shard_values_are_plan_errors():
    shape = card_shape("gpt-345m")
    with pytest.raises(PlanError, match="shard 'bogus' is not one of none, optimizer, grads, full"):
        plan(shape, Layout(gpus=2, shard="bogus"))
    with pytest.raises(PlanError, match="optimizer_offload 'gpu' is not one of cpu"):
        plan(shape, Layout(gpus=2, optimizer_offload="gpu"))


# ---- the command line --------------------------------------------------------------------------
def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["plan", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_shard_full(capsys):
    code, out, _ = run_cli(capsys, "gpt-1.3b", "--gpus", "8", "--global-batch", "8", "--shard", "full")
    assert code == 0
    assert "sharding ZeRO-3 (optimizer states, gradients, weights)" in out
    assert "gathered" in out and "prefetch on" in out and "data-parallel traffic:" in out
    code, out, _ = run_cli(capsys, "gpt-1.3b", "--gpus", "8", "--global-batch", "8", "--shard", "full",
                           "--no-shard-prefetch", "--json")
    p = json.loads(out)
    assert code == 0 and p["layout"]["shard"] == "full" and p["layout"]["shard_prefetch"] is False
    assert p["memory_breakdown_gb"]["gathered"] > 0 and p["dp_traffic_gb"] > 0
    code, out, _ = run_cli(capsys, "gpt-1.3b", "--gpus", "1", "--optimizer-offload", "cpu")
    assert code == 0 and "optimizer offload (cpu)" in out and "GiB per GPU" in out
    code, out, _ = run_cli(capsys, "gpt-1.3b", "--gpus", "8", "--distributed-optimizer", "--json")
    assert json.loads(out)["layout"]["shard"] == "optimizer"  # --distributed-optimizer is ZeRO-1


def test_cli_search_has_a_shard_column(capsys):
    code, out, _ = run_cli(capsys, "gpt-8.3b", "--gpus", "2", "--gpu", "a100-80gb", "--global-batch", "16",
                           "--search")
    head, *rows = [line.split() for line in out.splitlines() if line.strip()]
    assert code == 0 and "shard" in head
    col = head.index("shard")
    assert any(r[col] == "full" and r[1:3] == ["1", "1"] for r in rows)  # tp 1 x pp 1: only as ZeRO-3
    code, out, err = run_cli(capsys, "gpt-8.3b", "--gpus", "2", "--gpu", "a100-80gb", "--global-batch", "16",
                             "--search", "--shard", "optimizer", "--json")
    assert code == 0 and all(p["layout"]["shard"] == "optimizer" for p in json.loads(out))
    assert not any((p["layout"]["tp"], p["layout"]["pp"]) == (1, 1) for p in json.loads(out))


@pytest.mark.parametrize("argv,message", [
    (("--shard", "bogus"), "--shard 'bogus' is not one of none, optimizer, grads, full"),
    (("--optimizer-offload", "gpu"), "--optimizer-offload 'gpu' is not one of cpu"),
    (("--shard", "full", "--distributed-optimizer"), "--distributed-optimizer is --shard optimizer (ZeRO-1); drop it"),
    (("--shard", "bogus", "--search"), "--shard 'bogus' is not one of"),
])
def test_bad_shard_input_gives_one_clear_line(capsys, argv, message):
    code, out, err = run_cli(capsys, "gpt-345m", "--gpus", "8", *argv)
    assert code == 2 and out == ""
    assert err.startswith("megazoo plan: error: ") and message in err and err.count("\n") == 1


# ---- against megazoo's buffers ------------------------------------------------------------------
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
@pytest.mark.parametrize("mode", ["grads", "full"])
def test_planner_equals_the_sharded_buffers_at_rest(precision, mode):
    """Odd sizes and small buckets at dp 4: what megazoo's ZeRO-2/3 buffers hold between steps (the
    weights, or this rank's slices of them; the fp32 gradient shard; main weights and Adam) equals
    the planner's parts without the transients (the bucket in flight, the gathered units). Built in
    one process per rank with a stand-in context (no collective runs; the models are dropped, not
    unsharded)."""
    from megazoo.core.optim import AdamWSettings, ConstantScaler, MixedPrecisionOptimizer
    from megazoo.core.parallel.context import ParallelContext

    dp, bucket = 4, 3000
    cfg, builder, shape = odd_model(precision)
    layout = Layout(gpus=dp, seq_length=33, precision=precision, shard=mode, bucket_size=bucket)
    in_flight = 4 * max(p for _, p, _, _ in grad_buckets(shape, layout, 0))
    for rank in range(dp):
        ctx = ParallelContext(dp=dp, rank=rank, world_size=dp)  # no process groups: nothing is reduced
        opt = MixedPrecisionOptimizer(builder.chunks(ParallelContext.single(), 0), ctx,
                                      AdamWSettings(shard=mode, bucket_size=bucket), cfg.compute_dtype,
                                      ConstantScaler(1.0))
        opt.adam.step()  # allocates the moments of this rank's fragments
        held, state = opt.buffers.bytes_held(), opt.state_bytes()
        parts = megazoo_state_parts(shape, layout, 0, dp_rank=rank)
        measured = (held["weights"], held["grads"], state["main_params"] + state["optimizer_state"])
        assert (parts["weights"], parts["grads"] - in_flight, parts["main_weights"] + parts["adam"]) == measured, rank


def test_the_planner_and_the_core_name_the_same_sharding_modes():
    """core/plan stays free of torch, so it keeps its own list: it must be the core's (parallel.shard)."""
    from megazoo.core.parallel.context import SHARD_MODES
    from megazoo.core.plan import zero
    assert zero.SHARD_MODES == SHARD_MODES
