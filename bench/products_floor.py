"""The matrix products of one training step, replayed alone: a floor under that step's time.

`capture(step)` records every matrix product a call of `step` runs (mm, addmm, bmm, baddbmm: the
forward, the backward and anything else), as the shapes, strides and dtypes of their operands.
`replay_seconds(calls)` runs the same products back to back on random operands of those shapes
and strides and returns the best time over a few rounds. No implementation of that step with the
same products can take less time on this machine; the rest of a step (attention's softmax, norms,
activations, the optimizer, Python) comes on top.
"""

from __future__ import annotations

import time

PRODUCTS = ("mm", "addmm", "bmm", "baddbmm")


def capture(step) -> list[tuple]:
    """(op, operand specs, keyword specs) of every matrix product one call of `step` runs; a tensor
    operand is recorded as ("tensor", shape, stride, dtype)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    def spec(a):
        return ("tensor", tuple(a.shape), tuple(a.stride()), a.dtype) if isinstance(a, torch.Tensor) else a

    calls = []

    class Spy(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func.__name__.split(".")[0] in PRODUCTS:
                calls.append((func, [spec(a) for a in args], {k: spec(v) for k, v in kwargs.items()}))
            return func(*args, **kwargs)

    with Spy():
        step()
    return calls


def _operand(s, made: dict):
    """A random tensor of the recorded shape, stride and dtype (one per distinct spec, reused)."""
    import torch

    if not (isinstance(s, tuple) and s and s[0] == "tensor"):
        return s
    if s not in made:
        _, shape, stride, dtype = s
        size = 1 + sum((n - 1) * st for n, st in zip(shape, stride)) if all(shape) else 0
        made[s] = torch.randn(size, dtype=dtype).as_strided(shape, stride)
    return made[s]


def replay_seconds(calls: list[tuple], rounds: int = 3) -> float:
    """Wall seconds of running `calls` back to back on random operands, the best of `rounds`."""
    made: dict = {}
    ready = [(func, [_operand(a, made) for a in args], {k: _operand(v, made) for k, v in kw.items()})
             for func, args, kw in calls]
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for func, args, kw in ready:
            func(*args, **kw)
        best = min(best, time.perf_counter() - t0)
    return best


def flops(calls: list[tuple]) -> float:
    """Floating-point operations of `calls` (2 per multiply-add)."""
    total = 0.0
    for func, args, _ in calls:
        name = func.__name__.split(".")[0]
        a, b = (args[0], args[1]) if name in ("mm", "bmm") else (args[1], args[2])
        shape_a, shape_b = a[1], b[1]
        n = 1
        for d in shape_a:
            n *= d
        total += 2.0 * n * shape_b[-1]
    return total
