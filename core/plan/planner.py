"""`plan`: memory, FLOPs and step time of one (model, layout, GPU); `search`: rank the layouts."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from megazoo.core.plan.flops import convention_flops, model_flops
from megazoo.core.plan.hardware import DEFAULT_EFFICIENCY, get_gpu
from megazoo.core.plan.memory import GIB, StageMemory, stage_memory
from megazoo.core.plan.params import active_params, check_layout, stage_params, total_params
from megazoo.core.plan.shapes import GPU, Efficiency, Layout, ModelShape
from megazoo.core.plan.timing import StepTime, step_time


@dataclass
class Plan:
    """The planner's answer for one layout. Memory in GiB (2^30 bytes), time in seconds."""

    model: str
    gpu: str
    layout: dict
    dp: int
    num_micro_batches: int
    params_total: int
    params_per_gpu: int  # the largest pipeline stage, one tp rank
    memory_gb_per_gpu: float  # the stage with the largest total
    memory_breakdown_gb: dict
    gpu_memory_gb: float
    fits: bool
    flops_per_iteration: float  # model FLOPs (DESIGN.md formula, no recompute)
    step_time_s: float
    time_breakdown_s: dict
    tokens_per_s: float
    tflops_per_gpu: float  # FLOPs per second per GPU in `flops_convention` (default: model FLOPs)
    hw_tflops_per_gpu: float  # executed FLOPs (recompute included) per second per GPU
    mfu: float
    bubble_fraction: float
    stages: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    flops_convention: str = "model"  # the convention of tflops_per_gpu (flops.FLOPS_CONVENTIONS)
    params_active: int = 0  # parameters one token runs through (MoE: top_k experts); dense: params_total
    host_memory_gb_per_gpu: float = 0.0  # optimizer offload: host memory per GPU (fp32 main weights, Adam, grads)
    dp_traffic_gb: float = 0.0  # GiB one GPU sends over its data-parallel groups per step (core/plan/zero.py)
    dp_comm_s: float = 0.0  # seconds of that traffic before overlap (time_breakdown_s dp_comm: what is exposed)

    def to_dict(self) -> dict:
        return asdict(self)


def plan(shape: ModelShape, layout: Layout, gpu: str | GPU = "a100-80gb",
         eff: Efficiency = DEFAULT_EFFICIENCY, flops_convention: str = "model") -> Plan:
    """Evaluate one layout; raises PlanError for a layout that does not divide the model or GPUs.
    tflops_per_gpu is counted in `flops_convention`; flops_per_iteration and mfu stay model FLOPs."""
    g = get_gpu(gpu)
    check_layout(shape, layout)
    stages: list[StageMemory] = [stage_memory(shape, layout, i, eff.overhead_gib) for i in range(layout.pp)]
    worst = max(stages, key=lambda m: m.total)
    t: StepTime = step_time(shape, layout, g, eff)
    seq = layout.seq_length or shape.seq_length
    flops = model_flops(shape, layout.batch, seq, tp=layout.tp)
    reported = convention_flops(shape, layout.batch, seq, layout.tp, flops_convention)
    step = t.total
    warnings = []
    if layout.vpp > 1 and layout.num_micro_batches % layout.pp:
        warnings.append(f"interleaved schedule: {layout.num_micro_batches} micro-batches per replica is not a "
                        f"multiple of pp {layout.pp} (Megatron-LM requires it)")
    if worst.total > g.memory_gib * GIB:
        warnings.append(f"needs {worst.total / GIB:.1f} GiB on pipeline stage {worst.stage}, the "
                        f"{g.name} has {g.memory_gib:.0f} GiB: does not fit")
    return Plan(
        model=shape.name or "model", gpu=g.name,
        layout=dict(gpus=layout.gpus, tp=layout.tp, pp=layout.pp, vpp=layout.vpp, dp=layout.dp, cp=layout.cp,
                    ep=layout.ep, etp=layout.etp, cp_overlap=layout.cp_overlap,
                    micro_batch=layout.micro_batch, global_batch=layout.batch, seq_length=seq,
                    sp=layout.sequence_parallel, recompute=layout.recompute,
                    recompute_modules=list(layout.recompute_modules),
                    distributed_optimizer=layout.distributed_optimizer, shard=layout.sharding,
                    shard_prefetch=layout.shard_prefetch, optimizer_offload=layout.optimizer_offload,
                    precision=layout.precision,
                    flash_attention=layout.flash_attention, scatter_gather=layout.scatter_gather,
                    pipeline_engine=layout.pipeline_engine,
                    overlap_grad_reduce=layout.overlap_grad_reduce,
                    overlap_param_gather=layout.overlap_param_gather, tp_comm_overlap=layout.tp_comm_overlap),
        dp=layout.dp, num_micro_batches=layout.num_micro_batches,
        params_total=total_params(shape), params_per_gpu=max(stage_params(shape, layout, i) for i in range(layout.pp)),
        memory_gb_per_gpu=worst.total / GIB,
        memory_breakdown_gb={k: getattr(worst, k) / GIB for k in ("weights", "grads", "optimizer", "activations", "overhead")}
        | ({"gathered": worst.gathered / GIB} if layout.sharding == "full" else {}),
        gpu_memory_gb=g.memory_gib, fits=worst.total <= g.memory_gib * GIB,
        flops_per_iteration=flops, step_time_s=step,
        time_breakdown_s=dict(compute=t.compute, bubble=t.bubble, tp_comm_in_compute=t.tp_comm,
                              **({"cp_comm_in_compute": t.cp_comm} if layout.cp > 1 else {}),
                              **({"ep_comm_in_compute": t.ep_comm} if shape.moe else {}),
                              pp_comm=t.pp_comm, dp_comm=t.dp_comm, optimizer=t.optimizer, other=t.other),
        tokens_per_s=layout.batch * seq / step,
        tflops_per_gpu=reported / step / layout.gpus / 1e12,
        hw_tflops_per_gpu=t.executed_flops_per_gpu / step / 1e12,
        mfu=flops / step / layout.gpus / (g.peak_tflops * 1e12),
        bubble_fraction=(layout.pp - 1) / (layout.vpp * layout.num_micro_batches),
        stages=[dict(stage=m.stage, params=m.params, memory_gb=m.total / GIB, activations_gb=m.activations / GIB,
                     inflight=m.inflight_micro_batches) for m in stages],
        warnings=warnings, flops_convention=flops_convention, params_active=active_params(shape),
        host_memory_gb_per_gpu=max(m.host for m in stages) / GIB, dp_traffic_gb=t.dp_bytes / GIB,
        dp_comm_s=t.dp_comm_total,
    )
