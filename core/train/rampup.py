"""Batch-size ramp-up and learning-rate schedules counted in samples or tokens (MT-NLG's recipe).

Ramp-up (`train.rampup_batch_size: [start, increment, samples]`) follows Megatron-LM's
`--rampup-batch-size` (RampupBatchsizeNumMicroBatchesCalculator): with
n = (train.global_batch - start) / increment increments and samples / n samples per increment, the
step that begins after c consumed samples has the global batch

    c > samples:  train.global_batch
    otherwise:    start + int(c / (samples / n)) x increment

and as many micro-batches per data-parallel rank as that batch holds. The sample stream is read in
order whatever the batch (data.py: step k takes samples [c, c + batch)), so only the step
boundaries move, and a resumed run (which restores c) continues the ramp where it stopped.

Schedules. As in Megatron-LM, the learning rate is a function of the samples consumed, not of the
step number, as soon as either a ramp or a sample/token key is set:
- `train.lr_warmup_tokens` / `train.lr_decay_tokens` (or `..._samples`) give the warm-up and the
  end of the decay in tokens (samples x model.seq_length) or samples, counted from the start of
  the run; an unset decay ends with the run's last sample;
- with a ramp but step keys only, they are converted as Megatron does: warm-up = train.warmup x
  train.global_batch samples, decay end = train.steps x train.global_batch samples (the ramp's
  smaller steps consume fewer samples, so the run ends before the decay does; set
  lr_decay_samples/tokens to place its end);
- without a ramp or such keys the schedule is the step schedule as before (bit for bit).
An update that starts at position p (samples or tokens consumed before it) and takes q has
lr x min(p + q, W) / W during the warm-up (p < W; megazoo's step convention: the first update
already has lr x q/W, not 0), then train.decay (cosine, linear, constant) from lr to train.min_lr with
progress (p - W) / (D - W), held at min_lr once p >= D. With one unit per step (q = 1) this is
exactly megazoo's step schedule.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from megazoo.core.train.errors import ConfigError


@dataclass(frozen=True)
class BatchRamp:
    """Megatron's ramp rule: the global batch of the step that starts after `consumed` samples."""

    start: int
    increment: int
    samples: int
    global_batch: int

    @property
    def per_increment(self) -> float:
        return self.samples / ((self.global_batch - self.start) // self.increment)

    def __call__(self, consumed: int) -> int:
        if consumed > self.samples:
            return self.global_batch
        return self.start + int(consumed / self.per_increment) * self.increment

    def describe(self) -> str:
        return (f"global batch ramp-up {self.start} -> {self.global_batch} by {self.increment} every "
                f"{self.per_increment:g} samples (train.rampup_batch_size over {self.samples:,} samples)")


def build_ramp(t) -> BatchRamp | None:
    """train.rampup_batch_size as a BatchRamp (None when unset); the values are checked by check_ramp."""
    if not t.rampup_batch_size:
        return None
    start, increment, samples = (int(x) for x in t.rampup_batch_size)
    return BatchRamp(start, increment, samples, t.global_batch)


def batch_at(t, consumed: int) -> int:
    """The global batch of the step that starts after `consumed` samples."""
    ramp = build_ramp(t)
    return ramp(consumed) if ramp else t.global_batch


def run_samples(t) -> int:
    """The samples that train.steps steps consume (ramp steps first, then whole global batches)."""
    ramp = build_ramp(t)
    consumed, step = 0, 0
    while ramp and step < t.steps and ramp(consumed) < t.global_batch:
        consumed += ramp(consumed)
        step += 1
    return consumed + (t.steps - step) * t.global_batch


def check_ramp(t, dp: int) -> None:
    """One line per bad train.rampup_batch_size, before any rank starts."""
    value = t.rampup_batch_size
    if not value:
        return
    key = f"train.rampup_batch_size={list(value)}"
    if not (isinstance(value, (list, tuple)) and len(value) == 3
            and all(isinstance(x, int) and not isinstance(x, bool) for x in value)):
        raise ConfigError(f"{key}: expected three integers [start, increment, samples], e.g. [32, 32, 6000000]")
    start, increment, samples = value
    if start < 1 or increment < 1 or samples < 0:
        raise ConfigError(f"{key}: need start >= 1, increment >= 1 and samples >= 0")
    if start >= t.global_batch:
        raise ConfigError(f"{key}: the start batch must be below train.global_batch={t.global_batch}; "
                          f"lower it or unset train.rampup_batch_size")
    if (t.global_batch - start) % increment:
        raise ConfigError(f"{key}: the increment {increment} does not divide train.global_batch - start = "
                          f"{t.global_batch} - {start} = {t.global_batch - start}; choose an increment that divides it")
    unit = t.micro_batch * dp
    if start % unit or increment % unit:
        raise ConfigError(f"{key}: every step's batch must be a multiple of train.micro_batch x data-parallel "
                          f"size = {t.micro_batch} x {dp} = {unit}; make start and increment multiples of {unit}")
    if t.epochs:
        raise ConfigError(f"{key} with train.epochs={t.epochs}: the ramp changes the samples per step; set "
                          f"train.steps instead of train.epochs")


def schedule_unit(t) -> str:
    """What the schedule counts: "steps" (no ramp, no sample/token key), "samples" or "tokens"."""
    if t.lr_warmup_tokens or t.lr_decay_tokens:
        return "tokens"
    if t.lr_warmup_samples or t.lr_decay_samples or t.rampup_batch_size:
        return "samples"
    return "steps"


def check_schedule(t, seq_length: int) -> None:
    """One line per bad sample/token schedule, once train.steps is known (before any work)."""
    unit = schedule_unit(t)
    if unit == "steps":
        return
    if (t.lr_warmup_tokens or t.lr_decay_tokens) and (t.lr_warmup_samples or t.lr_decay_samples):
        raise ConfigError("train.lr_*_tokens and train.lr_*_samples are both set; give the schedule in one unit")
    own = (t.lr_warmup_tokens or t.lr_decay_tokens or t.lr_warmup_samples or t.lr_decay_samples)
    if own and (t.warmup or t.warmup_fraction):
        raise ConfigError(f"train.warmup={t.warmup} / train.warmup_fraction={t.warmup_fraction} with a schedule in "
                          f"{unit}: set train.lr_warmup_{unit} instead (and train.warmup=0)")
    for name in ("lr_warmup_tokens", "lr_decay_tokens", "lr_warmup_samples", "lr_decay_samples"):
        if getattr(t, name) < 0:
            raise ConfigError(f"train.{name} must be >= 0, got {getattr(t, name)}")
    warmup, decay = _bounds(t, seq_length)
    total = run_samples(t) * (seq_length if unit == "tokens" else 1)
    if own and warmup > total:
        raise ConfigError(f"train.lr_warmup_{unit}={warmup:,} is longer than the run's {total:,} {unit} "
                          f"(train.steps={t.steps}); shorten the warm-up or raise train.steps")
    if own and decay and decay < warmup:
        raise ConfigError(f"train.lr_decay_{unit}={decay:,} ends before the warm-up (train.lr_warmup_{unit}="
                          f"{warmup:,}); the decay end counts from the start of the run")


def _bounds(t, seq_length: int) -> tuple[int, int]:
    """(warm-up, decay end) of the schedule in its unit; decay end 0 means the run's end."""
    unit = schedule_unit(t)
    if unit == "tokens":
        return t.lr_warmup_tokens, t.lr_decay_tokens
    if t.lr_warmup_samples or t.lr_decay_samples:
        return t.lr_warmup_samples, t.lr_decay_samples
    return t.warmup * t.global_batch, t.steps * t.global_batch  # Megatron's conversion of step keys


class SampleSchedule:
    """The learning rate of an update from its position in the run (see the module docstring)."""

    def __init__(self, t, seq_length: int):
        from megazoo.core.optim import LRSchedule  # here: the ramp rule above stays torch-free (core/plan uses it)

        self.unit = schedule_unit(t)
        self.per_sample = seq_length if self.unit == "tokens" else 1
        if self.unit == "steps":
            warmup, end = t.warmup, t.steps
        else:
            warmup, end = _bounds(t, seq_length)
            end = end or run_samples(t) * self.per_sample
        self.base = LRSchedule(t.lr, t.min_lr, warmup, end, t.decay)

    def __call__(self, step: int, consumed: int, batch: int) -> float:
        """The lr of update `step` (0-based), which starts after `consumed` samples and takes `batch`."""
        if self.unit == "steps":
            return self.base(step)
        s = self.base
        p, q = consumed * self.per_sample, batch * self.per_sample
        if s.warmup > 0 and p < s.warmup:
            return s.lr * min(p + q, s.warmup) / s.warmup  # an update across the warm-up's end: lr
        if s.style == "constant":
            return s.lr
        progress = min(1.0, (p - s.warmup) / max(1, s.total - s.warmup))
        factor = 1.0 - progress if s.style == "linear" else 0.5 * (1.0 + math.cos(math.pi * progress))
        return s.min_lr + (s.lr - s.min_lr) * factor

    def describe(self) -> str:
        s = self.base
        return (f"lr schedule in {self.unit}: warm-up {s.warmup:,}, {s.style} decay to {s.min_lr:g} ending at "
                f"{s.total:,} {self.unit}")

    def state_dict(self) -> dict:
        return self.base.state_dict()  # the checkpoint's plain values, as before

    def load_state_dict(self, state: dict) -> None:
        # a pure function of the config; a resumed run keeps its own settings
        pass
