"""Time to train: the planner's step time summed over a run's steps, with Megatron's batch ramp-up.

A run of `tokens` training tokens at sequence length s has tokens // s samples (Megatron's
train_samples). Its steps are counted as Megatron-LM's update_train_iters counts them:
- ramp phase: while the consumed samples c are at most the ramp's `samples`, a step of the ramp's
  batch at c (core/train/rampup.py BatchRamp, the trainer's rule) runs and c grows by that batch;
- constant phase: (train_samples - c) // global_batch steps of the full batch (a partial last batch
  is dropped).
Each step costs the planner's step time at its batch (same layout, `global_batch` replaced): the
number of micro-batches per replica follows the batch, so the pipeline bubble's share grows as the
batch shrinks. Without a ramp the run is train_samples // global_batch full steps.

The steps are grouped by batch: one `RampStage` per batch size, its step count found by bisection on
the exact rule (so a ramp of millions of steps costs one plan per batch size, not per step).

A token schedule (lr warm-up / decay end in tokens, counted from the run's start as
train.lr_warmup_tokens / train.lr_decay_tokens) is placed on those steps: the first step after which
the consumed tokens reach each bound, and the time spent until then.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

from megazoo.core.plan.shapes import PlanError
from megazoo.core.train.rampup import BatchRamp

MAX_RAMP_BATCHES = 1024  # one plan per ramp batch size (about 10 ms each); a finer ramp is refused


@dataclass(frozen=True)
class TrainSettings:
    """What the run trains: tokens, the ramp as Megatron's --rampup-batch-size, a token schedule."""

    tokens: int
    rampup: tuple[int, int, int] | None = None  # (start, increment, samples)
    lr_warmup_tokens: int = 0
    lr_decay_tokens: int = 0


@dataclass
class RampStage:
    """The consecutive steps that run at one global batch."""

    batch: int
    micro_batches: int  # per data-parallel replica
    steps: int
    samples: int
    step_time_s: float
    time_s: float


@dataclass
class TrainTime:
    tokens: int
    seq_length: int
    samples: int  # tokens // seq_length
    steps: int
    time_to_train_s: float  # the planner's step time summed over the steps (with the ramp, if any)
    steps_no_ramp: int
    time_to_train_no_ramp_s: float  # train_samples // global_batch full steps
    samples_trained: int  # what the steps consume (a partial last batch is dropped)
    stages: list = field(default_factory=list)  # RampStage as dicts
    ramp: dict | None = None  # start, increment, samples, per_increment; steps, samples_consumed, time_s below the full batch
    schedule: dict | None = None  # warm-up / decay end: tokens, step, time_s

    def to_dict(self) -> dict:
        return asdict(self)

    def lines(self) -> list[str]:
        """The text `megazoo plan` prints: the run, the ramp's table, the times, the schedule."""
        out = [f"training: {self.tokens:,} tokens = {self.samples:,} samples of {self.seq_length:,} tokens"]
        if self.ramp:
            r = self.ramp
            out.append(f"batch ramp-up {r['start']} -> {self.stages[-1]['batch']} by {r['increment']} every "
                       f"{r['per_increment']:,.1f} samples (--rampup-batch-size {r['start']} {r['increment']} "
                       f"{r['samples']}): {r['steps']:,} steps, {r['samples_consumed']:,} samples, {_span(r['time_s'])}")
        out.append(f"  {'batch':>7} {'micro-batches':>13} {'steps':>9} {'samples':>13} {'step s':>8} {'time':>10}")
        for s in self.stages:
            out.append(f"  {s['batch']:>7,} {s['micro_batches']:>13,} {s['steps']:>9,} {s['samples']:>13,} "
                       f"{s['step_time_s']:>8.3g} {_span(s['time_s']):>10}")
        out.append(f"time to train: {_span(self.time_to_train_s)} in {self.steps:,} steps"
                   + (f"; without the ramp {_span(self.time_to_train_no_ramp_s)} in {self.steps_no_ramp:,} steps "
                      f"({self.time_to_train_s / self.time_to_train_no_ramp_s - 1:+.1%} with it)" if self.ramp else ""))
        for key, name in (("warmup", "lr warm-up"), ("decay_end", "lr decay")):
            point = (self.schedule or {}).get(key)
            if point and point["step"] is not None:
                out.append(f"{name} over {point['tokens']:,} tokens ends after step {point['step']:,} "
                           f"({_span(point['time_s'])} into the run)")
            elif point:
                out.append(f"{name} over {point['tokens']:,} tokens ends after the run, which trains "
                           f"{point['fraction']:.1%} of them")
        return out


