"""The training loop: global batches of micro-batches, exact loss normalisation, mixed precision,
data-parallel gradient reduction, the (distributed) optimizer, evaluation, logging, checkpoints.

Loss normalisation: before the forward pass the trainer counts the non-ignored labels of the whole
global batch (all micro-batches, summed over data parallelism). Each micro-batch contributes
sum(per-token loss) / global_tokens, and data-parallel gradients are summed, not averaged. The
gradient is therefore the gradient of the global-batch mean loss whatever the split into ranks and
micro-batches: the accumulation/no_sync bug class cannot happen. A model builder with its own
objective (BERT: masked-LM mean over masked tokens + sentence-order mean over sequences) gives
`loss_counts(micro_batches)` (its normalisers, summed here over the global batch) and
`loss(output, micro_batch, counts)`, under the same rule.
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path

import torch
import torch.distributed as dist

from megazoo.core.nn.moe.metrics import moe_metrics, set_aux_grad_scale
from megazoo.core.optim import AdamWSettings, ConstantScaler, DynamicScaler, MixedPrecisionOptimizer
from megazoo.core.parallel.context import ParallelContext
from megazoo.core.parallel.device import set_allocator_policy, synchronize
from megazoo.core.parallel.pipeline import forward_backward
from megazoo.core.train import checkpointing, history, rundir
from megazoo.core.train.builder import Builder
from megazoo.core.train.config import ZERO_NAMES, RunConfig
from megazoo.core.train.config_checks import check_context_parallel
from megazoo.core.train.errors import ConfigError
from megazoo.core.train.data import Batches, build_sources
from megazoo.core.train.flops import capped_mfu, peak_flops
from megazoo.core.train.memory import check_offload_memory
from megazoo.core.train.monitor import Monitor
from megazoo.core.train.precision_probe import settle
from megazoo.core.train.rampup import SampleSchedule, build_ramp, check_schedule
from megazoo.core.train.sharded_init import build_chunks
from megazoo.core.train.trainable import apply_trainable


class TrainingStopped(RuntimeError):
    """The run cannot continue (a NaN loss, a non-finite gradient norm); the message names the step."""


def _world() -> int:
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def derive_steps(cfg: RunConfig, num_samples: int) -> None:
    """train.epochs: the steps that cover the training samples that many times (whole global batches)."""
    t = cfg.train
    per_epoch = num_samples // t.global_batch
    if per_epoch < 1:
        raise ConfigError(f"the training data has {num_samples} samples, fewer than one global batch "
                          f"(train.global_batch={t.global_batch}); lower train.global_batch")
    t.steps = t.epochs * per_epoch


def describe_init(path, report: dict) -> str:
    text = f"initialised from {path}"
    if report.get("missing"):
        text += f"; new (freshly initialised): {', '.join(report['missing'])}"
    if report.get("unused"):
        text += f"; not used by this model: {', '.join(report['unused'])}"
    return text


class Trainer:
    """One training run on this rank: built in named steps (model, resume point, optimizer, data,
    run state, restored checkpoint, log), then `fit()`."""

    def __init__(self, cfg: RunConfig, ctx: ParallelContext | None = None, builder=None, monitor: bool = True):
        self.cfg = cfg
        world = _world()
        self.builder = builder or cfg.validate(world)
        self.ctx = ctx or ParallelContext.build(cfg.parallel)
        self.is_logger = self.ctx.rank == 0
        # precision.dtype=auto becomes fp32 or bf16 here, before the model is built (rank 0 decides);
        # an explicit bf16 whose GEMMs are slower on this CPU gets a warning line
        self.precision_line = settle(cfg, self.ctx.device, self.ctx.rank, world)
        self.dtype = cfg.compute_dtype
        resume_folder = self._find_resume(monitor)
        self._build_model(resume_folder)
        self._load_initial_weights(resume_folder)
        self._build_optimizer()
        self._build_data()
        self.rerun = self._check_rerun(resume_folder)  # every rank: a refused change fails them all
        self._start_run_state()
        if world > 1:
            dist.barrier()
        resumed_from = self._resume(resume_folder, monitor) if resume_folder is not None else None
        self._start_log(monitor, resumed_from)

    def _build_model(self, resume_folder=None) -> None:
        """This rank's chunks, in training mode (the allocator policy set before the first big tensor);
        under ZeRO-3 starting from train.init_from, built on the meta device when the weights can be
        read a unit at a time into the shards (core/train/sharded_init.py)."""
        cfg, ctx = self.cfg, self.ctx
        # the allocator policy is set before the first big tensor: memory that stays mapped
        self.allocator_policy = set_allocator_policy(cfg.train.allocator, ctx.device)
        self.chunks, self.unit_reader, self.init_note = build_chunks(cfg, self.builder, ctx, resume_folder)
        self.has_moe = bool(self.builder.to_dict().get("moe"))  # MoE metrics in the log (collective: every rank)
        check_context_parallel(cfg, self.builder, self.chunks)
        for c in self.chunks:
            c.train()

    def _find_resume(self, monitor: bool):
        """The checkpoint this run continues (None: a fresh start), after the run folder is checked."""
        cfg = self.cfg
        rundir.check_writable(cfg, monitor and self.is_logger)  # before the first step, not after the last
        # a run's own checkpoint wins over train.init_from (a resumed fine-tune continues itself)
        resume_folder = checkpointing.find_checkpoint(cfg.checkpoint.resume, cfg.checkpoint_dir())
        rundir.check_one_run(cfg, resume_folder, monitor)  # before anything is written: one run per folder
        return resume_folder

    def _load_initial_weights(self, resume_folder) -> None:
        """train.init_from (unless the run resumes itself), then train.trainable."""
        t = self.cfg.train
        self.init_report = None
        if self.unit_reader is not None:  # read later, a unit at a time, by the optimizer's buffers
            self.init_report = self.unit_reader.report
        elif t.init_from and resume_folder is None:
            self.init_report = self.builder.load_weights(self.chunks, t.init_from, self.ctx)
        self.trainable = apply_trainable(self.chunks, t.trainable)

    def _build_optimizer(self) -> None:
        """The loss scaler, the mixed-precision optimizer, the schedule and train.compile."""
        cfg, t = self.cfg, self.cfg.train
        if cfg.precision.dtype == "fp16":
            p = cfg.precision
            self.scaler = DynamicScaler(p.initial_scale, p.min_scale, growth_interval=p.growth_interval,
                                        hysteresis=p.hysteresis)
        else:
            self.scaler = ConstantScaler(1.0)
        settings = AdamWSettings(lr=t.lr, weight_decay=t.weight_decay, betas=tuple(t.betas), eps=t.eps,
                                 clip_grad=t.clip_grad, distributed=cfg.optim.distributed,
                                 bucket_size=cfg.optim.bucket_size, overlap_grad_reduce=cfg.optim.overlap_grad_reduce,
                                 shard=cfg.shard_mode(), shard_prefetch=cfg.parallel.shard_prefetch,
                                 offload=t.optimizer_offload)
        if t.optimizer_offload == "cpu":  # refused before any memory is taken, with the figure needed
            ctx = self.ctx
            shards = 1 if cfg.shard_mode() == "none" else ctx.dp_cp
            local = int(os.environ.get("LOCAL_WORLD_SIZE", ctx.world_size))
            check_offload_memory(sum(p.numel() for c in self.chunks for p in c.parameters() if p.requires_grad),
                                 shards, local)
        self.optimizer = MixedPrecisionOptimizer(self.chunks, self.ctx, settings, self.dtype, self.scaler,
                                                 initial=self.unit_reader)
        self.unit_reader = None  # read: the chunks hold their weights now
        if t.compile:  # in place (state_dict names unchanged); compiles on the first step
            for c in self.chunks:
                c.compile(backend=t.compile_backend)
        self.compile_seconds = None  # train.compile: the first step's time over the second's

    def _build_data(self) -> None:
        """The train and validation batches (train.epochs and warmup_fraction resolved against the data)."""
        cfg, t, ctx = self.cfg, self.cfg.train, self.ctx
        train_source, valid_source = build_sources(cfg, self.builder)
        if t.epochs:
            derive_steps(cfg, len(train_source))
        if t.warmup_fraction:
            t.warmup = int(t.warmup_fraction * t.steps)
        # the schedule after the step count is known (train.epochs derives it from the data); in steps,
        # or in samples/tokens under a batch ramp-up or lr_*_samples/tokens (core/train/rampup.py)
        check_schedule(t, self.builder.seq_length)
        self.schedule = SampleSchedule(t, self.builder.seq_length)
        self.ramp = build_ramp(t)  # None: every step takes train.global_batch
        self.num_micro = cfg.micro_batches_per_step(ctx.dp)
        collate = self.builder.collate
        # under context parallelism each cp rank takes its two chunks of every sequence
        self.train_data = Batches(train_source, t.global_batch, t.micro_batch, ctx.dp, ctx.dp_rank, ctx.device, collate,
                                  ctx.cp, ctx.cp_rank)
        self.valid_data = Batches(valid_source, t.global_batch, t.micro_batch, ctx.dp, ctx.dp_rank, ctx.device, collate,
                                  ctx.cp, ctx.cp_rank)
        # a task's (finite) validation split is read whole (the last batch wraps around to fill it)
        self.valid_iters = -(-len(valid_source) // t.global_batch) if self.builder.whole_valid_split else t.eval_iters

    def _check_rerun(self, resume_folder):
        """A rerun that continues this folder's own run: its changed settings, compared with the
        run's config.yaml (refused, or recorded by _start_log); None for a run that starts here."""
        cfg = self.cfg
        path = cfg.run_dir() / "config.yaml"
        if not (rundir.own_checkpoint(cfg, resume_folder) and path.is_file()):
            return None
        return history.check_rerun(path, self._resolved_dict(), cfg.checkpoint.allow_changes, cfg.run_dir())

    def _start_run_state(self) -> None:
        """Counters, the best-checkpoint tracker, the peak FLOP/s for MFU and the async saver."""
        cfg, ctx = self.cfg, self.ctx
        self.step = 0
        self.consumed_samples = 0
        self.consumed_tokens = 0  # real (unpadded-length) tokens; on resume: samples x seq_length
        self.skipped = 0
        self.losses: list[float] = []
        rundir.check_space(cfg, checkpointing.training_state(self))  # the first save must fit on its disk
        self.run_dir = cfg.run_dir()
        self.best = checkpointing.BestTracker(cfg)
        # peak FLOP/s: rank 0 measures while the others wait, so the measurement has the machine
        self.peak, self.peak_source = (peak_flops(self.dtype, ctx.device, ctx.world_size) if self.is_logger
                                       else (float("nan"), ""))
        self.mfu_note = None  # why MFU is capped or unknown, once it is (flops.capped_mfu)
        # asynchronous saves: a background writer with its own gloo group (made on every rank)
        self.saver = (checkpointing.AsyncCheckpointer(ctx) if cfg.checkpoint.save and cfg.checkpoint.async_save
                      else None)

    def _resume(self, resume_folder, monitor: bool) -> str:
        """Load the run's own checkpoint; what to say about it in the log."""
        cfg = self.cfg
        info = checkpointing.load(self, resume_folder)
        resumed_from = info["path"] + ("" if info["per_rank_restored"] else
                                       f" (saved at layout {info['layout']}; RNG streams start afresh)")
        if "precision_from" in info:
            resumed_from += (f" (saved in {info['precision_from']}, continued in {cfg.precision.dtype} from its "
                             f"fp32 weights; the loss scaler starts afresh)")
        self.consumed_tokens = self.consumed_samples * self.builder.seq_length
        if self.is_logger and monitor:  # a killed run may have logged steps after its checkpoint
            checkpointing.trim_metrics(self.run_dir, self.step)
        return resumed_from

    def _start_log(self, monitor: bool, resumed_from: str | None) -> None:
        """The monitor (progress, metrics.jsonl), the resolved config.yaml and the run's first lines."""
        cfg, t, ctx = self.cfg, self.cfg.train, self.ctx
        self.monitor = Monitor(self.run_dir, t.steps, self.step, cfg.log.progress, cfg.log,
                               enabled=monitor and self.is_logger, config=cfg.to_dict())
        if not (self.is_logger and monitor):
            return
        # a rerun keeps the values the run started with and appends its changes (core/train/history.py)
        history.write_config(self.run_dir / "config.yaml", self._resolved_dict(), self.rerun, self.step, t.steps)
        self.monitor.message(f"megazoo train: {cfg.name}: {self.layout()}, {self.builder.num_parameters(ctx.tp):,} "
                             f"parameters, {cfg.precision.dtype}, peak {self.peak / 1e12:.3f} TFLOP/s "
                             f"({self.peak_source}); allocator {self.allocator_policy}"
                             + (f"; train.compile ({t.compile_backend})" if t.compile else ""))
        if self.precision_line[0]:
            self.monitor.message(self.precision_line[0], warning=self.precision_line[1])
        if resumed_from:
            self.monitor.message(f"resumed from {resumed_from} at step {self.step}")
        elif self.init_report is not None:
            self.monitor.message(describe_init(t.init_from, self.init_report)
                                 + (f" ({self.init_note})" if self.init_note else ""))
        if self.ramp is not None:
            self.monitor.message(self.ramp.describe())
        if self.schedule.unit != "steps":
            self.monitor.message(self.schedule.describe())
        if t.trainable not in (None, "all"):
            self.monitor.message(f"train.trainable={t.trainable}: {len(self.trainable)} trainable tensors on "
                                 f"rank 0 (e.g. {', '.join(self.trainable[:3])})")

    # -------------------------------------------------------------------------------------------
    def layout(self) -> str:
        c = self.ctx
        return (f"world {c.world_size} = tp {c.tp}" + (f" x cp {c.cp}" if c.cp > 1 else "") + f" x pp {c.pp} x dp {c.dp}"
                + (f" (ep {c.ep})" if c.ep > 1 else "") + (f", vpp {c.vpp}" if c.vpp > 1 else "")
                + (", sp" if c.sp else "") + ZERO_NAMES[self.cfg.shard_mode()]
                + (f", recompute {self.cfg.recompute}" if self.cfg.recompute != "none" else ""))

    def batch_size(self) -> int:
        """The global batch of the next step: train.global_batch, or the ramp's at the samples consumed."""
        return self.ramp(self.consumed_samples) if self.ramp is not None else self.cfg.train.global_batch

    def _resolved_dict(self) -> dict:
        """The fully resolved config (the model section as the builder resolved it)."""
        d = self.cfg.to_dict()
        d["model"] = self.builder.to_dict()
        return d

    def _global_counts(self, micro_batches: list[dict]) -> dict[str, float]:
        """The builder's loss normalisers over the whole global batch (summed over data parallelism and,
        under context parallelism, over the cp ranks, which count the tokens of their own chunks)."""
        local = self.builder.loss_counts(micro_batches)
        keys = sorted(local)
        t = torch.stack([torch.as_tensor(local[k], dtype=torch.float64).reshape(()) for k in keys]).to(self.ctx.device)
        if self.ctx.dp_cp > 1:
            dist.all_reduce(t, group=self.ctx.dp_cp_group)
        return {k: max(float(v), 1.0) for k, v in zip(keys, t.tolist())}

    def _global_loss(self, loss_sum: torch.Tensor) -> float:
        """Sum the last stages' loss contributions of every dp and cp rank (tp ranks hold copies; each
        cp rank's contribution is its own tokens' loss over the global count)."""
        value = loss_sum.detach().to(torch.float64).reshape(1).to(self.ctx.device)
        if self.ctx.tp_rank != 0:
            value.zero_()
        if self.ctx.world_size > 1:
            dist.all_reduce(value)
        return float(value.item())

    # -------------------------------------------------------------------------------------------
    def train_step(self, micro_batches: list[dict]) -> dict:
        """One optimizer step on this rank's micro-batches of a global batch."""
        ctx = self.ctx
        scale = self.scaler.scale
        counts = self._global_counts(micro_batches)

        def loss_fn(out, mb: dict) -> torch.Tensor:
            return self.builder.loss(out, mb, counts) * scale

        self.optimizer.zero_grad(len(micro_batches))
        set_aux_grad_scale(self.chunks, scale / len(micro_batches))  # MoE auxiliary losses: micro-batch mean
        loss_sum = forward_backward(self.chunks, micro_batches, ctx, loss_fn, forward_only=False,
                                    hidden_size=self.builder.hidden_size, dtype=self.dtype)
        self.optimizer.finish_grad_sync()
        loss = self._global_loss(loss_sum) / scale
        step_number = self.step + 1
        if not math.isfinite(loss) and not self.scaler.dynamic:
            raise TrainingStopped(f"step {step_number}: the loss is {loss}; stopping. Lower train.lr, raise "
                                  f"train.warmup, or check the data; the last finite loss was "
                                  f"{next((x for x in reversed(self.losses) if math.isfinite(x)), float('nan'))}")
        batch = len(micro_batches) * self.cfg.train.micro_batch * ctx.dp  # this step's global batch
        lr = self.schedule(self.step, self.consumed_samples, batch)
        result = self.optimizer.step(lr)
        if not result.skipped and not math.isfinite(result.grad_norm):
            raise TrainingStopped(f"step {step_number}: the gradient norm is {result.grad_norm}; stopping")
        self.step = step_number
        self.consumed_samples += batch
        self.losses.append(loss)
        if result.skipped:
            self.skipped += 1
            self.monitor.message(f"step {step_number}: fp16 gradient overflow on some rank; step skipped on every "
                                 f"rank, loss scale now {self.scaler.scale:g}", warning=True)
        return {"step": step_number, "loss": loss, "lr": lr, "grad_norm": result.grad_norm, "skipped": result.skipped,
                "loss_scale": scale, "global_batch": batch}

    @torch.no_grad()
    def evaluate(self, iters: int | None = None) -> dict:
        """Validation loss over `iters` global batches (default: the whole split of a task's finite
        validation data, else train.eval_iters), plus the builder's task metrics. The loss
        of each batch is the builder's objective; batches are weighted by their token count when
        the objective is a token mean (counts has "tokens"), else equally."""
        iters = iters or self.valid_iters
        for c in self.chunks:
            c.eval()
        try:
            with self.optimizer.gathered():  # ZeRO-3: the whole model while evaluating (collective)
                total, weight, metrics = self._evaluate(iters)
        finally:
            for c in self.chunks:
                c.train()
        loss = total / max(weight, 1e-30)
        return {"step": self.step, "split": "valid", "loss": loss, "ppl": math.exp(min(loss, 700.0)), **metrics}

    def _evaluate(self, iters: int) -> tuple[float, float, dict]:
        """(weighted loss sum, weight, the builder's metrics) over `iters` validation batches."""
        total, weight = 0.0, 0.0
        for i in range(iters):
            mbs = self.valid_data.step(i * self.cfg.train.global_batch)
            counts = self._global_counts(mbs)
            w = counts.get("tokens", 1.0)

            def fn(out, mb, counts=counts, w=w):
                return self.builder.loss(out, mb, counts) * w
            loss_sum = forward_backward(self.chunks, mbs, self.ctx, fn, forward_only=True,
                                        hidden_size=self.builder.hidden_size, dtype=self.dtype)
            total += self._global_loss(loss_sum)
            weight += w
        return total, weight, self.builder.evaluate(self.chunks, self.ctx, self.dtype)

    def _mfu(self, achieved: float) -> float:
        """This step's MFU (rank 0), capped at 100%; the first time it is capped or unknown, the log
        says why (kept for the summary)."""
        if not self.is_logger:
            return float("nan")
        mfu, why = capped_mfu(achieved, self.peak, self.peak_source)
        if why and self.mfu_note is None:
            self.mfu_note = why
            self.monitor.message(why, warning=True)
        return mfu

    def _step_flops(self, micro_batches: list[dict]) -> tuple[float, int]:
        """(model FLOPs, tokens) of one step: this rank's micro-batches at their real lengths, x dp
        (under cp a micro-batch holds 1/cp of each sequence: the full length is s x cp)."""
        flops, tokens = 0.0, 0
        for mb in micro_batches:
            b, s = mb["input_ids"].shape[:2]
            s *= self.ctx.cp
            flops += self.builder.flops_per_iteration(b, self.ctx.tp, s)
            tokens += b * s
        return flops * self.ctx.dp, tokens * self.ctx.dp

    def fit(self) -> dict:
        cfg, t = self.cfg, self.cfg.train
        if self.step >= t.steps:
            return self._nothing_to_train()
        first_step = self.step
        started = time.perf_counter()
        valid = None
        first = None  # the first step's time (train.compile: it includes compilation)
        while self.step < t.steps:
            # a builder may update its data from the model first (retrieval e2e: re-retrieval); collective
            if type(self.builder).before_step is not Builder.before_step:
                with self.optimizer.gathered():  # ZeRO-3: the whole model, for the builder to read
                    self.builder.before_step(self.step, self.chunks, self.ctx, self.dtype)
            synchronize(self.ctx.device)
            t0 = time.perf_counter()
            # under a ramp-up the batch follows the samples consumed (Megatron's rule), so a resume continues it
            mbs = self.train_data.step(self.consumed_samples, self.batch_size())
            step_flops, step_tokens = self._step_flops(mbs)
            out = self.train_step(mbs)
            self.consumed_tokens += step_tokens
            synchronize(self.ctx.device)
            dt = time.perf_counter() - t0
            if t.compile and first is not None and self.compile_seconds is None:
                self.compile_seconds = max(first - dt, 0.0)
                self.monitor.message(f"train.compile: about {self.compile_seconds:.1f} s of compilation "
                                     f"(first step {first:.1f} s, second {dt:.1f} s)")
            first = dt if first is None else first
            if self.step % t.log_interval == 0 or self.step == t.steps:
                record = {"step": self.step, "loss": out["loss"], "lr": out["lr"], "grad_norm": out["grad_norm"],
                          "tokens_per_s": step_tokens / dt, "tflops": step_flops / dt / 1e12,
                          "mfu": self._mfu(step_flops / dt),
                          "consumed_tokens": self.consumed_tokens,
                          "consumed_samples": self.consumed_samples, "global_batch": out["global_batch"],
                          "step_time": dt}
                if self.scaler.dynamic:
                    record["loss_scale"] = out["loss_scale"]
                if out["skipped"]:
                    record["skipped"] = True
                if self.has_moe:  # every rank: the MoE values are summed over ranks
                    record.update(moe_metrics(self.chunks, self.ctx))
                self.monitor.train_step(record)
            self.monitor.advance()
            if t.eval_interval and self.step % t.eval_interval == 0 and self.step < t.steps:
                valid = self.evaluate()
                self.monitor.validation(valid)
                self.best.update(self, valid)
            if cfg.checkpoint.save and cfg.checkpoint.interval and self.step % cfg.checkpoint.interval == 0 \
                    and self.step < t.steps:
                self.save()
        if t.eval_iters > 0:
            valid = self.evaluate()
            self.monitor.validation(valid)
            self.best.update(self, valid)
        if cfg.checkpoint.save:
            self.save()
            if self.saver is not None:
                self.saver.wait()  # the run's last checkpoint is committed before fit() returns
        wall = time.perf_counter() - started
        self.optimizer.unshard()  # ZeRO-3: the trained model whole again, for whoever reads it next
        self.monitor.close()
        summary = {"name": cfg.name, "steps": self.step, "trained_steps": self.step - first_step,
                   "skipped": self.skipped, "losses": list(self.losses),
                   "final_loss": self.losses[-1] if self.losses else float("nan"),
                   "valid_loss": valid["loss"] if valid else None, "valid_ppl": valid["ppl"] if valid else None,
                   "valid": valid, "best": self.best.summary(),
                   "run_dir": str(self.run_dir), "wall_s": wall}
        if self.monitor.enabled:
            if cfg.log.plot:
                self.monitor.plot()
            text = self.monitor.summary({"name": cfg.name, "layout": self.layout(), "steps": self.step,
                                         "first_step": first_step,
                                         "skipped": self.skipped, "wall_s": wall,
                                         "model": f"{self.builder.to_dict().get('arch')} "
                                                  f"{self.builder.num_parameters(self.ctx.tp):,} parameters",
                                         "peak": f"{self.peak / 1e12:.3f} TFLOP/s ({self.peak_source})",
                                         "checkpoints": cfg.checkpoint.save, "data": cfg.describe_data(),
                                         "mfu_note": self.mfu_note, "precision": self.precision_line[0]})
            print(text, flush=True)
        return summary

    def _nothing_to_train(self) -> dict:
        """A rerun of a run that is already at train.steps: it says so, and evaluates, saves and
        logs nothing (no second validation line, summary.txt and config.yaml left as they are)."""
        t = self.cfg.train
        self.monitor.close()
        if self.monitor.enabled:
            more = "raise train.steps to train further" if self.step == t.steps else \
                "train.steps is below the step the run is at; raise it to train further"
            print(f"nothing to train: the run is at step {self.step} of {t.steps} ({more}); its files in "
                  f"{self.run_dir} are unchanged", flush=True)
        return {"name": self.cfg.name, "steps": self.step, "trained_steps": 0, "skipped": self.skipped,
                "losses": list(self.losses), "final_loss": self.losses[-1] if self.losses else float("nan"),
                "valid_loss": None, "valid_ppl": None, "valid": None, "best": self.best.summary(),
                "run_dir": str(self.run_dir), "wall_s": 0.0}

    # checkpoints ------------------------------------------------------------------------------------
    def save(self) -> Path:
        """Collective: write this step's checkpoint (each rank its shards) under checkpoint_dir().
        With checkpoint.async_save the files are written in the background: the path is complete
        once `self.saver.wait()` returns (fit() and close() wait)."""
        return checkpointing.save(self, self.saver)

    def state_dict(self) -> dict:
        """The whole training state of this rank as a megazoo.core.checkpoint state (model and
        optimizer as Sharded views of their global tensors, schedule, scaler, RNG streams, progress):
        enough to continue bit-for-bit, at this or any other layout."""
        return checkpointing.training_state(self)

    def load_state_dict(self, state: dict, restore_rng: bool = True) -> None:
        """Take a state of `state_dict()`'s form (e.g. returned by megazoo.core.checkpoint.load_checkpoint
        with this trainer's state_dict() as template); `restore_rng` only at an unchanged layout."""
        checkpointing.apply_state(self, state, restore_rng)

    def close(self) -> None:
        """Finish a pending background save (re-raising its error) and release the hooks."""
        try:
            if self.saver is not None:
                self.saver.close()
        finally:
            self.optimizer.close()


def train(cfg: RunConfig, ctx: ParallelContext | None = None) -> dict:
    """Train in this process (a rank of an initialised torch.distributed world, or alone)."""
    trainer = Trainer(cfg, ctx)
    try:
        return trainer.fit()
    finally:
        trainer.close()
