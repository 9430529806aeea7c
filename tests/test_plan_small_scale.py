"""At small scale the planner must equal what megazoo really holds on a CPU."""

from __future__ import annotations

import pytest
import torch

from megazoo.core.plan import Layout
from megazoo.core.plan.memory import layer_activation_bytes, stage_memory
from megazoo.zoo.cards import card_shape, load_card


def saved_bytes(model, ids) -> int:
    """Distinct storages autograd keeps for backward after one forward pass, parameters excluded."""
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen: dict[int, int] = {}

    def pack(t):
        st = t.untyped_storage()
        if st.data_ptr() not in params:
            seen[st.data_ptr()] = st.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(ids, labels=ids).sum().backward()
    return sum(seen.values())


@pytest.mark.parametrize("recompute", ["none", "full"])
def test_activation_estimate_matches_the_real_gpt_tiny(recompute):
    from megazoo.zoo.cli_plan import gpt_config
    from megazoo.zoo.gpt.model import GPTModel

    card = load_card("gpt-tiny")
    card["model"]["vocab_size"] = 1000  # gpt-tiny's layers with a small vocabulary, to stay fast
    b, s = 2, 64
    cfg = gpt_config(card, s)
    cfg.recompute = recompute
    torch.manual_seed(0)
    model = GPTModel(cfg).initialize(0).train()
    measured = saved_bytes(model, torch.randint(0, cfg.vocab_size, (b, s)))
    shape = card_shape(card)
    shape = type(shape)(**{**shape.__dict__, "dropout": cfg.dropout > 0})
    layout = Layout(gpus=1, micro_batch=b, seq_length=s, precision="fp32", recompute=recompute)
    planned = stage_memory(shape, layout, 0, 0.0).activations
    if recompute == "full":  # the planner's peak adds the layer being recomputed during backward
        planned -= layer_activation_bytes(shape, layout, recompute="none")
    assert planned == pytest.approx(measured, rel=0.20), (planned, measured)


# gpt-tiny at TP=2 x PP=2 (no data parallelism) and, for the distributed optimizer, TP=2 x PP=1 x DP=2
STATE_CASES = {
    "tp2 pp2 fp32": (["parallel.tp=2", "parallel.pp=2"], dict(tp=2, pp=2, precision="fp32")),
    "tp2 pp2 bf16": (["parallel.tp=2", "parallel.pp=2", "precision.dtype=bf16"], dict(tp=2, pp=2, precision="bf16")),
    "tp2 dp2 zero fp32": (["parallel.tp=2", "optim.distributed=true"],
                          dict(tp=2, distributed_optimizer=True, precision="fp32")),
    "tp2 dp2 zero bf16": (["parallel.tp=2", "optim.distributed=true", "precision.dtype=bf16"],
                          dict(tp=2, distributed_optimizer=True, precision="bf16")),
    "tp2 dp2 zero bf16, small buckets": (["parallel.tp=2", "optim.distributed=true", "precision.dtype=bf16",
                                          "optim.bucket_size=5000"],
                                         dict(tp=2, distributed_optimizer=True, precision="bf16", bucket_size=5000)),
}
STATE_RUN = ["train.steps=2", "train.global_batch=4", "train.micro_batch=2", "model.seq_length=32",
             "train.eval_iters=1", "log.progress=false", "log.plot=false", "log.tensorboard=false",
             "checkpoint.save=false", "checkpoint.resume=none"]


def _measured_state_bytes(root: str) -> dict:
    """Rank function: build a Trainer per case, run two steps, return what this rank holds."""
    from megazoo.core.train import RunConfig, Trainer
    from tests.train_cases import one_thread

    out = {}
    with one_thread():
        for name, (overrides, _) in STATE_CASES.items():
            cfg = RunConfig.load("gpt-tiny", STATE_RUN + overrides + [f"log.dir={root}/{len(out)}"])
            trainer = Trainer(cfg, monitor=False)
            try:
                for _ in range(2):  # Adam allocates its moments at the first step
                    trainer.train_step(trainer.train_data.step(trainer.consumed_samples))
                storages = {p.untyped_storage().data_ptr(): p.untyped_storage().nbytes()
                            for c in trainer.chunks for p in c.parameters()}
                buf = trainer.optimizer.buffers
                grads = buf.main_grad.untyped_storage().nbytes()
                if buf.grad_shard is not buf.main_grad:  # the distributed optimizer's reduced shard
                    grads += buf.grad_shard.untyped_storage().nbytes()
                state = trainer.optimizer.state_bytes()
                out[name] = {"weights": sum(storages.values()), "grads": grads,
                             "optimizer": state["main_params"] + state["optimizer_state"],
                             "stage": trainer.ctx.pp_rank, "dp_rank": trainer.ctx.dp_rank,
                             "model": trainer.builder.to_dict()}
            finally:
                trainer.close()
    return out


