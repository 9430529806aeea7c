"""Helpers of the pipeline parity test: a tiny 8-layer GPT trained a few steps at a layout, with
a minimal training step of its own (forward_backward + finalize_grads + data-parallel gradient sum
+ SGD), and the same steps in one process as the reference.

The loss of a step is the sum of token losses over the whole global batch divided by its number of
counted tokens, so summing gradients over dp ranks gives the single-process gradient exactly.
"""

from __future__ import annotations

import time

import torch
import torch.distributed as dist

from megazoo.core.parallel.collectives import all_reduce_sum
from megazoo.core.parallel.context import ParallelConfig, ParallelContext
from megazoo.core.parallel.cp_split import split_batch
from megazoo.core.parallel.gather import full_state
from megazoo.core.parallel.pipeline import broadcast_from_last_stage, build_chunks, finalize_grads, forward_backward
from megazoo.zoo.gpt import GPTModel
from megazoo.zoo.gpt.config import gpt2_layout, llama_layout

SEED, LR, STEPS, GLOBAL_BATCH, SEQ, MICRO = 1234, 0.5, 5, 8, 16, 1


def make_config(layout: str):
    base = dict(num_layers=8, hidden_size=32, num_heads=8, vocab_size=300, seq_length=SEQ)
    if layout == "llama":
        return llama_layout(**base, num_kv_heads=4, ffn_hidden_size=64)
    return gpt2_layout(**base)


def global_batch(step: int):
    g = torch.Generator().manual_seed(1000 + step)
    ids = torch.randint(0, 300, (GLOBAL_BATCH, SEQ + 1), generator=g)
    labels = ids[:, 1:].clone()
    labels[0, :3] = -100  # ignored positions take part in the check
    labels[5, -2:] = -100
    return ids[:, :-1], labels


def reference(layout: str, steps: int = STEPS) -> dict:
    """The single-process run: losses per step and the final full parameters."""
    cfg = make_config(layout)
    model = GPTModel(cfg).initialize(SEED)
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    losses = []
    for step in range(steps):
        ids, labels = global_batch(step)
        opt.zero_grad(set_to_none=True)
        loss = model(ids, labels=labels).sum() / (labels != -100).sum()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return {"losses": losses, "params": full_state(model, ParallelContext.single())}


def train_layout(case: dict, steps: int = STEPS) -> dict:
    """Rank function body for one layout; case has tp, pp, vpp, sp, layout, optional cp (context
    parallelism: each cp rank trains on its two chunks of every sequence, gradients and losses
    summed over dp x cp), layers_per_stage and micro (the micro-batch size, default MICRO)."""
    cfg = make_config(case["layout"])
    t_build = time.perf_counter()
    ctx = ParallelContext.build(ParallelConfig(tp=case["tp"], pp=case["pp"], vpp=case.get("vpp", 1),
                                               sp=case.get("sp", False), cp=case.get("cp", 1)))
    chunks = build_chunks(lambda **kw: GPTModel(cfg, ctx, **kw).initialize(SEED), cfg.num_layers, ctx,
                          case.get("layers_per_stage"))
    params = [p for ch in chunks for p in ch.parameters()]
    opt = torch.optim.SGD(params, lr=LR)
    per_dp = GLOBAL_BATCH // ctx.dp
    size = case.get("micro", MICRO)  # micro-batch size
    losses, t0 = [], time.perf_counter()
    t_build = t0 - t_build
    for step in range(steps):
        ids, labels = global_batch(step)
        tokens = (labels != -100).sum()
        rows = slice(ctx.dp_rank * per_dp, (ctx.dp_rank + 1) * per_dp)
        ids, labels = ids[rows], labels[rows]
        micro = [split_batch({"input_ids": ids[i:i + size], "labels": labels[i:i + size]}, ctx.cp, ctx.cp_rank)
                 for i in range(0, per_dp, size)]
        opt.zero_grad(set_to_none=True)
        loss = forward_backward(chunks, micro, ctx, lambda per_token, mb: per_token.sum() / tokens,
                                hidden_size=cfg.hidden_size, dtype=torch.float32)
        finalize_grads(chunks, ctx)
        if ctx.dp_cp > 1:  # one flat all-reduce: on few cores every collective round is costly
            for p in params:
                if p.grad is None:
                    p.grad = torch.zeros_like(p)
            flat = torch.cat([p.grad.reshape(-1) for p in params])
            dist.all_reduce(flat, group=ctx.dp_cp_group)
            offset = 0
            for p in params:
                p.grad.copy_(flat[offset:offset + p.numel()].view_as(p))
                offset += p.numel()
        loss = broadcast_from_last_stage(all_reduce_sum(loss, ctx.dp_cp_group), ctx)
        losses.append(loss.item())
        opt.step()
    state = {}
    for ch in chunks:
        state.update(full_state(ch, ctx))  # collective over tp
    return {"coords": (ctx.tp_rank, ctx.dp_rank, ctx.pp_rank), "losses": losses,
            "params": state if ctx.tp_rank == 0 and ctx.cp_rank == 0 else None, "seconds": time.perf_counter() - t0,
            "build_seconds": t_build}


def train_all(cases: list[dict], steps: int = STEPS) -> list[dict]:
    """Every case in one process group (new ParallelContext and groups per case)."""
    torch.manual_seed(0)
    return [train_layout(case, steps) for case in cases]


def assemble(per_rank: list[dict]) -> dict[int, dict]:
    """dp replica -> full parameter dict, merged over pipeline stages (tp rank 0 of each)."""
    out: dict[int, dict] = {}
    for r in per_rank:
        if r["params"] is not None:
            out.setdefault(r["coords"][1], {}).update(r["params"])
    return out
