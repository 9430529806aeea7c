"""Parity tolerances from the measured float noise of the reference itself (issue #36).

A fixed 1e-5 sat at the edge: on a machine of the same kind with another CPU model two parity tests
failed by a hair (1.04e-5 and 1.25e-5), although nothing was wrong but the order of float sums. So
the tolerance of a trainer parity test is measured, not guessed: the one-process reference runs a
second time with the same mathematics and another rounding — the other attention kernel (the
explicit GEMM kernel instead of SDPA, or back) — and the largest
difference between the two runs, over the losses, the gradient norms, the validation loss and every
final weight, is the reference's own noise on this CPU. A parallel layout changes the order of the
same sums, so it is held to

    tol = max(FLOOR, FACTOR * noise)

FLOOR = 1e-5 keeps the bound as tight as before where the two runs agree closely; FACTOR = 8 leaves
room for a layout that reorders more sums than the kernel swap does (tp all-reduces, pp stage
boundaries, ZeRO's sharded updates). A real bug (a missing gradient, a wrong scale) moves results by
1e-3 and more, far above either.
"""

from __future__ import annotations

import contextlib
import os

import torch

FLOOR = 1e-5
FACTOR = 8.0


@contextlib.contextmanager
def other_rounding():
    """Run the enclosed reference with the other attention kernel."""
    old_kernel = os.environ.get("MEGAZOO_ATTENTION")
    os.environ["MEGAZOO_ATTENTION"] = "sdpa" if old_kernel == "explicit" else "explicit"
    try:
        yield
    finally:
        if old_kernel is None:
            os.environ.pop("MEGAZOO_ATTENTION", None)
        else:
            os.environ["MEGAZOO_ATTENTION"] = old_kernel


def max_difference(a, b) -> float:
    """The largest absolute difference between two results of the same structure (dicts, lists,
    numbers, tensors)."""
    if isinstance(a, dict):
        assert a.keys() == b.keys(), (sorted(a), sorted(b))
        return max((max_difference(a[k], b[k]) for k in a), default=0.0)
    if isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        return max((max_difference(x, y) for x, y in zip(a, b)), default=0.0)
    if isinstance(a, torch.Tensor):
        return (a.double() - b.double()).abs().max().item() if a.numel() else 0.0
    if a is None:
        return 0.0
    return abs(float(a) - float(b))


def tolerance(noise: float) -> float:
    return max(FLOOR, FACTOR * noise)


def tolerances(first: dict, again: dict) -> dict:
    """Per result key (losses, params, grad_norms, valid, ...): the tolerance from that key's noise."""
    return {key: tolerance(max_difference(first[key], again[key])) for key in first}


def measured(run, root) -> tuple[dict, dict]:
    """(`run(root)`, its tolerances): `run` makes a reference result dict in the folder it is given;
    it runs again in `root/again` with the other rounding."""
    first = run(root)
    with other_rounding():
        again = run(root / "again")
    return first, tolerances(first, again)
