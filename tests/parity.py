"""Helpers shared by the parity tests: build a tiny model at a layout, run it, gather results."""

from __future__ import annotations

import torch
import torch.distributed as dist

from megazoo.core.parallel.context import ParallelConfig, ParallelContext
from megazoo.core.parallel.cp_split import split_batch
from megazoo.core.parallel.gather import full_state
from megazoo.zoo.gpt import TINY, GPTModel


def batch(seed: int = 0, b: int = 2, s: int = 32, vocab: int = 300):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, vocab, (b, s + 1), generator=g)
    labels = ids[:, 1:].clone()
    labels[0, :3] = -100  # ignored positions take part in every parity check
    return ids[:, :-1], labels


def run_model(layout: str, ctx: ParallelContext, seed: int = 1234, **overrides) -> dict:
    """Forward + backward of a tiny 2-layer model; full (gathered) logits, loss and gradients."""
    cfg = TINY[layout](**overrides)
    model = GPTModel(cfg, ctx).initialize(seed)
    ids, labels = batch()
    per_token = model(ids, labels=labels)
    loss = per_token.sum() / (labels != -100).sum()
    loss.backward()
    with torch.no_grad():
        model.eval()
        logits = model(ids)
    return {"loss": loss.detach(), "logits": logits, "grads": full_state(model, ctx, grads=True),
            "params": full_state(model, ctx)}


def tp_cases(tp: int) -> dict:
    """All layouts and sp settings at one tp degree, in one process group (rank function)."""
    torch.manual_seed(0)
    out = {}
    for layout in TINY:
        for sp in ([False, True] if tp > 1 else [False]):
            ctx = ParallelContext.build(ParallelConfig(tp=tp, sp=sp))
            out[(layout, sp)] = run_model(layout, ctx)
    return out


def run_model_cp(layout: str, ctx: ParallelContext, seed: int = 1234, **overrides) -> dict:
    """run_model at a context-parallel layout: this cp rank's two chunks of the batch (and their
    global positions, which the model fills in), its loss over the global token count; the loss and
    the (tp-gathered) gradients summed over the cp group, i.e. those of the whole batch."""
    cfg = TINY[layout](**overrides)
    model = GPTModel(cfg, ctx).initialize(seed)
    ids, labels = batch()
    part = split_batch({"input_ids": ids, "labels": labels}, ctx.cp, ctx.cp_rank)
    loss = model(part["input_ids"], labels=part["labels"]).sum() / (labels != -100).sum()
    loss.backward()
    grads = full_state(model, ctx, grads=True)
    flat = torch.cat([loss.detach().reshape(1)] + [g.reshape(-1) for g in grads.values()])
    dist.all_reduce(flat, group=ctx.cp_group)  # one collective: cp ranks hold parts of one batch
    offset, out = 1, {}
    for name, g in grads.items():
        out[name] = flat[offset:offset + g.numel()].view_as(g)
        offset += g.numel()
    return {"loss": flat[0], "grads": out}



class MoERun:
    """A tiny MoE model with the real optimizer (fp32 AdamW, eps 1: updates follow the gradients
    smoothly), each rank computing its data-parallel part of a 4-sample batch."""

    def __init__(self, layout: str, ctx: ParallelContext, moe: dict, distributed: bool = False, seed: int = 1234,
                 **overrides):
        from megazoo.core.optim import AdamWSettings, ConstantScaler, MixedPrecisionOptimizer

        self.ctx = ctx
        self.cfg = TINY[layout](moe=moe, **overrides)
        self.model = GPTModel(self.cfg, ctx).initialize(seed)
        settings = AdamWSettings(lr=0.1, eps=1.0, weight_decay=0.0, clip_grad=0.0, distributed=distributed)
        self.opt = MixedPrecisionOptimizer([self.model], ctx, settings, torch.float32, ConstantScaler(1.0))

    def step(self, data_seed: int = 0) -> dict:
        """One step: the batch's loss, the full gradients after the data-parallel reduction (dense
        over dp, experts over expert-dp; None under ZeRO, whose reduced gradients are shards) and
        the gradient norm."""
        from megazoo.core.parallel.collectives import all_reduce_sum

        ctx = self.ctx
        ids, labels = batch(seed=data_seed, b=4)
        per = ids.shape[0] // ctx.dp
        part = slice(ctx.dp_rank * per, (ctx.dp_rank + 1) * per)
        self.opt.zero_grad(1)
        loss = self.model(ids[part], labels=labels[part]).sum() / (labels != -100).sum()
        loss.backward()
        self.opt.finish_grad_sync()
        grads = None if self.opt.sharded else full_state(self.model, ctx, grads=True)
        norm = self.opt.grad_norm()
        self.opt.step(0.1)
        return {"loss": all_reduce_sum(loss.detach().clone(), ctx.dp_group), "grads": grads, "grad_norm": norm}

    def params(self) -> dict:
        return full_state(self.model, self.ctx)

    def state(self) -> dict:
        from megazoo.core.checkpoint import model_state

        return {"model": model_state(self.model, self.ctx), "optimizer": self.opt.sharded_state_dict()}

    def load(self, state: dict) -> None:
        self.opt.load_sharded_state_dict(state["optimizer"])


def moe_step(layout: str, ctx: ParallelContext, moe: dict, distributed: bool = False, **overrides) -> dict:
    """One MoERun step, plus the full parameters after it."""
    run = MoERun(layout, ctx, moe, distributed, **overrides)
    out = run.step()
    out["params"] = run.params()
    run.opt.close()
    return out
