"""One source for each fact (issue 15): FLOPs and parameter counts come from core/plan for every
builder, the GPU table matches devices by name and memory, one atomic-write helper, one
CheckpointError."""

from __future__ import annotations

import json

import pytest

from megazoo.core.train.models import load_builder

T5_TINY = dict(arch="t5", num_layers=2, num_decoder_layers=3, hidden_size=64, num_heads=4, kv_channels=16,
               ffn_hidden_size=128, vocab_size=300, relative_attention_num_buckets=8, seq_length=64)


def test_t5_flops_by_hand():
    from megazoo.core.data.t5 import decoder_length_for

    b = load_builder(dict(T5_TINY))
    B, se, sd = 3, 64, decoder_length_for(63, "t5")
    assert sd < se  # the fix below matters only where the lengths differ
    h, f, q, k, V, Le, Ld = 64, 128, 64, 64, 384, 2, 3  # q = k = heads * kv_channels; V padded to 128
    mm = lambda tokens, fan_in, fan_out: 6 * tokens * fan_in * fan_out  # noqa: E731 - fwd + bwd GEMM
    encoder_layer = mm(se, h, q + 2 * k) + mm(se, q, h) + mm(se, h, f) + mm(se, f, h) + 12 * q * se * se
    decoder_layer = (mm(sd, h, q + 2 * k) + mm(sd, q, h) + 6 * q * sd * sd      # causal self-attention
                     + mm(sd, h, q) + mm(se, h, 2 * k) + mm(sd, q, h)           # cross: K/V over encoder tokens
                     + 12 * q * sd * se + mm(sd, h, f) + mm(sd, f, h))
    expected = B * (Le * encoder_layer + Ld * decoder_layer + mm(sd, h, V))
    assert b.flops_per_iteration(B, 1) == expected
    assert b.flops_per_iteration(B, 1, seq_length=16) == expected  # samples are always seq_length long


@pytest.mark.parametrize("model", [
    dict(arch="gpt", num_layers=2, hidden_size=64, num_heads=4, vocab_size=300, seq_length=32, adapter_size=8),
    dict(arch="llama", num_layers=2, hidden_size=64, num_heads=8, num_kv_heads=4, ffn_hidden_size=96,
         vocab_size=300, seq_length=32, make_vocab_size_divisible_by=64),
    dict(arch="bert", num_layers=2, hidden_size=64, num_heads=4, vocab_size=300, seq_length=32, post_norm=True,
         num_tokentypes=3),
    dict(arch="bert", num_layers=2, hidden_size=64, num_heads=4, vocab_size=300, seq_length=32,
         task_head="sequence", add_lm_head=False, num_labels=3, adapter_size=8),
    dict(T5_TINY, tie_embeddings=False),
])
def test_parameter_count_is_the_model(model):
    """core/plan's count (from the builder's shape) equals the parameters the builder's model has."""
    from megazoo.core.parallel.context import ParallelContext

    b = load_builder(dict(model))
    built = b.chunks(ParallelContext.single(), 0, device="meta")[0]
    assert b.num_parameters(1) == sum(p.numel() for p in built.parameters())


def test_bert_flops_against_gpt():
    """BERT: GPT's formula with the attention scores counted in full (not causally) plus the
    masked-LM dense layer; a task model without the LM head drops that and the vocabulary."""
    sizes = dict(num_layers=2, hidden_size=64, num_heads=4, vocab_size=300, seq_length=32)
    gpt = load_builder(dict(arch="gpt", activation="gelu_exact", **sizes)).flops_per_iteration(2, 1)
    B, s, h, q, L, V = 2, 32, 64, 64, 2, 384
    bert = load_builder(dict(arch="bert", **sizes))
    assert bert.flops_per_iteration(2, 1) == gpt + 6 * q * B * s * s * L + 6 * B * s * h * h
    task = load_builder(dict(arch="bert", task_head="token", add_lm_head=False, **sizes))
    assert task.flops_per_iteration(2, 1) == gpt + 6 * q * B * s * s * L - 6 * B * s * h * V


def test_padded_vocab_has_one_definition():
    from megazoo.core.parallel.embedding import padded_vocab_size
    from megazoo.core.plan.params import padded_vocab

    assert padded_vocab_size is padded_vocab
    assert padded_vocab(50257, 1) == 50304 and padded_vocab(50257, 8) == 51200


@pytest.mark.parametrize("name,memory_gib,entry,bf16", [
    ("NVIDIA H100 PCIe", 79.2, "h100-pcie", 756.0),
    ("NVIDIA H100 80GB HBM3", 79.1, "h100", 989.0),
    ("NVIDIA H100 NVL", 93.1, "h100-nvl", 835.0),
    ("NVIDIA H200", 139.8, "h200", 989.0),
    ("NVIDIA B200", 178.4, "b200", 2250.0),
    ("NVIDIA A100-SXM4-40GB", 39.4, "a100-40gb", 312.0),
    ("NVIDIA A100-SXM4-80GB", 79.2, "a100-80gb", 312.0),
    ("NVIDIA A10", 22.0, "a10", 125.0),
])
def test_gpu_table_matches_devices_by_name_and_memory(name, memory_gib, entry, bf16):
    from megazoo.core.plan.hardware import gpu_for_device, peak_tflops

    gpu = gpu_for_device(name, memory_gib)
    assert gpu.name == entry and peak_tflops(gpu, "bf16") == bf16 == peak_tflops(gpu, "fp16")
    assert 0 < peak_tflops(gpu, "fp32") < bf16


@pytest.mark.parametrize("name", ["NVIDIA A10G", "NVIDIA L40S", "NVIDIA GH200 480GB", "AMD Instinct MI300X"])
def test_unknown_devices_are_measured_not_guessed(name):
    from megazoo.core.plan.hardware import gpu_for_device

    assert gpu_for_device(name, 40.0) is None  # no substring match: "A10" is not "A10G", "L4" not "L40S"


def test_trainer_peak_comes_from_the_table(monkeypatch):
    import torch

    from megazoo.core.train import flops

    monkeypatch.delenv("MEGAZOO_PEAK_TFLOPS", raising=False)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda d=None: "NVIDIA H100 PCIe")
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda d=None: type("P", (), {"total_memory": 80 * 10**9}))
    peak, source = flops.peak_flops(torch.bfloat16, torch.device("cuda", 0), world_size=2)
    assert peak == 2 * 756e12 and "H100 PCIe" in source


def test_atomic_writes(tmp_path):
    from megazoo.core.fs import atomic_file, write_json_atomic, write_text_atomic

    path = tmp_path / "a.json"
    write_json_atomic(path, {"x": 1}, fsync=True)
    assert json.loads(path.read_text()) == {"x": 1} and path.read_text().endswith("\n")
    write_text_atomic(path, "new")
    with pytest.raises(RuntimeError):
        with atomic_file(path) as f:
            f.write(b"half")
            raise RuntimeError("killed mid-write")
    assert path.read_text() == "new" and [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_one_checkpoint_error(tmp_path):
    from megazoo.core.checkpoint import CheckpointError
    from megazoo.zoo import io

    assert io.CheckpointError is CheckpointError and issubclass(CheckpointError, ValueError)
    with pytest.raises(CheckpointError, match="no model.yaml"):
        io.read_meta(tmp_path)
