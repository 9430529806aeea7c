"""The pipeline runtime on real ranks: activation memory in flight (measured), forward-only and
low-precision runs, and a mismatched configuration that fails with a message instead of hanging."""

import time

import pytest
import torch

from megazoo.core.parallel.context import ParallelConfig, ParallelContext
from megazoo.core.parallel.launch import RankFailure, spawn
from megazoo.core.parallel.pipeline import broadcast_from_last_stage, build_chunks, forward_backward, share_metrics
from megazoo.zoo.gpt import GPTModel
from tests.pipeline_parity import global_batch, make_config


def _chunks(ctx, dtype=None, recompute="none"):
    cfg = make_config("gpt")
    cfg.recompute = recompute
    return cfg, build_chunks(lambda **kw: GPTModel(cfg, ctx, dtype=dtype, **kw).initialize(7), cfg.num_layers, ctx)


def _micro(n, b=1):
    ids, labels = global_batch(0)
    ids, labels = ids.repeat(2, 1), labels.repeat(2, 1)
    return [{"input_ids": ids[i * b:(i + 1) * b], "labels": labels[i * b:(i + 1) * b]} for i in range(n)]


def _grads(chunks):
    return torch.cat([p.grad.reshape(-1) for ch in chunks for p in ch.parameters()])


def _loss(per_token, mb):
    return per_token.float().sum() / 1000.0


def runtime_cases():
    torch.manual_seed(0)
    out = {}
    ctx = ParallelContext.build(ParallelConfig(pp=4))
    cfg, chunks = _chunks(ctx)
    micro = _micro(8)
    for schedule in ("1f1b", "gpipe"):
        for ch in chunks:
            ch.zero_grad(set_to_none=True)
        stats = {}
        loss = forward_backward(chunks, micro, ctx, _loss, hidden_size=cfg.hidden_size, schedule=schedule, stats=stats)
        stats.pop("table")
        out[schedule] = dict(stats, loss=loss.item(), grads=_grads(chunks))
    _, recomputed = _chunks(ctx, recompute="full")
    forward_backward(recomputed, micro, ctx, _loss, hidden_size=cfg.hidden_size)
    out["recompute_grads"] = _grads(recomputed)
    # what the trainer logs on rank 0: the last stage's values, on every rank
    mine = {"loss": out["1f1b"]["loss"], "grad_norm": float(ctx.pp_rank), "skipped": 0.0}
    out["metrics"] = share_metrics(mine, ctx)
    out["broadcast"] = broadcast_from_last_stage(torch.tensor([float(ctx.rank)]), ctx).item()
    out["forward_only"] = forward_backward(chunks, micro, ctx, _loss, forward_only=True,
                                           hidden_size=cfg.hidden_size).item()
    try:
        forward_backward(chunks, micro, ctx, _loss)
    except ValueError as err:
        out["no_hidden"] = str(err)
    ctx = ParallelContext.build(ParallelConfig(pp=2, vpp=2))
    cfg, chunks = _chunks(ctx)
    stats = {}
    loss = forward_backward(chunks, micro, ctx, _loss, hidden_size=cfg.hidden_size, stats=stats)
    out["interleaved"] = {k: v for k, v in stats.items() if k != "table"}
    out["interleaved"].update(loss=loss.item(), grads=_grads(chunks))
    for ch in chunks:  # the same step with every send waited for at once (overlap_p2p=False)
        ch.zero_grad(set_to_none=True)
    loss = forward_backward(chunks, micro, ctx, _loss, hidden_size=cfg.hidden_size, overlap_p2p=False)
    out["interleaved_waited"] = {"loss": loss.item(), "grads": _grads(chunks)}
    # low precision: bf16 model, activations sent in bf16 (tp=2 with sp: [s/tp, b, h] between stages)
    ctx = ParallelContext.build(ParallelConfig(tp=2, pp=2, sp=True))
    cfg, chunks = _chunks(ctx, torch.bfloat16)
    out["bf16"] = forward_backward(chunks, micro[:4], ctx, _loss, hidden_size=cfg.hidden_size,
                                   dtype=torch.bfloat16).item()
    out["bf16_grad_dtype"] = str(next(chunks[0].parameters()).grad.dtype)
    out["pp_rank"] = ctx.pp_rank
    return out


@pytest.fixture(scope="module")
def runtime():
    return spawn(runtime_cases, 4, timeout=300)


