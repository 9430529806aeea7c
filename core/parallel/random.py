"""Random streams for parallel training, and dropout that draws from an explicit stream.

Two streams per rank, both seeded from the run seed:
  - "data-parallel" ("default"): identical on every tensor-parallel rank of a replica, for dropout
    on replicated activations (the residual stream without sequence parallelism);
  - "tensor-parallel": different on every tp rank, for dropout on sharded activations (attention
    probabilities of this rank's heads, and the residual stream when it is sequence-parallel).
As in Megatron-LM, pipeline stages also get distinct streams (`stage`: any id unique per stage or
virtual stage; the models use their first layer's index). Dropout takes its generator
explicitly, so nothing depends on the global RNG and activation recomputation can replay a mask
exactly by restoring the tracker's states.
"""

from __future__ import annotations

import torch

TP_OFFSET = 2718  # Megatron's offset between the default and the tensor-parallel seed


class RNGTracker:
    """Named generators on one device; `states()` / `set_states()` snapshot and restore them."""

    def __init__(self, seed: int, tp_rank: int = 0, stage: int = 0, device: torch.device | str = "cpu"):
        self.device = torch.device(device)
        base = seed + 100 * stage
        self.generators = {
            "default": self._make(base),
            "tensor-parallel": self._make(base + TP_OFFSET + tp_rank),
        }

    def _make(self, seed: int) -> torch.Generator:
        g = torch.Generator(device=self.device)
        g.manual_seed(seed)
        return g

    def get(self, name: str = "default") -> torch.Generator:
        return self.generators[name]

    def states(self) -> dict[str, torch.Tensor]:
        return {k: g.get_state() for k, g in self.generators.items()}

    def set_states(self, states: dict[str, torch.Tensor]) -> None:
        for k, s in states.items():
            self.generators[k].set_state(s)


def dropout(x: torch.Tensor, p: float, generator: torch.Generator | None, training: bool = True) -> torch.Tensor:
    """Inverted dropout with an explicit generator (global RNG when None)."""
    if not training or p == 0.0:
        return x
    keep = torch.rand(x.shape, generator=generator, device=x.device, dtype=torch.float32) >= p
    return x * keep.to(x.dtype) * (1.0 / (1.0 - p))
