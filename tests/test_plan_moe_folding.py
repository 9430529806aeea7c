"""Megatron-Core's MoE parallel folding (Layout.etp), its selective recompute modules
(Layout.recompute_modules) and its 2025 FLOP count, each against a hand computation."""

from __future__ import annotations

from dataclasses import replace

import pytest

from megazoo.cli import main
from megazoo.core.plan import Layout, PlanError, plan
from megazoo.core.plan.flops import convention_flops
from megazoo.core.plan.hardware import DEFAULT_EFFICIENCY, get_gpu
from megazoo.core.plan.memory import layer_activation_bytes
from megazoo.core.plan.params import stage_expert_params, stage_params
from megazoo.core.plan.shapes import ModelShape
from megazoo.core.plan.timing import all_to_all_time, layer_time, step_time

# 4 layers, h 1024, 16 heads, 8 experts of hidden size 2048 (GELU, with biases), top-2, every layer MoE
MOE = ModelShape(num_layers=4, hidden_size=1024, num_heads=16, ffn_hidden_size=4096, vocab_size=32000,
                 seq_length=4096, num_experts=8, top_k=2, moe_ffn_hidden_size=2048, dropout=False, name="moe")
H100, EFF = get_gpu("h100"), DEFAULT_EFFICIENCY


def test_folded_expert_grid_by_hand():
    """tp 2 x dp 8 = 16 ranks per stage; ep 8 x etp 1 folded over them leaves expert-dp 2. Each rank
    holds 8 / 8 = 1 expert per layer, unsplit (etp 1); megazoo's layer splits it over tp 2."""
    h, f = 1024, 2048
    folded = Layout(gpus=16, tp=2, ep=8, etp=1, global_batch=16)
    plain = Layout(gpus=16, tp=2, ep=8, global_batch=16)
    assert (folded.expert_tp, folded.expert_dp) == (1, 2)
    assert (plain.expert_tp, plain.expert_dp) == (2, 1)  # dp 8 / ep 8
    assert stage_expert_params(MOE, folded, 0) == 4 * (2 * f * h + f + h)
    assert stage_expert_params(MOE, plain, 0) == 4 * (2 * f // 2 * h + f // 2 + h)
    dense = stage_params(MOE, plain, 0) - stage_expert_params(MOE, plain, 0)
    assert stage_params(MOE, folded, 0) - stage_expert_params(MOE, folded, 0) == dense  # attention: tp 2 as before
    # ep 16 at tp 2 x dp 8: folding allows it (16 ranks), megazoo's layer does not (ep must divide dp 8)
    assert plan(replace(MOE, num_experts=16), Layout(gpus=16, tp=2, ep=16, etp=1, global_batch=16), "h100").fits
    with pytest.raises(PlanError, match="ep 16 does not divide the data-parallel size 8"):
        plan(replace(MOE, num_experts=16), Layout(gpus=16, tp=2, ep=16, global_batch=16), "h100")


def test_folded_all_to_all_by_hand():
    """Folded, each rank dispatches its own sequence-parallel slice (s / tp tokens) to ep ranks etp
    apart: ep 8 at etp 1 is one node, all NVLink. megazoo's layer dispatches all s tokens, its ep
    ranks tp apart: 4 on a node, half the traffic over the network."""
    s, k, h, e = 4096, 2, 1024, 2
    nvlink = H100.nvlink_gb_s * 1e9 * EFF.link_fraction
    net = H100.network_gb_s * 1e9 * EFF.link_fraction
    folded = Layout(gpus=16, tp=2, ep=8, etp=1)
    assert all_to_all_time(MOE, folded, H100, EFF) == pytest.approx((s / 2) * k * h * e * 7 / 8 / nvlink)
    plain = Layout(gpus=16, tp=2, ep=8)
    assert all_to_all_time(MOE, plain, H100, EFF) == pytest.approx(s * k * h * e * 4 / 8 / net)


def test_folded_expert_tp_communication_by_hand():
    """An MoE layer's tensor-parallel traffic: attention's all-gather / reduce-scatter pair per
    direction as a dense layer's, plus, folded, the routed copies' all-gather and reduce-scatter over
    the etp ranks of an expert: none at etp 1, at etp 2 (tp 2) k times the attention's, as megazoo's
    layer pays (with the sequence slices' gather on top)."""
    s, k, h, e, t = 4096, 2, 1024, 2, 2
    bw = H100.nvlink_gb_s * 1e9 * EFF.link_fraction
    tp_one = 2 * (t - 1) / t * e * s * h / bw  # one all-reduce of the layer's activation
    # 4 collectives (2 forward, 2 backward), each half an all-reduce of attention's activation
    assert layer_time(MOE, Layout(gpus=16, tp=2, ep=8, etp=1), H100, EFF, moe=True).tp_comm == pytest.approx(2 * tp_one)
    etp2 = layer_time(MOE, Layout(gpus=16, tp=2, ep=4, etp=2), H100, EFF, moe=True).tp_comm
    assert etp2 == pytest.approx(2 * tp_one * (1 + k))
    plain = layer_time(MOE, Layout(gpus=16, tp=2, ep=4), H100, EFF, moe=True).tp_comm
    assert plain == pytest.approx(2 * tp_one * (1 + k + 0.5))


def test_folded_expert_gradients_reduce_over_expert_dp():
    """Folded at tp 2, dp 8, ep 4, etp 1: expert-dp = 16 / 4 = 4; the expert gradient buckets are
    sharded over 4 ranks, so their optimizer states per rank are 1/4 of the expert parameters'."""
    lay = Layout(gpus=16, tp=2, ep=4, etp=1, global_batch=16, distributed_optimizer=True)
    assert lay.expert_dp == 4
    t = step_time(MOE, lay, H100, EFF)
    assert t.dp_bytes > 0
    full = plan(MOE, replace(lay, distributed_optimizer=False), "h100")
    assert plan(MOE, lay, "h100").memory_breakdown_gb["optimizer"] < full.memory_breakdown_gb["optimizer"] / 3


@pytest.mark.parametrize("shape,layout,message", [
    (MOE, Layout(gpus=16, tp=2, ep=8, etp=4), "etp x ep = 4 x 8 does not divide tp x cp x dp = 2 x 1 x 8 = 16"),
    (replace(MOE, moe_ffn_hidden_size=2050), Layout(gpus=16, tp=2, ep=8, etp=4),
     "the experts' ffn_hidden_size 2050 is not divisible by etp 4"),
    (replace(MOE, num_experts=0), Layout(gpus=16, tp=2, etp=1), "etp 1 needs a mixture-of-experts model"),
    (MOE, Layout(gpus=8, recompute_modules=("layernorm",)), "recompute modules (layernorm) need recompute selective"),
    (MOE, Layout(gpus=8, recompute="selective", recompute_modules=("moe",)), "recompute module 'moe' is not one of "
                                                                            "core_attn, layernorm, moe_act"),
])
def test_bad_folding_and_module_input_has_one_clear_error(shape, layout, message):
    with pytest.raises(PlanError) as exc:
        plan(shape, layout, "h100")
    assert str(exc.value).startswith(message), str(exc.value)


def test_recompute_modules_memory_by_hand():
    """layernorm discards the two norms' outputs (2 e s b h / t with sp), moe_act the experts'
    activation output (k e s b f / t); no modules listed is Megatron-Core's default, core_attn."""
    s, k, h, f, e, t = 4096, 2, 1024, 2048, 2, 2
    lay = Layout(gpus=16, tp=2, ep=8, etp=1, recompute="selective")
    default = layer_activation_bytes(MOE, lay, moe=True)
    assert default == layer_activation_bytes(MOE, replace(lay, recompute_modules=("core_attn",)), moe=True)
    none = layer_activation_bytes(MOE, replace(lay, recompute="none"), moe=True)
    core = 4 * 16 * s / t  # flash attention's fp32 log-sum-exp per head and row, split over tp
    assert none - default == pytest.approx(core)
    norms = layer_activation_bytes(MOE, replace(lay, recompute_modules=("layernorm",)), moe=True)
    assert none - norms == pytest.approx(2 * e * s * h / t)
    act = layer_activation_bytes(MOE, replace(lay, recompute_modules=("moe_act",)), moe=True)
    assert none - act == pytest.approx(k * e * s * f / t)
    assert layer_activation_bytes(MOE, replace(lay, recompute_modules=("moe_act",))) == \
        layer_activation_bytes(MOE, replace(lay, recompute="none"))  # a dense layer has no experts' activation


def test_recompute_modules_time_by_hand():
    """Each module's forward runs again in the backward: the two norms (read + write, per rank) and
    the experts' activation (GELU: read + write of k s f / t elements), at the HBM rate, plus their
    kernels' fixed cost."""
    s, k, h, f, e, t = 4096, 2, 1024, 2048, 2, 2
    hbm = H100.hbm_gb_s * 1e9 * EFF.hbm_fraction
    lay = Layout(gpus=16, tp=2, ep=8, etp=1, recompute="selective")
    base = layer_time(MOE, replace(lay, recompute="none"), H100, EFF, moe=True).seconds
    norms = layer_time(MOE, replace(lay, recompute_modules=("layernorm",)), H100, EFF, moe=True).seconds
    assert norms - base == pytest.approx(2 * 2 * e * s * h / t / hbm + 2 * EFF.kernel_overhead_s)
    act = layer_time(MOE, replace(lay, recompute_modules=("moe_act",)), H100, EFF, moe=True).seconds
    assert act - base == pytest.approx(k * 2 * e * s * f / t / hbm + EFF.kernel_overhead_s)
    both = layer_time(MOE, replace(lay, recompute_modules=("layernorm", "moe_act")), H100, EFF, moe=True).seconds
    assert both - base == pytest.approx((norms - base) + (act - base))


def test_megatron_2025_counts_the_attention_core_causally():
    """Megatron-LM's 2025 count: the 2024 count with the attention core halved ("causal mask (only
    half of the mask is non-zero)"): 6 q B s^2 L less."""
    b, s, q, layers = 8, 4096, 1024, 4
    full = convention_flops(MOE, b, s, 1, "megatron2024")
    assert full - convention_flops(MOE, b, s, 1, "megatron2025") == pytest.approx(6 * q * b * s * s * layers)


def test_folding_and_modules_from_the_cli(capsys):
    argv = ["plan", "gpt-345m", "--num-experts", "8", "--gpus", "16", "--gpu", "h100", "--tp", "2", "--ep", "8",
            "--etp", "1", "--global-batch", "16", "--recompute", "selective", "--recompute-modules", "layernorm",
            "moe_act", "--json"]
    assert main(argv) == 0
    import json

    out = json.loads(capsys.readouterr().out)
    assert out["layout"]["etp"] == 1 and out["layout"]["recompute_modules"] == ["layernorm", "moe_act"]
    assert main(argv[:-1]) == 0
    text = capsys.readouterr().out
    assert "etp 1 x ep 8 folded" in text and "recompute selective (layernorm, moe_act)" in text
    assert main(["plan", "gpt-345m", "--gpus", "16", "--recompute-modules", "layernorm"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("megazoo plan: error: recompute modules (layernorm) need recompute selective")
    assert err.count("\n") == 1