def _span(seconds: float) -> str:
    """A duration in its largest sensible unit: 45 s, 3.2 h, 37.2 days."""
    if seconds >= 2 * 86400:
        return f"{seconds / 86400:.1f} days"
    if seconds >= 2 * 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 120:
        return f"{seconds / 60:.1f} min"
    return f"{seconds:.3g} s"


def ramp_steps(train_samples: int, global_batch: int, ramp: BatchRamp | None) -> list[tuple[int, int]]:
    """[(batch, steps)] of the run in order, as Megatron's update_train_iters counts them."""
    runs: list[tuple[int, int]] = []
    consumed = 0
    while ramp is not None and consumed <= ramp.samples:
        batch = ramp(consumed)
        # the steps i >= 0 with consumed + i x batch <= samples and the same batch (ramp() is monotone)
        lo, hi = 0, (ramp.samples - consumed) // batch
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if ramp(consumed + mid * batch) == batch:
                lo = mid
            else:
                hi = mid - 1
        runs.append((batch, lo + 1))
        consumed += (lo + 1) * batch
    tail = max(0, train_samples - consumed) // global_batch
    if tail:
        runs.append((global_batch, tail))
    merged: list[tuple[int, int]] = []
    for batch, steps in runs:
        if merged and merged[-1][0] == batch:
            merged[-1] = (batch, merged[-1][1] + steps)
        else:
            merged.append((batch, steps))
    return merged


def check_train(settings: TrainSettings, layout, seq_length: int) -> BatchRamp | None:
    """One line per bad setting (flags named as `megazoo plan` spells them), before any planning."""
    if settings.tokens < seq_length:
        raise PlanError(f"--train-tokens {settings.tokens:,} is less than one sequence of {seq_length:,} tokens; "
                        "give the run's training tokens (MT-NLG: 270e9)")
    samples = settings.tokens // seq_length
    batch = layout.batch
    if samples < batch:
        raise PlanError(f"--train-tokens {settings.tokens:,} is {samples:,} samples of {seq_length:,} tokens, fewer "
                        f"than one global batch of {batch:,}; train more tokens or lower --global-batch")
    ramp = None
    if settings.rampup:
        start, increment, ramp_samples = settings.rampup
        flag = f"--rampup-batch-size {start} {increment} {ramp_samples}"
        if start < 1 or increment < 1 or ramp_samples < 0:
            raise PlanError(f"{flag}: need start >= 1, increment >= 1 and samples >= 0")
        if layout.global_batch is None:
            raise PlanError(f"{flag}: the ramp ends at --global-batch; give it (MT-NLG: --global-batch 1920)")
        if start >= batch:
            raise PlanError(f"{flag}: the start batch must be below --global-batch {batch}")
        if (batch - start) % increment:
            raise PlanError(f"{flag}: the increment {increment} does not divide --global-batch - start = {batch} - "
                            f"{start} = {batch - start}; choose an increment that divides it")
        unit = layout.dp * layout.micro_batch
        if start % unit or increment % unit:
            raise PlanError(f"{flag}: every step's batch must be a multiple of micro-batch x data-parallel size = "
                            f"{layout.micro_batch} x {layout.dp} = {unit}; make start and increment multiples of {unit}")
        if (batch - start) // increment > MAX_RAMP_BATCHES:
            raise PlanError(f"{flag}: {(batch - start) // increment:,} batch sizes; the planner plans each, at most "
                            f"{MAX_RAMP_BATCHES:,}: use a larger increment")
        ramp = BatchRamp(start, increment, ramp_samples, batch)
        if ramp_samples + batch > samples:  # the ramp's last step may run up to one global batch past it
            raise PlanError(f"{flag}: the ramp's {ramp_samples:,} samples and one last step of up to {batch:,} are more "
                            f"than the run's {samples:,} (--train-tokens / seq length {seq_length:,}); shorten the ramp "
                            "or train more tokens")
    for name, value in (("warmup", settings.lr_warmup_tokens), ("decay", settings.lr_decay_tokens)):
        if value < 0:
            raise PlanError(f"--lr-{name}-tokens must be >= 0, got {value}")
    if settings.lr_warmup_tokens > settings.tokens:
        raise PlanError(f"--lr-warmup-tokens {settings.lr_warmup_tokens:,} is longer than the run's "
                        f"{settings.tokens:,} tokens; shorten the warm-up or raise --train-tokens")
    if settings.lr_decay_tokens and settings.lr_decay_tokens < settings.lr_warmup_tokens:
        raise PlanError(f"--lr-decay-tokens {settings.lr_decay_tokens:,} ends before the warm-up "
                        f"(--lr-warmup-tokens {settings.lr_warmup_tokens:,}); the decay end counts from the run's start")
    return ramp


