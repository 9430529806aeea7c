"""Memory, measured: the distributed optimizer's per-rank bytes for fp32 main parameters and Adam
state against 12/d bytes per parameter, and the activation memory each recompute setting keeps."""

import torch

from megazoo.core.parallel.context import ParallelContext
from megazoo.core.parallel.launch import spawn
from megazoo.core.train import Trainer
from megazoo.core.train.memory import saved_activation_bytes
from megazoo.zoo.gpt.builder import build
from tests.train_cases import one_thread, tiny

MODEL = ["model.hidden_size=128", "model.num_layers=2", "model.vocab_size=1000", "train.steps=1",
         "train.eval_iters=1"]


def _optimizer_bytes(root: str) -> dict:
    out = {}
    with one_thread():
        for name, extra in {"bf16 zero": ["precision.dtype=bf16", "optim.distributed=true"],
                            "bf16 plain": ["precision.dtype=bf16"],
                            "fp32 zero": ["optim.distributed=true"]}.items():
            trainer = Trainer(tiny(f"{root}/{name.replace(' ', '-')}", *MODEL, *extra))
            trainer.fit()  # Adam allocates its moments at the first step
            params = sum(p.numel() for p in trainer.optimizer.params)
            b = trainer.optimizer.state_bytes()
            out[name] = {"bytes_per_param": (b["main_params"] + b["optimizer_state"]) / params, **b}
            trainer.close()
    return out


def test_distributed_optimizer_holds_12_over_d_bytes_per_parameter(tmp_path):
    d = 2
    for rank, res in enumerate(spawn(_optimizer_bytes, d, str(tmp_path), timeout=300)):
        zero = res["bf16 zero"]["bytes_per_param"]
        assert abs(zero - 12 / d) <= 0.05 * 12 / d, (rank, res)  # fp32 main + Adam m, v: 12/d
        assert abs(res["bf16 plain"]["bytes_per_param"] - 12) <= 0.05 * 12, (rank, res)
        # an fp32 model updates its own parameters: only Adam's 8/d bytes are extra
        assert res["fp32 zero"]["main_params"] == 0
        assert abs(res["fp32 zero"]["bytes_per_param"] - 8 / d) <= 0.05 * 8 / d, (rank, res)


def test_recompute_reduces_saved_activations():
    torch.manual_seed(0)
    ids, labels = torch.randint(0, 512, (2, 256)), torch.randint(0, 512, (2, 256))
    ctx = ParallelContext.single()
    got = {}
    with one_thread():
        for drop in (0.0, 0.1):
            for recompute in ("none", "selective", "full"):
                b = build({"arch": "gpt", "num_layers": 2, "hidden_size": 64, "num_heads": 4, "vocab_size": 512,
                           "seq_length": 256, "attention_dropout": drop}, recompute)
                got[(recompute, drop)] = saved_activation_bytes(b.chunks(ctx, 1), ids, labels)
    for drop in (0.0, 0.1):
        assert got[("full", drop)] < 0.35 * got[("none", drop)], got
        assert got[("selective", drop)] <= got[("none", drop)], got
    # with attention dropout the core attention keeps s x s probabilities: selective drops them
    assert got[("selective", 0.1)] < 0.6 * got[("none", 0.1)], got
