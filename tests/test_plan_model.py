"""The planner's counting: parameters, model states, activations (Korthikanti et al. 2022), FLOPs."""

from __future__ import annotations

import pytest

from megazoo.core.plan import Layout, ModelShape, model_flops, narayanan_flops, padded_vocab, stage_params, total_params
from megazoo.core.plan.memory import inflight_chunks, layer_activation_bytes, stage_memory, state_bytes
from megazoo.core.plan.params import stage_layers, stage_shapes

GPT = ModelShape(num_layers=8, hidden_size=256, num_heads=8, ffn_hidden_size=1024, vocab_size=1000, seq_length=128)
MTNLG = ModelShape(num_layers=105, hidden_size=20480, num_heads=128, ffn_hidden_size=81920, vocab_size=51200,
                   seq_length=2048)


def test_gpt_parameters_follow_narayanan_eq2():
    # P = 12 l h^2 (1 + 13/(12h) + (V+s)/(12 l h)) counts the layers, embeddings and positions; the
    # final LayerNorm (2h) comes on top.
    l, h, v, s = 105, 20480, 51200, 2048
    assert total_params(MTNLG) == 12 * l * h * h + 13 * l * h + (v + s) * h + 2 * h
    assert abs(total_params(MTNLG) / 1e9 - 529.6) < 0.05  # the 529.6B of Narayanan et al. Table 1


def test_published_parameter_counts():
    smollm2 = ModelShape(num_layers=30, hidden_size=576, num_heads=9, num_kv_heads=3, ffn_hidden_size=1536,
                         vocab_size=49152, seq_length=2048, activation="swiglu", norm="rmsnorm", bias=False,
                         position="rope", arch="llama")
    assert total_params(smollm2) == 134_515_008  # SmolLM2-135M as transformers counts it
    t5 = ModelShape(num_layers=12, num_decoder_layers=12, hidden_size=768, num_heads=12, ffn_hidden_size=3072,
                    vocab_size=32128, seq_length=512, activation="relu", norm="rmsnorm", bias=False,
                    position="relative", arch="t5")
    assert total_params(t5) == 222_903_552  # t5-base


def test_stages_partition_the_model():
    layout = Layout(gpus=8, tp=1, pp=4, vpp=2)
    covered = sorted(r for st in range(4) for r in stage_layers(GPT, layout, st))
    assert covered == [(i, i + 1) for i in range(8)]
    # with pp > 1 the last stage holds its own copy of the tied word embedding
    copy = padded_vocab(GPT.vocab_size, 1) * GPT.hidden_size
    assert sum(stage_params(GPT, layout, st) for st in range(4)) == total_params(GPT) + copy