def train_time(shape, layout, gpu, settings: TrainSettings, step_time=None, **plan_kw) -> TrainTime:
    """The run's steps and time (module docstring). `step_time(batch)` gives a step's seconds; by
    default the planner's at that global batch (plan_kw: eff, flops_convention)."""
    from megazoo.core.plan.planner import plan

    seq = layout.seq_length or shape.seq_length
    ramp = check_train(settings, layout, seq)
    if step_time is None:
        cache: dict[int, float] = {}

        def step_time(batch: int) -> float:
            if batch not in cache:
                cache[batch] = plan(shape, replace(layout, global_batch=batch), gpu, **plan_kw).step_time_s
            return cache[batch]

    samples, full = settings.tokens // seq, layout.batch
    stages = [RampStage(b, b // (layout.dp * layout.micro_batch), n, n * b, step_time(b), n * step_time(b))
              for b, n in ramp_steps(samples, full, ramp)]
    no_ramp = samples // full
    out = TrainTime(tokens=settings.tokens, seq_length=seq, samples=samples, steps=sum(s.steps for s in stages),
                    time_to_train_s=sum(s.time_s for s in stages), steps_no_ramp=no_ramp,
                    time_to_train_no_ramp_s=no_ramp * step_time(full),
                    samples_trained=sum(s.samples for s in stages), stages=[asdict(s) for s in stages])
    if ramp is not None:
        below = [s for s in stages if s.batch < full]  # the ramp proper: every step below the full batch
        out.ramp = dict(start=ramp.start, increment=ramp.increment, samples=ramp.samples,
                        per_increment=ramp.per_increment, steps=sum(s.steps for s in below),
                        samples_consumed=sum(s.samples for s in below), time_s=sum(s.time_s for s in below))
    if settings.lr_warmup_tokens or settings.lr_decay_tokens:
        out.schedule = dict(warmup=_reached(settings.lr_warmup_tokens, stages, seq),
                            decay_end=_reached(settings.lr_decay_tokens, stages, seq))
    return out


def _reached(tokens: int, stages: list[RampStage], seq: int) -> dict | None:
    """The first step after which `tokens` tokens are consumed, and the time until its end; step None
    when the run ends first (then `fraction`: the share of those tokens the run trains)."""
    if not tokens:
        return None
    step, consumed, seconds = 0, 0, 0.0
    for s in stages:
        need = -(-(tokens - consumed * seq) // (s.batch * seq))  # ceil: steps of this stage to reach it
        if need <= s.steps:
            return dict(tokens=tokens, step=step + need, time_s=seconds + need * s.step_time_s, fraction=1.0)
        step, consumed, seconds = step + s.steps, consumed + s.samples, seconds + s.time_s
    return dict(tokens=tokens, step=None, time_s=None, fraction=consumed * seq / tokens)
