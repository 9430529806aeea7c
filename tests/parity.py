"""Helpers shared by the parity tests: build a tiny model at a layout, run it, gather results."""

from __future__ import annotations

import torch

from megazoo.core.parallel.context import ParallelConfig, ParallelContext
from megazoo.core.parallel.gather import full_state
from megazoo.zoo.gpt import TINY, GPTModel


def batch(seed: int = 0, b: int = 2, s: int = 32, vocab: int = 300):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, vocab, (b, s + 1), generator=g)
    labels = ids[:, 1:].clone()
    labels[0, :3] = -100  # ignored positions take part in every parity check
    return ids[:, :-1], labels


def run_model(layout: str, ctx: ParallelContext, seed: int = 1234, **overrides) -> dict:
    """Forward + backward of a tiny 2-layer model; full (gathered) logits, loss and gradients."""
    cfg = TINY[layout](**overrides)
    model = GPTModel(cfg, ctx).initialize(seed)
    ids, labels = batch()
    per_token = model(ids, labels=labels)
    loss = per_token.sum() / (labels != -100).sum()
    loss.backward()
    with torch.no_grad():
        model.eval()
        logits = model(ids)
    return {"loss": loss.detach(), "logits": logits, "grads": full_state(model, ctx, grads=True),
            "params": full_state(model, ctx)}


def tp_cases(tp: int) -> dict:
    """All layouts and sp settings at one tp degree, in one process group (rank function)."""
    torch.manual_seed(0)
    out = {}
    for layout in TINY:
        for sp in ([False, True] if tp > 1 else [False]):
            ctx = ParallelContext.build(ParallelConfig(tp=tp, sp=sp))
            out[(layout, sp)] = run_model(layout, ctx)
    return out
