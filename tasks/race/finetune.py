"""RACE fine-tuning: Megatron's recipe on the parallel core, at any TP x DP layout.

The shared trainer (megazoo.core.train) drives language-model pretraining (token losses, indexed
data sets, pipelines); a 4-way classification head over whole questions fits it poorly, so this is
a small epoch loop of its own that uses the core's pieces: MixedPrecisionOptimizer (AdamW, weight
decay on matrices only, bucketed data-parallel gradient reduction, global-norm clipping) and
LRSchedule (linear warm-up, then linear decay to 0, as Megatron's fine-tuning).

Batches: a global batch of `global_batch` questions per step, drawn from a per-epoch permutation
of the training set (seeded, so every layout sees the same questions in the same order); dp rank r
takes its contiguous share and cuts it into micro-batches of `micro_batch` questions (x 4 options).
Each micro-batch's loss is its summed cross-entropy / global_batch and the data-parallel gradients
are summed, so any dp gives the gradient of the mean over the global batch.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Callable

import torch
import torch.distributed as dist

from megazoo.core.optim import AdamWSettings, ConstantScaler, LRSchedule, MixedPrecisionOptimizer
from megazoo.core.parallel.context import ParallelContext
from megazoo.tasks.race.config import RaceConfig
from megazoo.tasks.race.evaluate import race_accuracy
from megazoo.tasks.race.head import MultipleChoice, race_loss
from megazoo.tasks.race.inputs import RaceBatch


def _all_reduce(value: torch.Tensor, group, op=dist.ReduceOp.SUM) -> torch.Tensor:
    if group is not None and dist.is_initialized():
        dist.all_reduce(value, op=op, group=group)
    return value


@torch.no_grad()
def predict(model: MultipleChoice, data: RaceBatch, batch: int = 8) -> tuple[torch.Tensor, float]:
    """(softmax probabilities [N, 4], mean loss) over `data`; dp ranks share the questions.
    Collective over the whole world when it has several ranks."""
    ctx = model.ctx
    was_training = model.training
    model.eval()
    mine = list(range(ctx.dp_rank, len(data), ctx.dp))
    probs = torch.zeros(len(data), 4, dtype=torch.float64)
    loss = torch.zeros((), dtype=torch.float64)
    for i in range(0, len(mine), batch):
        idx = mine[i:i + batch]
        b = data.select(torch.tensor(idx))
        logits = model(b.input_ids, b.token_type_ids, b.attention_mask).float()
        probs[idx] = torch.softmax(logits, -1).double()
        loss += race_loss(logits, b.labels, reduction="sum").double()
    model.train(was_training)
    if ctx.dp > 1:  # each question was scored by one dp rank; the rest hold zeros
        _all_reduce(probs, ctx.dp_group)
        _all_reduce(loss, ctx.dp_group)
    return probs, float(loss) / max(len(data), 1)


class FineTuner:
    """One fine-tuning run on this rank. `log` receives every metrics line (rank 0 writes them)."""

    def __init__(self, model: MultipleChoice, cfg: RaceConfig, train: RaceBatch, valid: RaceBatch | None = None,
                 valid_levels: list[str] | None = None, log: Callable[[dict], None] | None = None):
        self.model, self.cfg, self.train_data, self.valid = model, cfg, train, valid
        self.valid_levels = valid_levels or [""] * (len(valid) if valid is not None else 0)
        self.ctx: ParallelContext = model.ctx
        self.log = log or (lambda line: None)
        t = cfg.train
        self.global_batch = cfg.global_batch(self.ctx.dp)
        self.per_rank = self.global_batch // self.ctx.dp
        self.num_micro = self.per_rank // t.micro_batch
        self.steps_per_epoch = len(train) // self.global_batch
        if self.steps_per_epoch == 0:
            raise ValueError(f"the training split has {len(train)} questions, fewer than one global batch "
                             f"({self.global_batch}); lower train.global_batch / train.micro_batch")
        self.total_steps = t.epochs * self.steps_per_epoch
        if t.max_steps:
            self.total_steps = min(self.total_steps, t.max_steps)
        settings = AdamWSettings(lr=t.lr, weight_decay=t.weight_decay, betas=(0.9, 0.999), eps=1e-8,
                                 clip_grad=t.clip_grad)
        self.optimizer = MixedPrecisionOptimizer([model], self.ctx, settings, torch.float32, ConstantScaler())
        self.schedule = LRSchedule(t.lr, 0.0, int(t.warmup * self.total_steps), self.total_steps, "linear")
        self.step = 0
        self.losses: list[float] = []

    def _order(self, epoch: int) -> torch.Tensor:
        g = torch.Generator().manual_seed(self.cfg.train.seed * 1000 + epoch)
        return torch.randperm(len(self.train_data), generator=g)

    def train_step(self, questions: torch.Tensor) -> dict:
        """One optimizer step on the global batch `questions` (indices; this rank takes its share)."""
        ctx, mb = self.ctx, self.cfg.train.micro_batch
        share = questions[ctx.dp_rank * self.per_rank:(ctx.dp_rank + 1) * self.per_rank]
        self.model.train()
        self.optimizer.zero_grad(self.num_micro)
        loss_sum = torch.zeros((), dtype=torch.float64)
        for m in range(self.num_micro):
            b = self.train_data.select(share[m * mb:(m + 1) * mb])
            logits = self.model(b.input_ids, b.token_type_ids, b.attention_mask)
            loss = race_loss(logits, b.labels, reduction="sum")
            (loss / self.global_batch).backward()
            loss_sum += loss.detach().double()
        self.optimizer.buffers.finish()
        lr = self.schedule(self.step)
        result = self.optimizer.step(lr)
        loss = float(_all_reduce(loss_sum, ctx.dp_group)) / self.global_batch
        self.step += 1
        self.losses.append(loss)
        return {"step": self.step, "loss": loss, "lr": lr, "grad_norm": result.grad_norm}

    def evaluate(self) -> dict:
        probs, loss = predict(self.model, self.valid)
        preds = probs.argmax(-1).tolist()
        acc = race_accuracy(preds, self.valid.labels.tolist(), self.valid_levels)
        return {"split": "valid", "step": self.step, "loss": loss, "accuracy": acc["overall"],
                "accuracy_middle": acc["middle"], "accuracy_high": acc["high"]}

    def _stop_now(self, start: float, cpu_start: float) -> bool:
        """Past train.time_limit_s (wall) or train.cpu_limit_s (this process's CPU time, which on a
        shared machine measures the work done rather than the waiting); every rank agrees."""
        t = self.cfg.train
        if not t.time_limit_s and not t.cpu_limit_s:
            return False
        over = (t.time_limit_s and time.perf_counter() - start > t.time_limit_s) or \
               (t.cpu_limit_s and time.process_time() - cpu_start > t.cpu_limit_s)
        flag = torch.tensor(1.0 if over else 0.0)
        return bool(_all_reduce(flag, None if self.ctx.world_size == 1 else dist.group.WORLD, dist.ReduceOp.MAX) > 0)

    def run(self) -> dict:
        t = self.cfg.train
        start, cpu_start = time.perf_counter(), time.process_time()
        interval = t.eval_interval or self.steps_per_epoch
        last_valid = None
        tick, questions_done = time.perf_counter(), 0
        stopped_early = False
        for epoch in range(t.epochs):
            order = self._order(epoch)
            for i in range(self.steps_per_epoch):
                if self.step >= self.total_steps:
                    break
                line = self.train_step(order[i * self.global_batch:(i + 1) * self.global_batch])
                questions_done += self.global_batch
                if self.step % self.cfg.log.interval == 0 or self.step == 1:
                    now = time.perf_counter()
                    line.update(epoch=epoch, questions_per_s=questions_done / max(now - tick, 1e-9),
                                consumed_questions=self.step * self.global_batch, elapsed_s=now - start,
                                cpu_s=time.process_time() - cpu_start)
                    tick, questions_done = now, 0
                    self.log(line)
                if self.valid is not None and (self.step % interval == 0 or self.step == self.total_steps):
                    last_valid = self.evaluate()
                    last_valid.update(elapsed_s=time.perf_counter() - start, cpu_s=time.process_time() - cpu_start)
                    self.log(last_valid)
                if self._stop_now(start, cpu_start):
                    stopped_early = True
                    break
            if stopped_early or self.step >= self.total_steps:
                break
        if self.valid is not None and (last_valid is None or last_valid["step"] != self.step):
            last_valid = self.evaluate()
            last_valid["elapsed_s"] = time.perf_counter() - start
            self.log(last_valid)
        self.optimizer.buffers.remove_hooks()
        return {"steps": self.step, "losses": self.losses, "valid": last_valid,
                "elapsed_s": time.perf_counter() - start, "cpu_s": time.process_time() - cpu_start,
                "stopped_by_time_limit": stopped_early}


class MetricsLog:
    """Appends JSON lines to `<run dir>/metrics.jsonl` (on rank 0) and prints a short progress line."""

    def __init__(self, run_dir: Path, rank: int, echo: bool = True):
        self.path = Path(run_dir) / "metrics.jsonl"
        self.rank, self.echo = rank, echo
        if rank == 0:
            self.path.parent.mkdir(parents=True, exist_ok=True)

    def __call__(self, line: dict) -> None:
        if self.rank != 0:
            return
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")
        if self.echo:
            if line.get("split") == "valid":
                print(f"[race] step {line['step']}: valid loss {line['loss']:.4f}, accuracy {line['accuracy']:.4f}",
                      flush=True)
            else:
                print(f"[race] step {line['step']}: loss {line['loss']:.4f}, lr {line['lr']:.2e}, "
                      f"grad norm {line['grad_norm']:.3f}, {line.get('questions_per_s', math.nan):.2f} q/s", flush=True)
