"""A parameter's `lr_scale` attribute scales the schedule's learning rate for it (the retrieval
reader's query tower uses it: task.retriever_lr_scale): a step with scale 0.5 at lr 0.02 moves it
exactly as a step at lr 0.01 does and the other parameters as at 0.02 (AdamW's decay scaled
alike); scale 0 leaves it alone for two steps while the rest trains."""

import torch
from torch import nn

from megazoo.core.optim import AdamWSettings, ConstantScaler, MixedPrecisionOptimizer
from megazoo.core.parallel.context import ParallelContext


def train(lr: float, scales: dict, steps: int = 1) -> dict:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    for name, p in model.named_parameters():
        if name in scales:
            p.lr_scale = scales[name]
    opt = MixedPrecisionOptimizer([model], ParallelContext.single(), AdamWSettings(lr=lr, weight_decay=0.1),
                                  torch.float32, ConstantScaler(1.0))
    x = torch.randn(16, 4, generator=torch.Generator().manual_seed(1))
    for _ in range(steps):
        opt.zero_grad(1)
        model(x).pow(2).mean().backward()
        opt.finish_grad_sync()
        opt.step(lr)
    out = {n: p.detach().clone() for n, p in model.named_parameters()}
    opt.close()
    return out


def test_lr_scale_scales_the_rate_of_its_parameter_only():
    start = train(0.0, {})
    full, half = train(0.02, {}), train(0.01, {})
    mixed = train(0.02, {"0.weight": 0.5, "0.bias": 0.5})
    for name in ("0.weight", "0.bias"):
        torch.testing.assert_close(mixed[name], half[name], rtol=0, atol=1e-7)
        assert not torch.allclose(mixed[name], full[name])
    for name in ("2.weight", "2.bias"):
        torch.testing.assert_close(mixed[name], full[name], rtol=0, atol=1e-7)
        assert not torch.allclose(mixed[name], half[name])
    frozen = train(0.02, {"2.weight": 0.0, "2.bias": 0.0}, steps=2)
    assert torch.equal(frozen["2.weight"], start["2.weight"]) and torch.equal(frozen["2.bias"], start["2.bias"])
    assert not torch.allclose(frozen["0.weight"], start["0.weight"])
