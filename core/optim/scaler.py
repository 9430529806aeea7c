"""Loss scaling for fp16: a dynamic scaler (Megatron-LM's rules) and a constant one.

Dynamic: start at `initial` (2^32), multiply by `backoff` (0.5) after `hysteresis` (2) overflowing
steps, never below `min_scale` (1); multiply by `growth` (2) after `growth_interval` (1000)
consecutive clean steps, which also restores the hysteresis budget. A step that overflows is skipped.
"""

from __future__ import annotations


class ConstantScaler:
    dynamic = False

    def __init__(self, scale: float = 1.0):
        self.scale = float(scale)

    def update(self, found_inf: bool) -> None:
        pass

    def state_dict(self) -> dict:
        return {"scale": self.scale}

    def load_state_dict(self, state: dict) -> None:
        self.scale = float(state.get("scale", self.scale))


class DynamicScaler:
    dynamic = True

    def __init__(self, initial: float = 2.0**32, min_scale: float = 1.0, growth: float = 2.0, backoff: float = 0.5,
                 growth_interval: int = 1000, hysteresis: int = 2):
        if initial <= 0 or min_scale <= 0:
            raise ValueError("loss scales must be positive")
        self.scale = float(initial)
        self.min_scale, self.growth, self.backoff = float(min_scale), float(growth), float(backoff)
        self.growth_interval, self.hysteresis = int(growth_interval), int(hysteresis)
        self.clean_steps = 0
        self.hysteresis_left = self.hysteresis

    def update(self, found_inf: bool) -> None:
        if found_inf:
            self.clean_steps = 0
            self.hysteresis_left -= 1
            if self.hysteresis_left <= 0:
                self.scale = max(self.scale * self.backoff, self.min_scale)
            return
        self.clean_steps += 1
        if self.clean_steps == self.growth_interval:
            self.clean_steps = 0
            self.hysteresis_left = self.hysteresis
            self.scale *= self.growth

    def state_dict(self) -> dict:
        return {"scale": self.scale, "clean_steps": self.clean_steps, "hysteresis_left": self.hysteresis_left}

    def load_state_dict(self, state: dict) -> None:
        self.scale = float(state["scale"])
        self.clean_steps = int(state["clean_steps"])
        self.hysteresis_left = int(state["hysteresis_left"])
