"""Ring attention equals full attention: outputs and the gradients of q, k and v, to 1e-6, at cp 2
and cp 4, causal and bidirectional, MHA and GQA, fp64 and fp32 (random inputs, gloo on CPU); and the
load-balanced split holds chunks r and 2cp-1-r."""

import torch

from megazoo.core.parallel.context import ParallelConfig, ParallelContext
from megazoo.core.parallel.cp_split import chunk_index, cp_positions, split_batch
from megazoo.core.parallel.launch import spawn
from megazoo.core.parallel.ring_attention import ring_attention

TOL = 1e-6


def full_attention(q, k, v, scale, causal):
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    scores = torch.matmul(q, k.transpose(-1, -2)) * scale
    if causal:
        s = q.shape[2]
        scores = scores.masked_fill(~torch.ones(s, s, dtype=torch.bool).tril(), float("-inf"))
    return torch.matmul(torch.softmax(scores, -1), v)


def _compare(ctx, heads, kv, causal, dtype, seed, kernel):
    b, s, d = 2, 8 * ctx.cp, 8
    g = torch.Generator().manual_seed(seed)
    q, k, v, dout = (torch.randn(b, n, s, d, generator=g, dtype=dtype) for n in (heads, kv, kv, heads))
    scale = d ** -0.5
    full = [t.clone().requires_grad_(True) for t in (q, k, v)]
    ref = full_attention(*full, scale, causal)
    ref.backward(dout)
    index = chunk_index(s, ctx.cp, ctx.cp_rank)
    local = [t.index_select(2, index).requires_grad_(True) for t in (q, k, v)]
    out = ring_attention(*local, scale, causal, ctx, kernel)
    out.backward(dout.index_select(2, index))
    pairs = [(out, ref.index_select(2, index))] + [(a.grad, f.grad.index_select(2, index)) for a, f in zip(local, full)]
    # relative to the reference's size (gradients reach a few units; fp32 then rounds at ~1e-7 x that)
    return max(((a - r).abs().max() / r.abs().max().clamp(min=1.0)).item() for a, r in pairs)


def _ring_cases():
    out = {}
    for cp in (4, 2):
        ctx = ParallelContext.build(ParallelConfig(cp=cp))
        for heads, kv in ((4, 4), (4, 2)):
            for causal in (True, False):
                for dtype in (torch.float64, torch.float32):
                    for kernel in ("flash", "explicit"):
                        out[(cp, heads, kv, causal, str(dtype), kernel)] = _compare(ctx, heads, kv, causal, dtype,
                                                                                    7 + ctx.dp_rank, kernel)
    return out


def test_ring_attention_equals_full_attention():
    results = spawn(_ring_cases, 4, timeout=300)
    for rank, cases in enumerate(results):
        assert len(cases) == 32
        for case, err in cases.items():
            assert err <= TOL, f"rank {rank} {case}: ring attention differs from full attention by {err:.2e}"


def test_split_holds_one_early_and_one_late_chunk():
    assert chunk_index(16, 2, 0).tolist() == [0, 1, 2, 3, 12, 13, 14, 15]
    assert chunk_index(16, 2, 1).tolist() == [4, 5, 6, 7, 8, 9, 10, 11]
    assert cp_positions(4, 4, 3).tolist() == [6, 7, 8, 9]
    ids = torch.arange(32).view(2, 16)
    mb = {"input_ids": ids, "labels": ids + 100, "sop_labels": torch.tensor([0, 1])}
    part = split_batch(mb, 4, 1)
    assert part["input_ids"][1].tolist() == [18, 19, 28, 29]
    assert part["labels"][0].tolist() == [102, 103, 112, 113]
    assert part["sop_labels"].tolist() == [0, 1]  # per-sample tensors stay whole
    # the cp ranks' parts together hold every token exactly once
    parts = torch.cat([split_batch(mb, 4, r)["input_ids"] for r in range(4)], 1)
    assert sorted(parts[0].tolist()) == list(range(16))
