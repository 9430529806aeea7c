"""Context parallelism in the model: a tiny GPT (learned positions) and Llama (RoPE, GQA), causal
and bidirectional, at cp 2 and 4 (and cp 2 x tp 2 with sp) give the loss and every parameter's
gradient of one process to 1e-5 (fp32), and what cp cannot do fails in one line."""

import pytest
import torch

from megazoo.core.parallel.context import ParallelConfig, ParallelContext
from megazoo.core.parallel.launch import spawn
from tests.parity import run_model, run_model_cp

TOL = 1e-5
CASES = [("gpt-tiny", True), ("gpt-tiny", False), ("llama-tiny", True), ("llama-tiny", False)]


def _cp_cases():
    torch.manual_seed(0)
    out = {}
    for cp, tp, sp in ((4, 1, False), (2, 2, True)):
        ctx = ParallelContext.build(ParallelConfig(cp=cp, tp=tp, sp=sp))
        for layout, causal in CASES:
            out[(cp, tp, layout, causal)] = run_model_cp(layout, ctx, causal=causal)
    return out


def test_cp_loss_and_gradients_equal_one_process():
    refs = {(layout, causal): run_model(layout, ParallelContext.single(), causal=causal) for layout, causal in CASES}
    results = spawn(_cp_cases, 4, timeout=300)
    for rank, cases in enumerate(results):
        assert len(cases) == 8
        for (cp, tp, layout, causal), got in cases.items():
            ref = refs[(layout, causal)]
            tag = f"rank {rank} cp{cp} tp{tp} {layout} causal={causal}"
            assert abs(got["loss"] - ref["loss"]).item() <= TOL, tag
            assert set(got["grads"]) == set(ref["grads"])
            for name, g in got["grads"].items():
                err = (g - ref["grads"][name]).abs().max().item()
                assert err <= TOL, f"{tag}: gradient of {name} differs by {err:.2e}"
    # the bidirectional model is a different function: the check is not blind to the mask
    causal, full = refs[("gpt-tiny", True)]["grads"], refs[("gpt-tiny", False)]["grads"]
    assert max((causal[n] - full[n]).abs().max().item() for n in causal) > 100 * TOL


@pytest.mark.parametrize("what, message", [
    ("cache", "generation with a KV cache is not supported under context parallelism"),
    ("mask", "attention with a padding or custom mask is not supported under context parallelism"),
    ("split", "needs micro-batches with input_ids of shape [batch, sequence]; got input_ids of shape (2, 4, 8)"),
    ("length", "sequence length=12 cannot be split into 2 x parallel.cp = 8 equal chunks"),
])
def test_what_cp_cannot_do_fails_in_one_line(what, message):
    from megazoo.core.nn.attention import KVCache
    from megazoo.core.parallel.cp_split import ContextParallelError, split_batch
    from megazoo.zoo.gpt import TINY, GPTModel

    ctx = ParallelContext(cp=2, world_size=2)  # the checks come before any communication
    model = GPTModel(TINY["gpt-tiny"](), ctx).initialize(0)
    ids = torch.zeros(2, 8, dtype=torch.long)
    with pytest.raises((ValueError, ContextParallelError)) as err:
        if what == "cache":
            model(ids, cache=KVCache())
        elif what == "mask":
            model(ids, attention_mask=torch.ones(2, 8))
        elif what == "split":
            split_batch({"input_ids": torch.zeros(2, 4, 8)}, 2, 0)
        else:
            split_batch({"input_ids": torch.zeros(2, 12)}, 4, 0)
    assert message in str(err.value) and "\n" not in str(err.value)
