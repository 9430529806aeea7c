"""A minimal tp/pp/dp training loop for the checkpoint tests, with an AdamW of its own (per-parameter
state in the local tp shape, or ZeRO-1: fp32 state as dp shards of the flattened parameters).

It stands in for the trainer while that is written: what matters here is that its whole state
goes through megazoo.core.checkpoint. Pipeline: one micro-batch per step, stage by stage
(send/recv), which is all a numerics check needs.
"""

from __future__ import annotations

import json
import math
import os

import torch
import torch.distributed as dist

from megazoo.core.checkpoint import (PerRank, Sharded, architecture, flat_param_spec, model_state,
                                     named_parameters, param_spec, rng_state, set_rng_state)
from megazoo.core.parallel.context import ParallelConfig, ParallelContext
from megazoo.zoo.gpt import TINY, GPTModel

GLOBAL_BATCH = 4
LR, BETAS, EPS, WD = 3e-3, (0.9, 0.95), 1e-8, 0.01


def sample(i: int, seq: int = 32, vocab: int = 300) -> torch.Tensor:
    g = torch.Generator().manual_seed(10_000 + i)
    return torch.randint(0, vocab, (seq + 1,), generator=g)


class MiniTrainer:
    def __init__(self, layout: str, ctx: ParallelContext, zero: bool = False, seed: int = 1234, **overrides):
        self.ctx, self.zero, self.layout = ctx, zero, layout
        self.cfg = TINY[layout](**overrides)
        per = self.cfg.num_layers // ctx.pp
        self.model = GPTModel(self.cfg, ctx, pre_process=ctx.is_first_stage, post_process=ctx.is_last_stage,
                              layers=(ctx.pp_rank * per, (ctx.pp_rank + 1) * per)).initialize(seed)
        torch.manual_seed(seed)
        self.params = named_parameters(self.model)  # stored name -> param, a fixed order
        self.step, self.consumed = 0, 0
        if zero:  # flat fp32 state, this dp rank's equal share of the padded flat buffer
            total = sum(p.numel() for p in self.params.values())
            self.shard = math.ceil(total / ctx.dp)
            self.lo = ctx.dp_rank * self.shard
            self.hi = min(total, self.lo + self.shard)
            n = max(0, self.hi - self.lo)
            self.exp_avg, self.exp_avg_sq = torch.zeros(n), torch.zeros(n)
        else:
            self.exp_avg = {k: torch.zeros_like(p) for k, p in self.params.items()}
            self.exp_avg_sq = {k: torch.zeros_like(p) for k, p in self.params.items()}

    # ---------------------------------------------------------------------------------------------
    def _fragments(self):
        """(name, param, lo, hi, offset in this rank's shard) of the params its ZeRO shard covers."""
        pos = 0
        for name, p in self.params.items():
            a, b = max(pos, self.lo), min(pos + p.numel(), self.hi)
            if a < b:
                yield name, p, a - pos, b - pos, a - self.lo
            pos += p.numel()

    def state(self) -> dict:
        ctx = self.ctx
        if self.zero:
            opt = {"exp_avg": {}, "exp_avg_sq": {}}
            for name, p, a, b, o in self._fragments():
                for key, buf in (("exp_avg", self.exp_avg), ("exp_avg_sq", self.exp_avg_sq)):
                    opt[key][name] = Sharded(buf[o:o + b - a], flat_param_spec(p, ctx, a, b))
        else:
            opt = {key: {k: Sharded(t, param_spec(self.params[k], ctx)) for k, t in bufs.items()}
                   for key, bufs in (("exp_avg", self.exp_avg), ("exp_avg_sq", self.exp_avg_sq))}
        return {"model": model_state(self.model, ctx), "optimizer": opt,
                "scheduler": {"last_lr": self.lr()}, "step": self.step, "consumed_samples": self.consumed,
                "rng": rng_state(self.model.rng)}

    def load_state(self, state: dict) -> None:
        self.step, self.consumed = state["step"], state["consumed_samples"]
        set_rng_state(state["rng"], self.model.rng)

    def meta(self) -> dict:
        return {**architecture("gpt", self.cfg.to_dict()), "step": self.step, "consumed_samples": self.consumed}

    def lr(self) -> float:
        return LR * min(1.0, (self.step + 1) / 5)

    # ---------------------------------------------------------------------------------------------
    def _micro_batch(self):
        ctx, per = self.ctx, GLOBAL_BATCH // self.ctx.dp
        rows = torch.stack([sample(self.consumed + ctx.dp_rank * per + i) for i in range(per)])
        return rows[:, :-1], rows[:, 1:]

    def _forward(self, ids, labels=None):
        """Stage-by-stage forward; returns the last stage's output (None on other stages) and, for
        the backward, this stage's (input, output) activations."""
        ctx, m = self.ctx, self.model
        x_in = None
        if ctx.is_first_stage:
            out = m(input_ids=ids, labels=labels)
        else:
            b, s = ids.shape
            x_in = torch.empty(s, b, self.cfg.hidden_size)
            dist.recv(x_in, src=ctx.pp_ranks[ctx.pp_rank - 1])
            x_in.requires_grad_(torch.is_grad_enabled())
            out = m(hidden_states=x_in, labels=labels)
        if not ctx.is_last_stage:
            dist.send(out.detach().contiguous(), dst=ctx.pp_ranks[ctx.pp_rank + 1])
        return out, x_in

    def train_step(self) -> float | None:
        ctx = self.ctx
        self.model.train()
        for p in self.params.values():
            p.grad = None
        ids, labels = self._micro_batch()
        out, x_in = self._forward(ids, labels)
        loss = None
        if ctx.is_last_stage:
            loss = out.sum() / (GLOBAL_BATCH * labels.shape[1])
            loss.backward()
        else:
            grad = torch.empty_like(out)
            dist.recv(grad, src=ctx.pp_ranks[ctx.pp_rank + 1])
            out.backward(grad)
        if x_in is not None:
            dist.send(x_in.grad.contiguous(), dst=ctx.pp_ranks[ctx.pp_rank - 1])
        self._reduce_grads()
        self._adam()
        self.step += 1
        self.consumed += GLOBAL_BATCH
        if loss is None:
            return None
        value = loss.detach().clone()
        if ctx.dp > 1:
            dist.all_reduce(value, group=ctx.dp_group)
        return value.item()

    def _reduce_grads(self):
        ctx = self.ctx
        for p in self.params.values():
            if p.grad is None:
                p.grad = torch.zeros_like(p)
            if getattr(p, "shared_embedding", False) or (ctx.pp > 1 and self.cfg.tie_embeddings and p is getattr(
                    getattr(self.model, "embed", None), "weight", None)):
                dist.all_reduce(p.grad, group=ctx.embedding_group)
            if ctx.dp > 1:
                dist.all_reduce(p.grad, group=ctx.dp_group)

    def _update(self, p, g, m, v, t):
        m.mul_(BETAS[0]).add_(g, alpha=1 - BETAS[0])
        v.mul_(BETAS[1]).addcmul_(g, g, value=1 - BETAS[1])
        denom = (v / (1 - BETAS[1] ** t)).sqrt_().add_(EPS)
        p.mul_(1 - self.lr() * WD).addcdiv_(m, denom, value=-self.lr() / (1 - BETAS[0] ** t))

    @torch.no_grad()
    def _adam(self):
        t = self.step + 1
        if not self.zero:
            for k, p in self.params.items():
                self._update(p.data, p.grad, self.exp_avg[k], self.exp_avg_sq[k], t)
            return
        flat_p = torch.cat([p.detach().reshape(-1) for p in self.params.values()])
        flat_g = torch.cat([p.grad.reshape(-1) for p in self.params.values()])
        shard = flat_p[self.lo:self.hi].clone()
        self._update(shard, flat_g[self.lo:self.hi], self.exp_avg, self.exp_avg_sq, t)
        padded = torch.zeros(self.shard)
        padded[:shard.numel()] = shard
        if self.ctx.dp > 1:
            full = torch.empty(self.shard * self.ctx.dp)
            gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
            gather(full, padded, group=self.ctx.dp_group)
        else:
            full = padded
        pos = 0
        for p in self.params.values():
            p.copy_(full[pos:pos + p.numel()].view_as(p))
            pos += p.numel()

    @torch.no_grad()
    def logits(self, n: int = 2) -> torch.Tensor | None:
        """Logits on a fixed batch (the last stage's; None elsewhere)."""
        self.model.eval()
        rows = torch.stack([sample(900_000 + i) for i in range(n)])
        out, _ = self._forward(rows[:, :-1])
        return out if self.ctx.is_last_stage else None


def build_ctx(tp: int, pp: int) -> ParallelContext:
    return ParallelContext.build(ParallelConfig(tp=tp, pp=pp))


def log_metrics(path: str, step: int, loss: float) -> None:
    with open(path, "a") as f:
        f.write(json.dumps({"step": step, "loss": loss}) + "\n")
        f.flush()
        os.fsync(f.fileno())


# -------------------------------------------------------------------------------------------------
def test_zero_shards_match_plain_adam():
    """The ZeRO variant (one dp rank) updates exactly like the per-parameter one."""
    ctx = ParallelContext.single()
    a, b = MiniTrainer("gpt-tiny", ctx), MiniTrainer("gpt-tiny", ctx, zero=True)
    for _ in range(3):
        assert a.train_step() == b.train_step()
    for k, p in a.params.items():
        assert torch.equal(p, b.params[k]), k
