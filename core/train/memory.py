"""Measuring what training holds in memory: activations saved for backward, optimizer bytes."""

from __future__ import annotations

import torch
from torch import nn


def saved_activation_bytes(chunks: list[nn.Module], input_ids: torch.Tensor, labels: torch.Tensor) -> int:
    """Bytes of the distinct storages autograd keeps for backward after one forward pass, parameters
    excluded: the activation memory live when backward starts (the peak for activations).

    Activation recomputation's checkpoint keeps only its inputs in the outer graph (the recomputed
    region's own tensors are packed by torch's checkpoint hooks and never materialise), so this
    counts exactly what each recompute setting stores."""
    params = {p.untyped_storage().data_ptr() for c in chunks for p in c.parameters()}
    seen: dict[int, int] = {}

    def pack(t: torch.Tensor):
        s = t.untyped_storage()
        if s.data_ptr() not in params and s.device.type != "meta":
            seen[s.data_ptr()] = s.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        (model,) = chunks
        out = model(input_ids=input_ids, labels=labels)
    total = sum(seen.values())
    out.sum().backward()  # frees the graph (and checks it is usable)
    return total


def host_memory_available() -> int:
    """Bytes of host memory available now (MemAvailable of /proc/meminfo; the total where that is
    missing). MEGAZOO_HOST_MEMORY_BYTES overrides it (to check the refusal on any machine)."""
    import os

    env = os.environ.get("MEGAZOO_HOST_MEMORY_BYTES")
    if env:
        return int(float(env))
    try:
        with open("/proc/meminfo") as f:
            fields = dict(line.split(":", 1) for line in f)
        return int(fields["MemAvailable"].split()[0]) * 1024
    except (OSError, KeyError, ValueError):
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def offload_host_bytes(trainable_numel: int, shards: int) -> int:
    """Host bytes optimizer offload needs on one rank: fp32 main weights, two Adam moments and the
    reduced gradients copied over for the update, of its 1/shards slice (the planner's rule,
    core/plan/zero.py: 16 bytes per parameter)."""
    from megazoo.core.plan.zero import zero_bytes_per_param

    per_param = int(zero_bytes_per_param("none", 1, "fp32", "cpu")["host"])  # of the parameters a rank updates
    return per_param * -(-trainable_numel // shards)


def check_offload_memory(trainable_numel: int, shards: int, local_ranks: int) -> None:
    """Refuse train.optimizer_offload=cpu before training when the ranks of this machine would not fit
    their host copies in the memory available (one line with both figures)."""
    from megazoo.core.train.errors import ConfigError

    need = offload_host_bytes(trainable_numel, shards) * local_ranks
    have = host_memory_available()
    if need > have:
        raise ConfigError(
            f"train.optimizer_offload=cpu needs {need / 2**30:.2f} GiB of host memory ({local_ranks} rank(s) x "
            f"{offload_host_bytes(1, 1)} bytes per parameter of {-(-trainable_numel // shards):,}: fp32 main weights, "
            f"Adam moments, gradients) but "
            f"{have / 2**30:.2f} GiB is available; shard over more ranks (parallel.shard), use fewer ranks per "
            f"machine, or set train.optimizer_offload=none")
