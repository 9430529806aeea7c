"""Sharding over the data-parallel ranks (ZeRO-1/2/3) and optimizer offload: bytes and traffic.

The rule per element of a rank's parameters (`state_parts`), used both bucket-exact by
memory.megazoo_state_bytes and per parameter by `zero_bytes_per_param` (what the memory bench
compares its measurements with). e = bytes of the compute dtype (2 for bf16/fp16, 4 for fp32):

  mode       weights   gradients (fp32 main grads)        fp32 main weights   Adam m, v
  none       e         4                                  4                   8
  optimizer  e         4 + 4/d (the reduce-scatter shard) 4/d                 8/d      (ZeRO-1)
  grads      e         4/d (+ the bucket being reduced)   4/d                 8/d      (ZeRO-2)
  full       e/d       4/d (+ the bucket being reduced)   4/d                 8/d      (ZeRO-3)

d is the number of ranks a parameter is sharded over: dp x cp for dense parameters, the expert-dp
ranks (dp x cp / ep) for MoE experts. fp32 runs keep no separate main weights (they update their
own). ZeRO-3 adds the whole weights it holds gathered, in the compute dtype: each model chunk's root
unit (embedding, final norm, output layer: kept all step) and the largest layer unit, twice with
prefetch (the next unit arrives while the current one computes). Offload (`cpu`) moves the fp32 main weights
and Adam's moments to the host, with an fp32 copy of the rank's gradient shard that the host steps
with (4/d); the device keeps weights and gradients.

Traffic per step and rank (`zero_traffic_per_param`, elements per parameter, times (d - 1)/d):
none all-reduces the gradients (2); ZeRO-1 reduce-scatters them and all-gathers the updated weights
(1 + 1, the all-reduce's volume); ZeRO-2 the same, but its gradients have nowhere to accumulate
whole, so each micro-batch reduce-scatters its own (m + 1); ZeRO-3 all-gathers the weights in each
micro-batch's forward and again in its backward and reduce-scatters its gradients (3m: 1.5 times
ZeRO-1 at one micro-batch); its root units (embedding, head), kept gathered all step, travel as
ZeRO-2's (timing.step_time). Gradients travel in fp32 (the main grads), weights in the compute dtype.
"""

from __future__ import annotations

from megazoo.core.plan.shapes import PlanError

# ZeRO-0 (replicated), ZeRO-1, ZeRO-2, ZeRO-3: parallel.shard's values (torch-free here, so that core/optim
# and the run config can take them from this one place, as padded_vocab)
SHARD_MODES = ("none", "optimizer", "grads", "full")
OFFLOAD_TARGETS = ("cpu",)
# Offload's step (assumptions, one GPU's share of its host): the shard's fp32 gradients go to the host
# and the updated weights come back over PCIe (Gen4 x16 sustains about 25 GB/s each way); the host's
# Adam moves the same 34 bytes per parameter as the GPU's (timing.step_time) at its share of the
# host's memory bandwidth (a two-socket server's ~300 GB/s sustained over 8 GPUs, about 40 GB/s).
HOST_LINK_GB_S = 25.0
HOST_ADAM_GB_S = 40.0


def dtype_bytes(precision: str) -> int:
    """Bytes of one element of the compute dtype (weights, activations, gathered weights)."""
    return 4 if precision == "fp32" else 2


def state_parts(mode: str, precision: str, offload: str | None, full: float, shard: float, owned: float,
                sharded: bool, bucket: float = 0.0, gathered: float = 0.0) -> dict:
    """Bytes one rank holds, by part, for `full` elements of its (padded) buffers, `shard` of them in
    its shard, `owned` real elements in that shard (Adam covers only those), `bucket` elements of the
    largest gradient bucket and (ZeRO-3) `gathered` elements of whole weights held at the peak
    (memory.gathered_elements). sharded: some bucket is split over more than one rank (else every
    mode holds the whole thing once, as mode none).
    Device parts: weights, gathered, grads, main_weights, adam; host parts: host_grads,
    host_main_weights, host_adam."""
    e = dtype_bytes(precision)
    zero = mode if sharded else "none"
    weights = e * (shard if zero == "full" else full)
    gathered = e * gathered if zero == "full" else 0
    if zero in ("grads", "full"):
        grads = 4 * shard + 4 * bucket
    else:
        grads = 4 * full + (4 * shard if zero == "optimizer" else 0)
    main_count = shard if zero != "none" else full
    main = 0 if precision == "fp32" else 4 * main_count
    adam = 8 * owned
    out = dict(weights=weights, gathered=gathered, grads=grads, main_weights=main, adam=adam,
               host_grads=0, host_main_weights=0, host_adam=0)
    if offload:
        out.update(main_weights=0, adam=0, host_grads=4 * main_count, host_main_weights=4 * main_count,
                   host_adam=adam)
    out["device"] = sum(out[k] for k in ("weights", "gathered", "grads", "main_weights", "adam"))
    out["host"] = out["host_grads"] + out["host_main_weights"] + out["host_adam"]
    return out


def zero_bytes_per_param(mode: str, dp: int, dtype: str = "bf16", offload: str | None = None) -> dict:
    """Bytes per parameter per rank of each part (state_parts) for a model sharded over `dp` ranks,
    without the constant transients (the bucket being reduced, ZeRO-3's gathered units): e.g. bf16
    ZeRO-3 at dp 4 holds 18/4 = 4.5 bytes per parameter on the device; ZeRO-1 at dp 2 holds
    2 + 4 + 2 + 2 + 4 = 14 (the textbook 6 + 12/d plus megazoo's reduce-scatter shard, 4/d)."""
    check_mode(mode, offload)
    share = 1.0 if mode == "none" else 1.0 / dp
    return state_parts(mode, dtype, offload, full=1.0, shard=share, owned=share, sharded=dp > 1)


def zero_traffic_per_param(mode: str, dp: int, micro_batches: int = 1, dtype: str = "bf16") -> dict:
    """Elements and bytes per parameter one rank sends (and receives) per step over the data-parallel
    ranks: {all_reduce, reduce_scatter, all_gather} in elements (ring volumes, (d-1)/d each) and
    `elements` and `bytes` in all (gradients in fp32, weights in the compute dtype)."""
    check_mode(mode)
    share = (dp - 1) / dp
    m = micro_batches
    all_reduce = 2 * share if mode == "none" else 0.0
    reduce_scatter = {"none": 0, "optimizer": 1, "grads": m, "full": m}[mode] * share
    all_gather = {"none": 0, "optimizer": 1, "grads": 1, "full": 2 * m}[mode] * share
    return dict(all_reduce=all_reduce, reduce_scatter=reduce_scatter, all_gather=all_gather,
                elements=all_reduce + reduce_scatter + all_gather,
                bytes=4 * (all_reduce + reduce_scatter) + dtype_bytes(dtype) * all_gather)


def check_mode(mode: str, offload: str | None = None, names: tuple[str, str] = ("shard", "optimizer_offload")) -> None:
    """PlanError naming the allowed values; names: how the message calls the two settings."""
    if mode not in SHARD_MODES:
        raise PlanError(f"{names[0]} {mode!r} is not one of {', '.join(SHARD_MODES)} (none: replicated; optimizer, "
                        "grads, full: ZeRO-1, ZeRO-2, ZeRO-3)")
    if offload is not None and offload not in OFFLOAD_TARGETS:
        raise PlanError(f"{names[1]} {offload!r} is not one of {', '.join(OFFLOAD_TARGETS)} (or unset: no offload)")
