"""The flat gradient buffers: fp32 accumulation, and data-parallel bucket reductions that start
during backward (post-accumulate-grad hooks), as soon as a bucket's last gradient has arrived."""

import torch

from megazoo.core.optim.buffers import GradBuffers
from megazoo.core.parallel.context import ParallelConfig, ParallelContext
from megazoo.core.parallel.launch import spawn
from megazoo.zoo.gpt.builder import build

MODEL = {"arch": "gpt", "num_layers": 2, "hidden_size": 32, "num_heads": 4, "vocab_size": 128, "seq_length": 16}


def _overlap(dtype_name: str) -> dict:
    dtype = getattr(torch, dtype_name)
    ctx = ParallelContext.build(ParallelConfig())
    (model,) = build(MODEL).chunks(ctx, 1)
    ids = torch.randint(0, 128, (2, 16), generator=torch.Generator().manual_seed(ctx.rank))
    for _ in range(2):  # this rank's own gradient of two micro-batches, plain autograd
        model(input_ids=ids, labels=ids).sum().backward()
    local = [p.grad.clone() for p in model.parameters()]
    model.zero_grad(set_to_none=True)
    buffers = GradBuffers(list(model.parameters()), dtype, ctx, distributed=False, bucket_size=2000)
    launched_during_backward = []
    first_bucket = buffers.buckets[0]
    micro = [0]
    # the tied embedding's gradient is complete at the very end of backward: was bucket 0 started by then?
    model.embed.weight.register_post_accumulate_grad_hook(
        lambda p: launched_during_backward.append((micro[0], first_bucket.launched)))
    buffers.start(2)
    for m in range(2):
        micro[0] = m
        model(input_ids=ids, labels=ids).sum().backward()
    before_finish = [b.launched for b in buffers.buckets]
    buffers.finish()
    return {"buckets": len(buffers.buckets), "before_finish": before_finish, "during": launched_during_backward,
            "grads": [p.main_grad.clone() for p in model.parameters()], "local": local,
            "fp32_grad_is_buffer": all(p.grad is not None and p.grad.data_ptr() == p.main_grad.data_ptr()
                                       for p in model.parameters()) if dtype == torch.float32 else None,
            "low_grad_freed": all(p.grad is None for p in model.parameters()) if dtype != torch.float32 else None}


def _both() -> dict:
    torch.manual_seed(0)
    return {"float32": _overlap("float32"), "bfloat16": _overlap("bfloat16")}


def test_buckets_reduce_during_backward_and_sum_over_ranks():
    r0, r1 = spawn(_both, 2, timeout=200)
    for dtype in ("float32", "bfloat16"):
        a, b = r0[dtype], r1[dtype]
        assert a["buckets"] > 2
        assert all(a["before_finish"]), "every bucket was started by the hooks, before finish()"
        # the first bucket (last layers) was launched during the last micro-batch's backward, not before
        assert a["during"] == [(0, False), (1, True)]
        for ga, gb in zip(a["grads"], b["grads"]):
            assert torch.equal(ga, gb)  # reduced: identical on both ranks
        for g, la, lb in zip(a["grads"], a["local"], b["local"]):
            if dtype == "float32":
                torch.testing.assert_close(g, la + lb, rtol=1e-6, atol=1e-7)  # summed, not averaged
    assert r0["float32"]["fp32_grad_is_buffer"] and r0["bfloat16"]["low_grad_freed"]
