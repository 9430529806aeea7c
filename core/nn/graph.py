"""Whether autograd records an operation: the test a layer makes before taking a path that builds
no graph (decoding, evaluation), where an autograd node of its own would only cost time."""

from __future__ import annotations

import torch


def builds_graph(*tensors: torch.Tensor) -> bool:
    """True when an operation on `tensors` is recorded for backward: grad mode is on and one of
    them requires a gradient."""
    return torch.is_grad_enabled() and any(t.requires_grad for t in tensors)