def test_tensor_parallel_split():
    full = stage_shapes(GPT, Layout(gpus=1), 0)
    split = stage_shapes(GPT, Layout(gpus=4, tp=4), 0)
    assert len(full) == len(split)
    # the embedding rows, qkv and fc1 rows, proj and fc2 columns are split by 4; norms and
    # row-parallel biases are replicated
    assert split[0] == (padded_vocab(GPT.vocab_size, 4) // 4, 256)
    assert (3 * 256 // 4, 256) in split and (256, 1024 // 4) in split and (256,) in split


@pytest.mark.parametrize("precision,dist,expected", [
    ("bf16", False, 18.0), ("bf16", True, 6 + 12 / 8), ("fp32", False, 16.0), ("fp32", True, 8 + 8 / 8)])
def test_state_bytes_per_parameter(precision, dist, expected):
    params = 8_000_000  # DESIGN.md section 5: 18 vs 6 + 12/d (bf16), 16 vs 8 + 8/d (fp32), d = 8
    assert sum(state_bytes(params, precision, dist, dp=8)) / params == expected


def test_activations_follow_korthikanti():
    s, b, h, a = 2048, 2, 20480, 128
    t = 8
    sbh = s * b * h
    base = dict(gpus=8, micro_batch=b, flash_attention=False)
    one = layer_activation_bytes(MTNLG, Layout(**base, sp=False))
    assert one == pytest.approx(sbh * (34 + 5 * a * s / h))
    tp = layer_activation_bytes(MTNLG, Layout(**base, tp=t, sp=False))
    assert tp == pytest.approx(sbh * (10 + 24 / t + 5 * a * s / (h * t)))
    sp = layer_activation_bytes(MTNLG, Layout(**base, tp=t, sp=True))
    assert sp == pytest.approx(sbh / t * (34 + 5 * a * s / h))
    selective = layer_activation_bytes(MTNLG, Layout(**base, tp=t, sp=True, recompute="selective"))
    assert selective == pytest.approx(sbh / t * 34)
    full = layer_activation_bytes(MTNLG, Layout(**base, tp=t, sp=True, recompute="full"))
    assert full == pytest.approx(2 * sbh / t)


def test_inflight_micro_batches():
    one_f_one_b = Layout(gpus=16, pp=4, global_batch=32)
    assert [inflight_chunks(one_f_one_b, i) for i in range(4)] == [4, 3, 2, 1]
    assert inflight_chunks(Layout(gpus=16, pp=4, global_batch=8), 0) == 2  # at most m micro-batches
    # interleaved: the first stage holds L (1 + (p-1)/(p v)) layers' worth (Korthikanti et al.)
    p, v, layers = 4, 2, 8
    inter = Layout(gpus=16, pp=p, vpp=v, global_batch=64)
    layers_held = inflight_chunks(inter, 0) * layers // (p * v)
    assert layers_held == layers * (1 + (p - 1) / (p * v))


def test_first_stage_holds_embedding_and_most_activations():
    layout = Layout(gpus=4, pp=4, global_batch=16)
    mems = [stage_memory(GPT, layout, i, 0.0) for i in range(4)]
    assert mems[0].activations > mems[1].activations > mems[2].activations
    assert mems[0].params > mems[1].params


def test_model_flops_is_the_design_formula():
    shape = ModelShape(num_layers=4, hidden_size=96, num_heads=6, num_kv_heads=2, ffn_hidden_size=256,
                       vocab_size=500, seq_length=64, activation="swiglu", arch="llama", position="rope")
    b, s, h, f, layers = 3, 64, 96, 256, 4
    q, k, v = 96, 32, padded_vocab(500, 1)
    expected = b * s * (6 * h * f * 3 * layers + 6 * (h * (q + 2 * k) + q * h) * layers + 6 * h * v) + 6 * q * b * s * s * layers
    assert model_flops(shape, b, s) == expected


def test_model_flops_agrees_with_the_zoo():
    from megazoo.zoo.gpt.config import GPTConfig, flops_per_iteration

    cfg = GPTConfig(num_layers=4, hidden_size=96, num_heads=6, num_kv_heads=2, ffn_hidden_size=256,
                    vocab_size=500, seq_length=64, activation="swiglu")
    shape = ModelShape(num_layers=4, hidden_size=96, num_heads=6, num_kv_heads=2, ffn_hidden_size=256,
                       vocab_size=500, seq_length=64, activation="swiglu")
    assert model_flops(shape, 5, 64, tp=2) == flops_per_iteration(cfg, 5, 64, tp=2)


def test_narayanan_flops_of_mtnlg():
    # scaling.md: 1.69e19 FLOPs per iteration, 125.7 TFLOP/s per GPU at 60.1 s on 2240 GPUs
    flops = narayanan_flops(MTNLG, 1920, 2048)
    assert flops == pytest.approx(1.69e19, rel=0.005)
    assert flops / 60.1 / 2240 / 1e12 == pytest.approx(125.7, abs=0.1)


@pytest.mark.parametrize("layout", [Layout(gpus=1), Layout(gpus=8, tp=2, pp=4), Layout(gpus=16, tp=2, pp=2, vpp=2)])
def test_stage_params_is_the_sum_of_stage_shapes(layout):
    from math import prod

    for stage in range(layout.pp):
        assert stage_params(GPT, layout, stage) == sum(prod(s) for s in stage_shapes(GPT, layout, stage))
