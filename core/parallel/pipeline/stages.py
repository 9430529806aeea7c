"""Splitting a model's layers into pipeline stages and virtual stages (model chunks).

With pp ranks and vpp chunks per rank there are V = pp * vpp virtual stages; chunk c of pp rank r
is virtual stage c * pp + r (Megatron-LM's interleaved layout). Virtual stage 0 holds the
embeddings (pre_process), virtual stage V - 1 the final norm, head and loss (post_process).

Uneven splits: by default every virtual stage gets num_layers // V layers and the first
num_layers % V virtual stages one more (the last stage, which also runs the head and the loss,
never gets an extra layer unless all do). `layers_per_stage` gives the counts explicitly.
"""

from __future__ import annotations

from typing import Callable

from megazoo.core.parallel.context import ParallelContext


class StageSplitError(ValueError):
    pass


def split_layers(num_layers: int, pp: int, vpp: int = 1,
                 layers_per_stage: list[int] | None = None) -> list[tuple[int, int]]:
    """Global layer range (start, stop) of every virtual stage, in virtual-stage order."""
    stages = pp * vpp
    if layers_per_stage is None:
        if num_layers < stages:
            raise StageSplitError(
                f"{num_layers} layers cannot fill pp x vpp = {pp} x {vpp} = {stages} virtual stages "
                "(each needs at least one layer); lower parallel.pp or parallel.vpp")
        base, extra = divmod(num_layers, stages)
        layers_per_stage = [base + (1 if v < extra else 0) for v in range(stages)]
    if len(layers_per_stage) != stages or sum(layers_per_stage) != num_layers or min(layers_per_stage) < 1:
        raise StageSplitError(
            f"layers_per_stage {layers_per_stage} must hold {stages} positive counts (pp x vpp) that sum to "
            f"num_layers={num_layers}")
    out, start = [], 0
    for n in layers_per_stage:
        out.append((start, start + n))
        start += n
    return out


def chunk_ranges(num_layers: int, pp: int, vpp: int, pp_rank: int,
                 layers_per_stage: list[int] | None = None) -> list[tuple[int, int]]:
    """The layer range of each of this rank's chunks (chunk c = virtual stage c * pp + pp_rank)."""
    ranges = split_layers(num_layers, pp, vpp, layers_per_stage)
    return [ranges[c * pp + pp_rank] for c in range(vpp)]


def describe_split(num_layers: int, pp: int, vpp: int = 1, layers_per_stage: list[int] | None = None) -> str:
    """One line per pp rank, e.g. 'stage 0: layers 0-3 | 8-11', for logs and error messages."""
    ranges = split_layers(num_layers, pp, vpp, layers_per_stage)
    lines = []
    for r in range(pp):
        parts = [f"{a}-{b - 1}" if b - a > 1 else f"{a}" for a, b in (ranges[c * pp + r] for c in range(vpp))]
        lines.append(f"stage {r}: layers " + " | ".join(parts))
    return "\n".join(lines)


def build_chunks(make_chunk: Callable, num_layers: int, ctx: ParallelContext,
                 layers_per_stage: list[int] | None = None) -> list:
    """This rank's model chunks: make_chunk(pre_process=..., post_process=..., layers=(start, stop))
    for each virtual stage it holds, in chunk order (core knows no model; the zoo passes e.g.
    `lambda **kw: GPTModel(cfg, ctx, **kw)`)."""
    last = ctx.pp * ctx.vpp - 1
    chunks = []
    for c, layers in enumerate(chunk_ranges(num_layers, ctx.pp, ctx.vpp, ctx.pp_rank, layers_per_stage)):
        vs = c * ctx.pp + ctx.pp_rank
        chunks.append(make_chunk(pre_process=vs == 0, post_process=vs == last, layers=layers))
    return chunks
