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


@pytest.mark.skip(reason="TO COMPLETE (issue 9): needs the trainer and its optimizer (core/train, core/optim), "
                         "which are being written; see the docstring")
def test_planner_state_bytes_equal_a_measured_cpu_run():
    """To complete once `megazoo train` runs the tiny recipes: for each tiny recipe (gpt-tiny at
    TP=2 x PP=2, with and without the distributed optimizer, bf16 and fp32), run a few steps on CPU
    and compare, per rank, the planner's weights / grads / optimizer-state bytes (stage_memory) with
    the bytes the run really holds (parameter storage, the fp32 main-grad buffer, the optimizer's
    state_bytes()): they must be equal exactly, so bucket padding to a multiple of dp and any extra
    reduced-gradient shard must be counted by the planner or removed from the optimizer. Then compare
    the planner's activation estimate with the measured peak (saved tensors of the in-flight
    micro-batches): within 20%."""
    raise NotImplementedError
