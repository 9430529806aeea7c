"""Activation recomputation that replays dropout masks exactly.

torch.utils.checkpoint restores the global RNG on recompute; megazoo's dropout draws from explicit
generators (megazoo.core.parallel.random.RNGTracker), so this wrapper snapshots the tracker before
the forward, restores it for the recompute, and afterwards puts back the state it found, so the
streams continue as if no recompute had happened.
"""

from __future__ import annotations

import torch.utils.checkpoint as ckpt

from megazoo.core.parallel.random import RNGTracker


def checkpoint(fn, *args, tracker: RNGTracker | None = None):
    if tracker is None:
        return ckpt.checkpoint(fn, *args, use_reentrant=False, preserve_rng_state=False)
    before = tracker.states()
    calls = [0]

    def replay(*a):
        calls[0] += 1
        if calls[0] == 1:
            return fn(*a)
        now = tracker.states()
        tracker.set_states(before)
        try:
            return fn(*a)
        finally:
            tracker.set_states(now)

    return ckpt.checkpoint(replay, *args, use_reentrant=False, preserve_rng_state=False)
