"""Resume exactness: 20 steps uninterrupted == 10 steps, SIGKILL (at step 13), resume=auto, 10 more:
identical losses in metrics.jsonl, bitwise (CPU, fp32, tp=2, dropout on, asynchronous saves)."""

import json
import os
import signal
from pathlib import Path

import pytest
import torch.distributed as dist

from megazoo.core.checkpoint import AsyncCheckpointer, architecture, load_checkpoint, resolve_resume
from megazoo.core.parallel.launch import RankFailure, spawn
from tests.test_checkpoint_mini import MiniTrainer, build_ctx, log_metrics

STEPS, SAVE_EVERY, KILL_AT = 20, 5, 13
MODEL = dict(dropout=0.1, attention_dropout=0.1)


def _trainer(ctx):
    return MiniTrainer("llama-tiny", ctx, **MODEL)


def run(root: str, mode: str):
    root = Path(root)
    ckpts, metrics = root / "checkpoints", root / "metrics.jsonl"
    ctx = build_ctx(2, 1)
    tr = _trainer(ctx)
    saver = AsyncCheckpointer(ctx)
    resumed = None
    if mode == "resume":
        path = resolve_resume(ckpts, "auto")
        state, info = load_checkpoint(path, tr.state(), ctx, expect=architecture("gpt", tr.cfg.to_dict()))
        assert info["per_rank_restored"]
        tr.load_state(state)
        resumed = tr.step
        if ctx.rank == 0:  # drop the lines logged after the checkpoint, as the trainer does on resume
            lines = [ln for ln in metrics.read_text().splitlines() if json.loads(ln)["step"] <= tr.step]
            metrics.write_text("".join(ln + "\n" for ln in lines))
        dist.barrier()
    while tr.step < STEPS:
        loss = tr.train_step()
        if ctx.rank == 0:
            log_metrics(str(metrics), tr.step, loss)
        if tr.step % SAVE_EVERY == 0:
            saver.save(ckpts, tr.step, tr.state(), tr.meta(), keep=2)
        if mode == "first" and tr.step == KILL_AT:
            saver.wait()
            if ctx.rank == 0:
                os.kill(os.getpid(), signal.SIGKILL)
            dist.barrier()  # never returns: rank 0 is gone
    saver.close()
    ref = _trainer(ctx)  # the uninterrupted run, from scratch, in the same processes
    return {"resumed_from": resumed, "reference": [ref.train_step() for _ in range(STEPS)]}


@pytest.mark.slow
def test_kill_and_resume_is_bitwise_exact(tmp_path):
    with pytest.raises(RankFailure):
        spawn(run, 2, str(tmp_path), "first", timeout=600, dist_timeout=60)
    lines = (tmp_path / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == KILL_AT
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["iter_0000005", "iter_0000010", "latest"]
    out = spawn(run, 2, str(tmp_path), "resume", timeout=600)[0]
    assert out["resumed_from"] == 10
    logged = [json.loads(ln) for ln in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in logged] == list(range(1, STEPS + 1))
    assert [r["loss"] for r in logged] == out["reference"]  # bitwise
    assert len(set(out["reference"])) == STEPS  # the run really trains
