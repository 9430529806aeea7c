"""Optimisation: precision policy, loss scaling, fp32 main params, the distributed optimizer
(ZeRO-1), global-norm gradient clipping, LR schedules."""

from megazoo.core.optim.optimizer import AdamWSettings, MixedPrecisionOptimizer, StepResult
from megazoo.core.optim.scaler import ConstantScaler, DynamicScaler
from megazoo.core.optim.schedule import LRSchedule

__all__ = ["AdamWSettings", "ConstantScaler", "DynamicScaler", "LRSchedule", "MixedPrecisionOptimizer", "StepResult"]
