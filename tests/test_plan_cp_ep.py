"""The planner with context parallelism (cp) and mixture of experts with expert parallelism (ep):
parameters and FLOPs against the real MoE model and hand counts, memory and step time as cp and ep
grow, and the one clear error of each bad layout."""

from __future__ import annotations

from dataclasses import replace
from math import prod

import pytest
import torch

from megazoo.core.plan import Layout, ModelShape, PlanError, model_flops, plan, search, total_params
from megazoo.core.plan.flops import convention_flops
from megazoo.core.plan.hardware import DEFAULT_EFFICIENCY, get_gpu
from megazoo.core.plan.memory import layer_activation_bytes, stage_memory
from megazoo.core.plan.params import active_params, padded_vocab, stage_expert_params, stage_params, stage_shapes
from megazoo.core.plan.timing import all_to_all_time, cp_bandwidth, layer_forward, ring_exposed, step_time
from megazoo.core.plan.validation import mixtral_8x7b

LLAMA = ModelShape(num_layers=8, hidden_size=1024, num_heads=16, num_kv_heads=4, ffn_hidden_size=2816,
                   vocab_size=32000, seq_length=8192, activation="swiglu", tie_embeddings=False, arch="llama",
                   position="rope", norm="rmsnorm", bias=False, dropout=False)
MOE = replace(LLAMA, num_experts=8, top_k=2, moe_every=2, moe_ffn_hidden_size=1408)


def tiny_moe(**kw):
    from megazoo.zoo.gpt.config import GPTConfig

    base = dict(num_layers=4, hidden_size=32, num_heads=4, ffn_hidden_size=48, vocab_size=100, seq_length=16,
                moe=dict(num_experts=4, top_k=2, every=2, ffn_hidden_size=40))
    return GPTConfig(**{**base, **kw})


CONFIGS = {"llama-like": dict(activation="swiglu", bias=False, num_kv_heads=2, norm="rmsnorm", position="rope",
                              tie_embeddings=False),
           "gpt-like": dict(activation="gelu", bias=True)}


# ---- parameters and FLOPs ----------------------------------------------------------------------
@pytest.mark.parametrize("name", CONFIGS)
def test_moe_parameters_equal_the_real_model(name):
    from megazoo.zoo.gpt.config import num_parameters
    from megazoo.zoo.gpt.model import GPTModel

    cfg = tiny_moe(**CONFIGS[name])
    model = GPTModel(cfg)
    assert total_params(cfg.shape()) == num_parameters(cfg) == sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("tp,ep,dp", [(1, 2, 2), (2, 2, 2), (2, 4, 4)])
def test_moe_rank_shapes_equal_the_real_model(tp, ep, dp):
    """One rank of a tp x ep layout, built on the meta device: the same tensors as the planner's, and
    the expert ones (marked `expert`, reduced over the expert-dp ranks) are the planner's experts."""
    from megazoo.core.parallel.context import ParallelContext
    from megazoo.zoo.gpt.model import GPTModel

    cfg = tiny_moe(**CONFIGS["gpt-like"])
    ctx = ParallelContext(tp=tp, dp=dp, ep=ep, sp=tp > 1, rank=0, world_size=tp * dp, device=torch.device("meta"))
    with torch.device("meta"):
        model = GPTModel(cfg, ctx)
    layout = Layout(gpus=tp * dp, tp=tp, ep=ep)
    shape = cfg.shape()
    real = sorted(tuple(p.shape) for p in model.parameters())
    assert real == sorted(stage_shapes(shape, layout, 0))
    experts = sorted(tuple(p.shape) for p in model.parameters() if getattr(p, "expert", False))
    assert experts == sorted(stage_shapes(shape, layout, 0, experts=True))
    assert sum(prod(s) for s in experts) == stage_expert_params(shape, layout, 0)
    assert sum(prod(s) for s in real) == stage_params(shape, layout, 0)