def test_1f1b_keeps_at_most_pp_micro_batches_on_stage_0(runtime):
    stage0 = runtime[0]
    one, gpipe = stage0["1f1b"], stage0["gpipe"]
    assert one["peak_in_flight"] == 4  # pp micro-batches, measured by the runner's stash
    assert gpipe["peak_in_flight"] == 8  # all m: what 1F1B avoids
    per_mb = one["max_microbatch_bytes"]
    assert per_mb > 0
    assert one["peak_saved_bytes"] <= 4 * per_mb  # bytes autograd really kept, parameters excluded
    assert gpipe["peak_saved_bytes"] >= 7.5 * per_mb
    # outputs sent downstream are freed: at most two full outputs are alive, the one not yet sent
    # and the one whose send overlaps the next forward (waited for after the next exchange), not pp
    act_bytes = 16 * 1 * 32 * 4
    assert act_bytes < one["peak_output_bytes"] <= 2 * act_bytes + 8 * 4
    # later stages hold fewer: pp - rank
    assert [r["1f1b"]["peak_in_flight"] for r in runtime] == [4, 3, 2, 1]


def test_schedules_agree_on_the_loss(runtime):
    last = runtime[3]
    assert last["1f1b"]["loss"] == pytest.approx(last["gpipe"]["loss"], abs=1e-6)
    assert last["forward_only"] == pytest.approx(last["1f1b"]["loss"], abs=1e-6)
    assert runtime[0]["1f1b"]["loss"] == 0.0  # only the last stage has the loss
    for r in runtime:
        torch.testing.assert_close(r["gpipe"]["grads"], r["1f1b"]["grads"], rtol=1e-5, atol=1e-7)
        # full recompute under 1F1B (outputs freed after sending) gives the same gradients
        torch.testing.assert_close(r["recompute_grads"], r["1f1b"]["grads"], rtol=1e-5, atol=1e-7)


def test_overlapped_sends_change_nothing_but_timing(runtime):
    for r in runtime:
        assert r["interleaved"]["loss"] == r["interleaved_waited"]["loss"]
        assert torch.equal(r["interleaved"]["grads"], r["interleaved_waited"]["grads"])
    assert runtime[3]["interleaved"]["loss"] != 0.0  # rank 3 (pp rank 1; dp=2) holds the last virtual stage


def test_interleaved_in_flight_is_its_warmup(runtime):
    # pp=2, vpp=2, m=8: warm-up (pp - r - 1) * 2 + (vpp - 1) * pp = 4 on rank 0, plus the steady one
    assert runtime[0]["interleaved"]["peak_in_flight"] == 5
    assert runtime[2]["interleaved"]["peak_in_flight"] == 3  # 4 ranks: dp=2, rank 2 is pp stage 1


def test_low_precision_and_sequence_parallel_compose(runtime):
    # rank 3 is the last stage of both layouts (pp=4, and tp=2 x pp=2)
    assert runtime[3]["pp_rank"] == 1
    assert runtime[3]["bf16"] == pytest.approx(runtime[3]["1f1b"]["loss"] / 2, rel=2e-2)  # half the micro-batches
    assert runtime[0]["bf16_grad_dtype"] == "torch.bfloat16"


def test_last_stage_values_reach_every_rank(runtime):
    for r in runtime:
        assert r["metrics"] == {"loss": runtime[3]["1f1b"]["loss"], "grad_norm": 3.0, "skipped": 0.0}
        assert r["broadcast"] == 3.0


def test_missing_hidden_size_is_a_clear_error(runtime):
    assert "needs hidden_size" in runtime[0]["no_hidden"]


def mismatched_micro_batches():
    """Stage 1 believes in 2 micro-batches per step, stage 0 in 4: stage 0 waits for a gradient
    that never comes."""
    ctx = ParallelContext.build(ParallelConfig(pp=2))
    cfg, chunks = _chunks(ctx)
    micro = _micro(4 if ctx.pp_rank == 0 else 2)
    forward_backward(chunks, micro, ctx, _loss, hidden_size=cfg.hidden_size)
    if ctx.pp_rank == 1:  # keep the finished rank alive, as a real job's next step would
        import torch.distributed as dist
        dist.barrier(group=ctx.pp_group)


def test_mismatched_configuration_fails_instead_of_hanging():
    """dist timeout 5 s: the stuck stage reports what it waited for, well before the spawn timeout."""
    start = time.monotonic()
    with pytest.raises(RankFailure) as info:
        spawn(mismatched_micro_batches, 2, timeout=120, dist_timeout=5)
    msg = str(info.value)
    assert "PipelineCommError: pipeline stage 0 (global rank 0) could not" in msg
    assert "Every rank of a pipeline must run the same schedule" in msg
    assert time.monotonic() - start < 100  # the dist timeout fired, not the harness's
