"""ZeRO-3's start from pretrained weights (`parallel.shard: full` with `train.init_from`, no resume):
the chunks are built on the meta device (no memory for their weights) and the optimizer's
GradBuffers/WeightShards read them a unit at a time (a layer, or a chunk's root) from the folder,
keeping this rank's slice of each: no rank ever holds the whole model. The result is the same,
bit for bit, as building the model, loading the whole folder and sharding it afterwards.

Not every start can: the builder must read its folder a tensor at a time (`weight_reader`: the
safetensors of a Hugging Face or import-hf folder), every parameter the folder lacks must have a
layout-independent initialisation, and the chunks built on the meta device must need nothing more
than their parameters (no buffer or tensor attribute left on the meta device). Otherwise the run
starts the usual way and the log's first lines say why (`note`).
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from megazoo.core.parallel.random import RNGTracker


def build_chunks(cfg, builder, ctx, resume_folder) -> tuple[list, object, str | None]:
    """(this rank's chunks, the unit reader or None, what to say about it in the log or None)."""
    seed = cfg.train.seed
    if cfg.shard_mode() != "full" or not cfg.train.init_from or resume_folder is not None:
        return builder.chunks(ctx, seed), None, None
    offer = getattr(builder, "weight_reader", None)
    trainable = cfg.train.trainable not in (None, "all")
    if offer is None:
        reader, why = None, f"the builder {type(builder).__name__} has no weight_reader"
    elif trainable and ctx.device.type != "cpu":  # apply_trainable counts its matches on a parameter's device
        reader, why = None, "train.trainable on an accelerator needs the parameters' device"
    else:
        reader, why = offer(cfg.train.init_from, ctx)
    if reader is not None:
        chunks = builder.chunks(ctx, seed, device="meta")
        why = reader.bind(chunks, seed) or meta_leftovers(chunks)
        if why is None:
            move_generators(chunks, ctx.device)
            return chunks, reader, "read a unit at a time into the ZeRO-3 shards"
    return builder.chunks(ctx, seed), None, f"read whole on each rank before sharding: {why}"


def meta_leftovers(chunks: list[nn.Module]) -> str | None:
    """Why chunks built on the meta device cannot run once their parameters are filled: a buffer or
    a tensor attribute still on the meta device; None when nothing is."""
    for ci, chunk in enumerate(chunks):
        for name, b in chunk.named_buffers():
            if b.is_meta:
                return f"buffer {name!r} of chunk {ci} has no value when built on the meta device"
        for mname, module in chunk.named_modules():
            for key, value in vars(module).items():
                values = value if isinstance(value, (tuple, list)) else (value,)
                if any(torch.is_tensor(v) and not isinstance(v, nn.Parameter) and v.is_meta for v in values):
                    return f"{type(module).__name__}.{key} ({mname or 'chunk'}) is a tensor on the meta device"
    return None


def move_generators(chunks: list[nn.Module], device: torch.device) -> None:
    """A model built on the meta device makes its RNG streams on the CPU (ParallelModel.initialize):
    the same streams (same seeds, nothing drawn yet) on `device`."""
    device = torch.device(device)
    for chunk in chunks:
        for module in chunk.modules():
            tracker = getattr(module, "rng", None)
            if isinstance(tracker, RNGTracker) and tracker.device != device:
                moved = copy.copy(tracker)
                moved.device = device
                moved.generators = {k: torch.Generator(device=device).manual_seed(g.initial_seed())
                                    for k, g in tracker.generators.items()}
                module.rng = moved
