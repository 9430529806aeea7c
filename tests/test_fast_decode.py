"""Decoding's packed products (megazoo.core.nn.decode_linear) equal the layers they stand for, are
taken only where the rule says, follow weight updates, and leave greedy tokens unchanged."""

import pytest
import torch

from megazoo.core.nn import decode_linear as dl
from megazoo.core.parallel import device
from megazoo.core.parallel.context import ParallelContext
from megazoo.zoo.generate import generate
from megazoo.zoo.gpt import TINY, GPTModel


@pytest.fixture()
def model(monkeypatch):
    monkeypatch.delenv("MEGAZOO_DECODE_PRODUCTS", raising=False)
    return GPTModel(TINY["llama-tiny"](), ParallelContext.single()).initialize(3).eval()


def _x(rows, width, seed=0):
    return torch.randn(1, rows, width, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("rows", [1, 2, 4])
def test_column_and_row_products_equal_the_layer(model, rows):
    layer, proj, down = model.layers["0"].attn.qkv, model.layers["0"].attn.proj, model.layers["0"].mlp.fc2
    x = _x(rows, layer.in_features)
    with torch.no_grad():
        torch.testing.assert_close(dl.column_linear(layer, x), layer(x), rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(dl.column_linear(model.head, x), model.head(x), rtol=1e-5, atol=1e-6)
        for row in (proj, down):
            h = _x(rows, row.in_features, seed=1)
            torch.testing.assert_close(dl.row_linear(row, h), row(h), rtol=1e-5, atol=1e-6)
    assert all(m in dl._COPIES for m in (layer, model.head, proj, down)), "each keeps one packed copy"


@pytest.mark.parametrize("rows", [1, 3])
def test_gated_pair_equals_gate_and_up(model, rows):
    mlp = model.layers["1"].mlp
    x = _x(rows, mlp.fc1.in_features)
    with torch.no_grad():
        gate, up = dl.gated_pair(mlp, x)
        torch.testing.assert_close(gate, mlp.gate(x), rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(up, mlp.fc1(x), rtol=1e-5, atol=1e-6)


def test_only_small_products_without_autograd_on_fp32_cpu(model):
    layer = model.layers["0"].attn.qkv
    assert dl.applies(_x(1, layer.in_features), layer.weight) is False, "autograd on: training keeps F.linear"
    with torch.no_grad():
        assert dl.applies(_x(4, layer.in_features), layer.weight)
        assert not dl.applies(_x(5, layer.in_features), layer.weight), "5 tokens and up: F.linear"
        assert not dl.applies(_x(1, layer.in_features).bfloat16(), layer.weight), "dtypes differ: F.linear"
        assert dl.gated_pair(model.layers["0"].mlp, _x(8, layer.in_features)) is None
    with torch.inference_mode():  # no version counter on weights made here: the plain path
        assert not dl.applies(_x(1, layer.in_features), torch.randn(layer.weight.shape))


def test_copy_follows_weight_updates_and_release(model):
    layer = model.layers["0"].attn.qkv
    x = _x(1, layer.in_features)
    with torch.no_grad():
        dl.column_linear(layer, x)
        layer.weight.mul_(2.0)  # an optimizer step: same storage, new version
        torch.testing.assert_close(dl.column_linear(layer, x), layer(x), rtol=1e-5, atol=1e-6)
    dl.release(model)
    assert layer not in dl._COPIES


def test_device_rule(monkeypatch):
    monkeypatch.delenv("MEGAZOO_DECODE_PRODUCTS", raising=False)
    cpu = torch.device("cpu")
    assert device.decode_products(cpu, torch.float32) == "tuned"
    assert device.decode_products(cpu, torch.bfloat16) == "tuned"
    assert device.decode_products(cpu, torch.float16) == "plain"
    assert device.decode_products(torch.device("cuda", 0), torch.float32) == "plain"
    monkeypatch.setenv("MEGAZOO_DECODE_PRODUCTS", "plain")
    assert device.decode_products(cpu, torch.float32) == "plain"


def test_greedy_tokens_unchanged(model, monkeypatch):
    """Batch 1 and batch 3 left-padded (packed products) and the plain path pick the same tokens."""
    prompts = [[5, 6, 7, 8, 9], [11, 12], [20, 21, 22]]
    tuned = [generate(model, [prompts[0]], 8), generate(model, prompts, 8)]
    monkeypatch.setenv("MEGAZOO_DECODE_PRODUCTS", "plain")
    assert tuned == [generate(model, [prompts[0]], 8), generate(model, prompts, 8)]


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_copy_follows_the_trainers_optimizer_steps(tmp_path, monkeypatch, dtype):
    """megazoo's optimizer writes the weights through their flat buffer (the parameters are views of
    it), which leaves the parameters' own version counters alone: it must say they changed, or an
    evaluation between steps with few rows (a pooled head's last layer, generation) computes with a
    stale packed copy."""
    from megazoo.core.train import RunConfig, Trainer

    monkeypatch.delenv("MEGAZOO_DECODE_PRODUCTS", raising=False)
    cfg = RunConfig.load("gpt-tiny", [f"log.dir={tmp_path}", "train.steps=4", "log.progress=false", "log.plot=false",
                                      "checkpoint.save=false", "checkpoint.resume=none", f"precision.dtype={dtype}"])
    t = Trainer(cfg, monitor=False)
    try:
        layer = t.chunks[0].layers["0"].attn.qkv
        x = _x(1, layer.in_features).to(layer.weight.dtype)
        for _ in range(2):
            with torch.no_grad():
                before = layer.weight.detach().clone()
                got = dl.column_linear(layer, x)
                torch.testing.assert_close(got, torch.nn.functional.linear(x, layer.weight, layer.bias))
            t.train_step(t.train_data.step(t.consumed_samples))
            assert not torch.equal(before, layer.weight.detach()), "the step changed the weights"
    finally:
        t.close()