def test_active_parameters_by_hand_and_mixtral():
    cfg = tiny_moe(**CONFIGS["gpt-like"])
    h, f, e, k = 32, 40, 4, 2
    expert = h * f + f + f * h + h  # fc1 and fc2 with biases
    # layer 1 and 3 are MoE layers (every 2): each runs k of its e experts per token
    assert active_params(cfg.shape()) == total_params(cfg.shape()) - 2 * (e - k) * expert
    # Mixtral 8x7B, as Mistral AI states it: 46.7B parameters in all, 12.9B used per token
    mixtral = mixtral_8x7b()
    assert round(total_params(mixtral) / 1e9, 1) == 46.7
    assert round(active_params(mixtral) / 1e9, 1) == 12.9
    assert active_params(LLAMA) == total_params(LLAMA)  # dense: all of them


def test_moe_flops_by_hand():
    b, s, h, f, fe, layers, n_moe, experts, k = 2, 8192, 1024, 2816, 1408, 8, 4, 8, 2
    q, kv, v = 1024, 256, padded_vocab(32000, 1)
    attn = 6 * (h * (q + 2 * kv) + q * h) * layers
    mlp = 6 * h * f * 3 * (layers - n_moe) + (6 * h * fe * 3 * k + 6 * h * experts) * n_moe  # router counted
    expected = b * s * (attn + mlp + 6 * h * v) + 6 * q * b * s * s * layers
    assert model_flops(MOE, b, s) == expected
    # the zoo's flops_per_iteration of a GPTConfig with model.moe is the same count
    from megazoo.zoo.gpt.config import flops_per_iteration

    cfg = tiny_moe()
    assert flops_per_iteration(cfg, 3) == model_flops(cfg.shape(), 3)


def test_megatron_convention_is_megatron_lms_moe_formula():
    """Megatron-LM's num_floating_point_operations (2024): 12 B s L h^2 [(1 + g/a + s/h) q/h
    + (f/h) topk x 3/2] + 6 B s h V for Mixtral (every layer MoE, SwiGLU, no router term)."""
    m = mixtral_8x7b()
    b, s, layers, h, a, g, f, k, v = 256, 4096, 32, 4096, 32, 8, 14336, 2, 32000
    expected = 12 * b * s * layers * h * h * ((1 + g / a + s / h) + f / h * k * 1.5) + 6 * b * s * h * v
    assert convention_flops(m, b, s, 1, "megatron2024") == pytest.approx(expected, rel=1e-12)