def test_planner_state_bytes_equal_a_measured_cpu_run(tmp_path):
    """For gpt-tiny at TP=2 x PP=2 (and TP=2 x DP=2 for the distributed optimizer), bf16 and fp32:
    run two steps on CPU and compare, per rank, the planner's weight / gradient / optimizer-state
    bytes (stage_memory) with the bytes the run really holds (the parameters' storage, the fp32
    main-grad buffer plus the distributed optimizer's reduced-gradient shard, the optimizer's
    state_bytes(): fp32 main parameters and Adam's moments). They must be equal exactly. (The
    activation estimate is checked against gpt-tiny's saved tensors above.)"""
    from megazoo.core.parallel.launch import spawn

    results = spawn(_measured_state_bytes, 4, str(tmp_path), timeout=300)
    for rank, per_case in enumerate(results):
        for name, got in per_case.items():
            shape = card_shape({"name": "gpt-tiny", "arch": "gpt", "model": got["model"]})
            layout = Layout(gpus=4, micro_batch=2, global_batch=4, seq_length=32, **STATE_CASES[name][1])
            plan = stage_memory(shape, layout, got["stage"], 0.0, dp_rank=got["dp_rank"])
            planned = {"weights": plan.weights, "grads": plan.grads, "optimizer": plan.optimizer}
            measured = {k: got[k] for k in planned}
            assert planned == measured, (name, rank, planned, measured)
            if layout.distributed_optimizer:  # the reduce-scatter target: 4/dp bytes per element besides
                assert got["grads"] == 4 * plan.params * (1 + 1 / layout.dp), (name, rank, got)


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_planner_counts_bucket_padding_of_every_dp_rank(precision):
    """Odd sizes (hidden 62, ffn 250, 33 positions) and small buckets, so that buckets are padded to a
    multiple of dp = 4 and the ranks own different numbers of real elements: the planner must follow
    megazoo's buffers and distributed optimizer for each data-parallel rank (built in one process with
    a stand-in context; only the layout is checked, no collective runs)."""
    from types import SimpleNamespace

    from megazoo.core.optim import AdamWSettings, ConstantScaler, MixedPrecisionOptimizer
    from megazoo.core.parallel.context import ParallelContext
    from megazoo.core.train import RunConfig

    dp, bucket = 4, 3000
    cfg = RunConfig.load("gpt-tiny", ["model.hidden_size=62", "model.num_heads=2", "model.ffn_hidden_size=250",
                                      "model.vocab_size=300", "model.seq_length=33", f"precision.dtype={precision}"])
    builder = cfg.validate(1)
    shape = card_shape({"name": "odd", "arch": "gpt", "model": builder.to_dict()})
    layout = Layout(gpus=dp, seq_length=33, precision=precision, distributed_optimizer=True, bucket_size=bucket)
    owned = set()
    for rank in range(dp):
        chunks = builder.chunks(ParallelContext.single(), 0)
        ctx = SimpleNamespace(dp=dp, dp_rank=rank, device=torch.device("cpu"))
        opt = MixedPrecisionOptimizer(chunks, ctx, AdamWSettings(distributed=True, bucket_size=bucket),
                                      cfg.compute_dtype, ConstantScaler(1.0))
        opt.adam.step()  # allocates Adam's moments for this rank's fragments
        buf = opt.buffers
        state = opt.state_bytes()
        measured = (buf.param_data.untyped_storage().nbytes(),
                    buf.main_grad.untyped_storage().nbytes() + buf.grad_shard.untyped_storage().nbytes(),
                    state["main_params"] + state["optimizer_state"])
        plan = stage_memory(shape, layout, 0, 0.0, dp_rank=rank)
        assert (plan.weights, plan.grads, plan.optimizer) == measured, (rank, plan, measured)
        assert buf.numel > plan.params and len(buf.buckets) > 1  # padded, several buckets
        owned.add(state["optimizer_state"])
        buf.remove_hooks()
    assert len(owned) > 1  # the padding falls in some ranks' slices only
