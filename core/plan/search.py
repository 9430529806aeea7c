"""Enumerate the layouts that divide the model and the GPUs, keep those that fit, rank by speed."""

from __future__ import annotations

from dataclasses import replace

from megazoo.core.plan.hardware import DEFAULT_EFFICIENCY, get_gpu
from megazoo.core.plan.planner import Plan, plan
from megazoo.core.plan.shapes import GPU, Efficiency, Layout, ModelShape, PlanError
from megazoo.core.plan.zero import SHARD_MODES


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def candidate_layouts(shape: ModelShape, base: Layout, gpu: GPU, micro_batches=(1, 2, 4, 8),
                      recomputes=("none", "selective", "full"), shards=SHARD_MODES, max_vpp: int = 8,
                      cps=(1,), eps=(1,)):
    """Every layout of `base.gpus` GPUs that divides the model; tp stays inside a node. cps and eps
    are the context- and expert-parallel degrees to try (those that divide the sequence, the GPUs,
    the data-parallel ranks and the experts); shards the sharding modes (zero.SHARD_MODES: none,
    then ZeRO-1, -2, -3, so that of two equally fast settings the one sharding less comes first; at
    dp x cp = 1, where sharding changes nothing, a sharded mode only when none is not tried)."""
    per_node = base.gpus_per_node or gpu.gpus_per_node
    batch = base.global_batch
    seq = base.seq_length or shape.seq_length
    for tp in divisors(per_node):
        if shape.num_heads % tp or shape.kv_heads % tp or shape.ffn_hidden_size % tp:
            continue
        for cp in cps:
            if cp > 1 and (seq % (2 * cp) or shape.traits.encoder_decoder):
                continue
            for pp in divisors(shape.num_layers):
                if base.gpus % (tp * cp * pp) or (pp > 1 and not shape.traits.pipeline_parallel):
                    continue
                dp = base.gpus // (tp * cp * pp)
                vpps = [v for v in divisors(shape.num_layers // pp) if v <= max_vpp] if pp > 1 else [1]
                for ep in eps:
                    if dp % ep or (ep > 1 and (not shape.moe or shape.num_experts % ep)):
                        continue
                    for mb in micro_batches:
                        if batch is not None and batch % (dp * mb):
                            continue
                        for vpp in vpps:
                            for rc in recomputes:
                                for mode in shards:
                                    if mode != "none" and dp * cp == 1 and "none" in shards:  # the same layout
                                        continue
                                    yield replace(base, tp=tp, pp=pp, vpp=vpp, cp=cp, ep=ep, micro_batch=mb,
                                                  recompute=rc, distributed_optimizer=mode != "none", shard=mode,
                                                  sp=None if tp > 1 else False)


def search(shape: ModelShape, base: Layout, gpu: str | GPU = "a100-80gb", eff: Efficiency = DEFAULT_EFFICIENCY,
           per_layout: bool = True, flops_convention: str = "model", **choices) -> list[Plan]:
    """Plans of every feasible layout, highest predicted throughput (tokens/s) first. With
    per_layout, only the fastest setting (micro-batch, interleaving, recompute, sharding mode) of
    each (tp, pp, cp, ep) is kept: a layout that fits only with ZeRO-3 is found, and one that fits
    with less sharding keeps the faster mode (the less sharded on a tie). Without a global batch,
    each layout runs one micro-batch per replica.
    choices: candidate_layouts' lists, e.g. cps=(1, 2, 4), eps=(1, 8) to search context and expert
    parallelism (only cp 1 and ep 1 by default), shards=("full",) to try one sharding mode.
    flops_convention only names how each plan's tflops_per_gpu is counted; it does not change the ranking."""
    g = get_gpu(gpu)
    plans: list[Plan] = []
    for layout in candidate_layouts(shape, base, g, **choices):
        try:
            p = plan(shape, layout, g, eff, flops_convention=flops_convention)
        except PlanError:
            continue
        if p.fits:
            plans.append(p)
    plans.sort(key=lambda p: -p.tokens_per_s)
    if not per_layout:
        return plans
    best: dict[tuple[int, int, int, int], Plan] = {}
    for p in plans:
        best.setdefault((p.layout["tp"], p.layout["pp"], p.layout["cp"], p.layout["ep"]), p)
    return sorted(best.values(), key=lambda p: -p.tokens_per_s)