# ---- memory ------------------------------------------------------------------------------------
@pytest.mark.parametrize("flash", [True, False])
def test_activations_per_rank_scale_with_cp(flash):
    one = layer_activation_bytes(LLAMA, Layout(gpus=8, flash_attention=flash))
    for cp in (2, 4):
        got = layer_activation_bytes(LLAMA, Layout(gpus=8, cp=cp, flash_attention=flash))
        assert got == pytest.approx(one / cp)  # s/cp tokens; unfused: s/cp x s scores
    # a whole stage: the layers' activations / cp plus the ring's two K/V chunks in flight
    mems = {cp: stage_memory(LLAMA, Layout(gpus=8, cp=cp), 0, 0.0) for cp in (1, 2, 4)}
    e, s, kv = 2, 8192, 256
    for cp in (2, 4):
        ring = 2 * 2 * e * (s // cp) * kv
        assert mems[cp].activations == pytest.approx(mems[1].activations / cp + ring, rel=1e-6)
        assert (mems[cp].weights, mems[cp].grads, mems[cp].optimizer) == \
            (mems[1].weights, mems[1].grads, mems[1].optimizer)  # cp replicates the model


def test_distributed_optimizer_shards_over_dp_times_cp():
    dense = stage_memory(LLAMA, Layout(gpus=8, distributed_optimizer=True), 0, 0.0)  # dp 8
    ring = stage_memory(LLAMA, Layout(gpus=8, cp=2, distributed_optimizer=True), 0, 0.0)  # dp 4 x cp 2
    assert ring.optimizer == dense.optimizer and ring.grads == dense.grads
    alone = stage_memory(LLAMA, Layout(gpus=4, distributed_optimizer=True), 0, 0.0)  # dp 4
    assert ring.optimizer < alone.optimizer


def test_expert_memory_scales_with_ep():
    mems = {ep: stage_memory(MOE, Layout(gpus=8, ep=ep), 0, 0.0) for ep in (1, 2, 4, 8)}
    experts = {ep: stage_expert_params(MOE, Layout(gpus=8, ep=ep), 0) for ep in mems}
    for ep in (2, 4, 8):
        assert experts[ep] * ep == experts[1]  # num_experts / ep experts per rank
        assert mems[ep].params == mems[1].params - experts[1] + experts[ep]
        assert mems[ep].weights < mems[ep // 2 if ep > 2 else 1].weights
        assert mems[ep].activations == mems[1].activations  # ep moves tokens, it does not split them
    # the distributed optimizer shards expert states over dp / ep ranks: per rank they stay put
    sharded = {ep: stage_memory(MOE, Layout(gpus=8, ep=ep, distributed_optimizer=True), 0, 0.0) for ep in (1, 8)}
    dense = stage_params(MOE, Layout(gpus=8), 0) - experts[1]
    expert_states_1 = sharded[1].optimizer - 12 * dense / 8
    expert_states_8 = sharded[8].optimizer - 12 * dense / 8
    assert expert_states_8 == pytest.approx(expert_states_1, rel=1e-3)
    assert sharded[8].weights < sharded[1].weights


def test_moe_activations_follow_top_k():
    dense = layer_activation_bytes(MOE, Layout(gpus=1))
    moe = layer_activation_bytes(MOE, Layout(gpus=1), moe=True)
    top1 = layer_activation_bytes(replace(MOE, top_k=1), Layout(gpus=1), moe=True)
    dropped = layer_activation_bytes(replace(MOE, capacity_factor=0.5), Layout(gpus=1), moe=True)
    assert moe > top1 and dropped == pytest.approx(top1, rel=0.05) and moe != dense


# ---- step time ---------------------------------------------------------------------------------
def test_ring_traffic_overlapped_or_not():
    gpu, eff = get_gpu("h100"), DEFAULT_EFFICIENCY
    short = replace(LLAMA, seq_length=1024)
    lay = Layout(gpus=8, cp=4, seq_length=1024, cp_overlap=False)
    _, attn, _ = layer_forward(short, lay, gpu, eff)
    send = 2 * 2 * (1024 // 4) * 256 / cp_bandwidth(lay, gpu, eff)  # K and V of the local chunk, bf16
    fwd, bwd = ring_exposed(short, lay, gpu, eff, attn, 2.5 * attn)
    # cp - 1 steps; backward sends dK, dV too, and one last shift brings them home
    assert fwd == pytest.approx(3 * send) and bwd == pytest.approx(3 * 2 * send + send)
    over = ring_exposed(short, replace(lay, cp_overlap=True), gpu, eff, attn, 2.5 * attn)
    assert over[0] == pytest.approx(3 * max(0.0, send - attn / 4))
    # at 128k tokens the attention of a chunk outlasts its send: only the last dK/dV shift is exposed
    long = Layout(gpus=8, cp=4, seq_length=131072)
    _, attn, _ = layer_forward(LLAMA, long, gpu, eff)
    last = 2 * 2 * (131072 // 4) * 256 / cp_bandwidth(long, gpu, eff)
    assert ring_exposed(LLAMA, long, gpu, eff, attn, 2.5 * attn) == (0.0, pytest.approx(last))
    hidden = step_time(LLAMA, long, gpu, eff).cp_comm
    assert step_time(LLAMA, replace(long, cp_overlap=False), gpu, eff).cp_comm > 3 * hidden > 0


def test_all_to_all_volume_and_links():
    gpu, eff = get_gpu("h100"), DEFAULT_EFFICIENCY
    lay = Layout(gpus=8, ep=8, seq_length=4096)
    volume = 4096 * 2 * 1024 * 2  # tokens x top_k x h x bf16 bytes
    nvlink = gpu.nvlink_gb_s * 1e9 * eff.link_fraction
    assert all_to_all_time(MOE, lay, gpu, eff) == pytest.approx(volume * 7 / 8 / nvlink)
    # across 2 nodes (tp 2 puts the 8 ep ranks 2 apart: 4 per node), half the traffic takes the network
    wide = Layout(gpus=16, tp=2, ep=8, seq_length=4096)
    net = gpu.network_gb_s * 1e9 * eff.link_fraction
    assert all_to_all_time(MOE, wide, gpu, eff) == pytest.approx(volume * 4 / 8 / net)
    # 4 all-to-alls per MoE layer and micro-batch (dispatch, combine; forward, backward), 4 MoE layers
    t = step_time(MOE, replace(lay, global_batch=16), gpu, eff)
    assert t.ep_comm == pytest.approx(2 * 4 * 4 * all_to_all_time(MOE, lay, gpu, eff))
    assert step_time(MOE, Layout(gpus=8, seq_length=4096), gpu, eff).ep_comm == 0.0


def test_plan_reports_cp_and_ep():
    p = plan(MOE, Layout(gpus=16, cp=2, ep=4, global_batch=16), "h100")
    assert (p.layout["cp"], p.layout["ep"], p.dp) == (2, 4, 8)
    assert p.params_active < p.params_total
    assert p.time_breakdown_s["cp_comm_in_compute"] >= 0 and p.time_breakdown_s["ep_comm_in_compute"] > 0
    assert "cp_comm_in_compute" not in plan(LLAMA, Layout(gpus=8), "h100").time_breakdown_s


def test_search_over_cp_and_ep():
    shape = replace(MOE, seq_length=32768)
    base = Layout(gpus=16, global_batch=16)
    ranked = search(shape, base, "h100", cps=(1, 2, 4), eps=(1, 2, 8), micro_batches=(1,), recomputes=("selective",))
    seen = {(p.layout["cp"], p.layout["ep"]) for p in ranked}
    assert {c for c, _ in seen} == {1, 2, 4} and {e for _, e in seen} == {1, 2, 8}
    assert [p.tokens_per_s for p in ranked] == sorted((p.tokens_per_s for p in ranked), reverse=True)
    assert all(p.fits for p in ranked)
    plain = search(shape, base, "h100", micro_batches=(1,), recomputes=("selective",))
    assert {(p.layout["cp"], p.layout["ep"]) for p in plain} == {(1, 1)}  # only when asked


# ---- bad input ---------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,layout,message", [
    (LLAMA, Layout(gpus=6, cp=3), "seq_length 8192 is not divisible by 2 x cp = 6 (context parallelism splits "
                                  "the sequence into 2 x cp chunks"),
    (LLAMA, Layout(gpus=12, tp=2, cp=3, seq_length=8188), "seq_length 8188 is not divisible by 2 x cp = 6"),
    (MOE, Layout(gpus=6, ep=3), "ep 3 does not divide num_experts 8"),
    (MOE, Layout(gpus=8, cp=2, ep=8), "ep 8 does not divide the data-parallel size 4"),
    (LLAMA, Layout(gpus=8, ep=2), "ep 2 needs a mixture-of-experts model"),
    (replace(MOE, top_k=9), Layout(gpus=8), "top_k 9 is larger than num_experts 8"),
    (LLAMA, Layout(gpus=12, tp=2, cp=2, pp=2), "12 GPUs are not divisible by tp x cp x pp = 2 x 2 x 2 = 8"),
])
def test_bad_cp_ep_layouts_have_one_clear_error(shape, layout, message):
    with pytest.raises(PlanError) as exc:
        plan(shape, layout, "h100")
    assert str(exc.value).startswith(message), str(exc.value)
