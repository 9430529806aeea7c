"""Learning-rate schedules: linear warm-up, then cosine, linear or constant decay to a floor."""

from __future__ import annotations

import math
from dataclasses import dataclass

STYLES = ("cosine", "linear", "constant")


@dataclass
class LRSchedule:
    lr: float
    min_lr: float
    warmup: int
    total: int
    style: str = "cosine"

    def __post_init__(self):
        if self.style not in STYLES:
            raise ValueError(f"decay style must be one of {', '.join(STYLES)}, got {self.style!r}")

    def __call__(self, step: int) -> float:
        """The learning rate of update number `step` (0-based)."""
        if self.warmup > 0 and step < self.warmup:
            return self.lr * (step + 1) / self.warmup
        if self.style == "constant":
            return self.lr
        span = max(1, self.total - self.warmup)
        progress = min(1.0, (step - self.warmup) / span)
        if self.style == "linear":
            factor = 1.0 - progress
        else:
            factor = 0.5 * (1.0 + math.cos(math.pi * progress))
        return self.min_lr + (self.lr - self.min_lr) * factor

    def state_dict(self) -> dict:
        return {"lr": self.lr, "min_lr": self.min_lr, "warmup": self.warmup, "total": self.total, "style": self.style}

    def load_state_dict(self, state: dict) -> None:
        # the schedule is a pure function of the config; a resumed run keeps its own settings
        pass
