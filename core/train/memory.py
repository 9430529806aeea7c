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
