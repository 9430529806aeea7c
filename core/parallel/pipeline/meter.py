"""Instrumentation for the pipeline runner, kept out of the schedule: `forward_backward(...,
stats=dict)` passes a PipelineMeter to the runner as its observer.

The meter measures, rather than assumes, what is in flight: the peak number of micro-batches whose
forward ran and whose backward has not, the bytes autograd saved for them (distinct storages,
parameters excluded, through torch.autograd.graph.saved_tensors_hooks), the bytes of stage outputs
still held, and the rank's busy time (inside forwards and backwards) against its wall time.

The runner's hook points are the methods of `Observer` (which does nothing: the runner's default).
"""

from __future__ import annotations

import contextlib
import time

from torch.autograd.graph import saved_tensors_hooks


class Observer:
    """What the runner reports, in order: begin; per operation op (around it) and, in training,
    on_forward / after_forward or after_backward; end. Subclass and override what you need."""

    def begin(self, table) -> None:
        """Before the first operation of this rank's schedule table (a list of (kind, chunk, mb))."""

    def op(self, kind: str, chunk: int, mb: int):
        """Context manager around each forward ("F") or backward ("B") of the table."""
        return contextlib.nullcontext()

    def on_forward(self, key):
        """Context manager around the computation of a training forward; key = (chunk, mb)."""
        return contextlib.nullcontext()

    def after_forward(self, stash: dict, pending: list) -> None:
        """After a training forward stashed its (input, output); `pending`: sends in flight."""

    def after_backward(self, key) -> None:
        """After the backward of key = (chunk, mb)."""

    def end(self) -> None:
        """After the last sends completed."""


class PipelineMeter(Observer):
    """Fills `stats` with peak_in_flight, peak_saved_bytes, max_microbatch_bytes, peak_output_bytes,
    busy_s, wall_s and the schedule table."""

    def __init__(self, chunks, stats: dict):
        self.stats = stats
        self.params = {p.untyped_storage().data_ptr() for ch in chunks for p in ch.parameters()}
        self.live: dict[tuple, dict[int, int]] = {}  # (chunk, mb) -> storage -> bytes saved by autograd
        self.current: dict[int, int] | None = None
        self.t_start, self.busy = time.perf_counter(), 0.0
        stats.update(peak_in_flight=0, peak_saved_bytes=0, max_microbatch_bytes=0, peak_output_bytes=0,
                     busy_s=0.0, wall_s=0.0)

    def begin(self, table) -> None:
        self.stats["table"] = table
        self.t_start, self.busy = time.perf_counter(), 0.0

    @contextlib.contextmanager
    def op(self, kind: str, chunk: int, mb: int):
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.busy += time.perf_counter() - t0

    def _pack(self, t):
        if self.current is not None:
            st = t.untyped_storage()
            if st.data_ptr() not in self.params:
                self.current[st.data_ptr()] = st.nbytes()
        return t

    @contextlib.contextmanager
    def on_forward(self, key):
        self.current = self.live.setdefault(key, {})
        try:
            with saved_tensors_hooks(self._pack, lambda t: t):
                yield
        finally:
            self.current = None

    def after_forward(self, stash, pending) -> None:
        s = self.stats
        s["peak_in_flight"] = max(s["peak_in_flight"], len(stash))
        live = {}
        for per_mb in self.live.values():
            live.update(per_mb)
        s["peak_saved_bytes"] = max(s["peak_saved_bytes"], sum(live.values()))
        s["max_microbatch_bytes"] = max([s["max_microbatch_bytes"]] + [sum(v.values()) for v in self.live.values()])
        # outputs still held: those not sent yet, and sent ones whose send has not completed
        held = {o.untyped_storage().data_ptr(): o.untyped_storage().nbytes()
                for _, o in stash.values() if o is not None}
        held.update({p.tensor.untyped_storage().data_ptr(): p.tensor.untyped_storage().nbytes() for p in pending
                     if p.label[0] == "act"})
        s["peak_output_bytes"] = max(s["peak_output_bytes"], sum(held.values()))

    def after_backward(self, key) -> None:
        self.live.pop(key, None)

    def end(self) -> None:
        self.stats["busy_s"] = self.busy
        self.stats["wall_s"] = time.perf_counter() - self.t_start
