"""Step time: GEMMs, attention, element-wise kernels, communication and the pipeline schedule.

Every kernel's time comes from its FLOPs or bytes and the GPU table, scaled by the one global
`Efficiency`: a GEMM with dimensions (M, K, N) runs at the GPU's sustained matmul rate times
gemm_fraction * prod(d / (d + gemm_dim_half)), so small GEMMs (narrow tp slices, short heads) are
slower; element-wise kernels move bytes at hbm_fraction of HBM bandwidth; every kernel pays a fixed
launch/tail cost; collectives run at link_fraction of the link they cross.
"""

from __future__ import annotations

from dataclasses import dataclass

from megazoo.core.plan.params import shape_vocab, stage_layers, stage_params
from megazoo.core.plan.shapes import GPU, Efficiency, Layout, ModelShape


@dataclass
class StepTime:
    """Seconds per training step and where they go (per GPU, on the critical path)."""

    compute: float  # forward, backward and recompute of the busiest stage, m micro-batches
    bubble: float  # pipeline fill and drain
    tp_comm: float  # exposed tensor-parallel collectives (inside compute's stage time)
    pp_comm: float  # exposed pipeline sends and receives
    dp_comm: float  # exposed gradient reduction / parameter gather
    optimizer: float
    other: float
    executed_flops_per_gpu: float  # FLOPs the GPU really runs, recompute included

    @property
    def total(self) -> float:
        return self.compute + self.bubble + self.pp_comm + self.dp_comm + self.optimizer + self.other


def gemm_time(m: float, k: float, n: float, gpu: GPU, eff: Efficiency, batch: float = 1.0) -> float:
    """Seconds for `batch` GEMMs of (m x k) @ (k x n)."""
    shape_eff = 1.0
    for d in (m, k, n):
        shape_eff *= d / (d + eff.gemm_dim_half)
    return batch * 2.0 * m * k * n / (gpu.matmul_tflops * 1e12 * eff.gemm_fraction * shape_eff)


def _bytes_time(nbytes: float, gpu: GPU, eff: Efficiency) -> float:
    return nbytes / (gpu.hbm_gb_s * 1e9 * eff.hbm_fraction)


def layer_forward(shape: ModelShape, layout: Layout, gpu: GPU, eff: Efficiency) -> tuple[float, float, float]:
    """(GEMM seconds, attention-core seconds, element-wise seconds) of one layer's forward pass for
    one micro-batch on one GPU."""
    s = layout.seq_length or shape.seq_length
    b, h, t = layout.micro_batch, shape.hidden_size, layout.tp
    f, q, k, a, d = shape.ffn_hidden_size, shape.q_size, shape.kv_size, shape.num_heads, shape.head_dim
    tokens = b * s
    width = (2 if shape.gated else 1) * f
    gemm = (gemm_time(tokens, h, (q + 2 * k) / t, gpu, eff) + gemm_time(tokens, q / t, h, gpu, eff)
            + gemm_time(tokens, h, width / t, gpu, eff) + gemm_time(tokens, f / t, h, gpu, eff))
    heads = b * a / t
    if layout.flash_attention:
        frac = 0.5 if shape.causal else 1.0
        attn = frac * 4.0 * heads * s * s * d / (gpu.matmul_tflops * 1e12 * eff.gemm_fraction * eff.flash_fraction)
    else:  # two batched GEMMs per head over the full (masked) s x s matrix
        attn = gemm_time(s, d, s, gpu, eff, heads) + gemm_time(s, s, d, gpu, eff, heads)
    e = 4 if layout.precision == "fp32" else 2
    drop = 1 if shape.dropout else 0
    # norms (read + write), two bias-dropout-residual adds; replicated across tp unless SP
    rep = (2 * 2 * e + 2 * (3 * e + drop)) * tokens * h
    rep /= t if layout.sequence_parallel else 1
    split = (3 if shape.gated else 2) * e * tokens * f / t  # fused activation (and gating)
    if shape.position == "rope":
        split += 2 * e * tokens * (q + k) / t
    if not layout.flash_attention:  # fused scale-mask-softmax, then dropout on the probabilities
        split += (2 * e + drop * (2 * e + 1)) * heads * s * s
    # kernels per layer forward: 4 GEMMs, 2 norms, 2 residual adds, the activation, attention
    # (1 fused or 4 unfused: two batched GEMMs, softmax, dropout), rope
    kernels = 9 + (1 if layout.flash_attention else 4) + (1 if shape.position == "rope" else 0)
    elementwise = _bytes_time(rep + split, gpu, eff) + (kernels - 4) * eff.kernel_overhead_s
    return gemm + 4 * eff.kernel_overhead_s, attn, elementwise


def tp_bandwidth(layout: Layout, gpu: GPU, eff: Efficiency) -> float:
    per_node = layout.gpus_per_node or gpu.gpus_per_node
    link = (layout.nvlink_gb_s or gpu.nvlink_gb_s) if layout.tp <= per_node else (layout.network_gb_s or gpu.network_gb_s)
    return link * 1e9 * eff.link_fraction


def dp_bandwidth(layout: Layout, gpu: GPU, eff: Efficiency) -> float:
    """Bus bandwidth of a data-parallel collective: NVLink inside a node; across nodes, the
    adapters of the group's members on each node (one rail per GPU) share the traffic."""
    per_node = layout.gpus_per_node or gpu.gpus_per_node
    nvlink = layout.nvlink_gb_s or gpu.nvlink_gb_s
    if layout.tp * layout.dp <= per_node:
        return nvlink * 1e9 * eff.link_fraction
    members_per_node = max(1, min(layout.dp, per_node // layout.tp))
    net = (layout.network_gb_s or gpu.network_gb_s) * members_per_node
    return min(nvlink, net) * 1e9 * eff.link_fraction


def pp_bandwidth(layout: Layout, gpu: GPU, eff: Efficiency) -> float:
    per_node = layout.gpus_per_node or gpu.gpus_per_node
    if layout.tp * layout.dp * layout.pp <= per_node:
        return (layout.nvlink_gb_s or gpu.nvlink_gb_s) * 1e9 * eff.link_fraction
    return (layout.network_gb_s or gpu.network_gb_s) * 1e9 * eff.link_fraction


def stage_micro_batch_time(shape: ModelShape, layout: Layout, gpu: GPU, eff: Efficiency,
                           stage: int) -> tuple[float, float, float]:
    """(seconds, exposed tp-comm seconds, executed FLOPs) of one micro-batch through every chunk of
    pipeline rank `stage`: forward, recompute and backward."""
    s = layout.seq_length or shape.seq_length
    b, h, t = layout.micro_batch, shape.hidden_size, layout.tp
    e = 4 if layout.precision == "fp32" else 2
    gemm, attn, elem = layer_forward(shape, layout, gpu, eff)
    attn_bwd = 2.5 if layout.flash_attention else 2.0  # fused attention recomputes scores backward
    per_layer = 3 * gemm + (1 + attn_bwd) * attn + 3 * elem
    n_collectives = 4  # two forward, two backward (all-reduce, or all-gather + reduce-scatter)
    if layout.recompute == "full":
        per_layer += gemm + attn + elem
        n_collectives += 2
    elif layout.recompute == "selective":
        per_layer += attn + (0 if layout.flash_attention else elem * 0.5)
    tp_one = 0.0
    if t > 1:
        volume = e * s * b * h
        tp_one = 2 * (t - 1) / t * volume / tp_bandwidth(layout, gpu, eff)
    exposed = eff.overlap_exposed if layout.tp_comm_overlap else 1.0
    tp_layer = n_collectives * tp_one * exposed
    n_layers = sum(stop - start for start, stop in stage_layers(shape, layout, stage))
    if shape.arch == "t5":
        n_layers += shape.num_decoder_layers * 1.5  # cross-attention adds about half a layer
    seconds = n_layers * (per_layer + tp_layer)
    tp_total = n_layers * tp_layer
    d = shape.head_dim
    layer_flops = 2 * b * s * (h * (shape.q_size + 2 * shape.kv_size) + shape.q_size * h
                               + (3 if shape.gated else 2) * h * shape.ffn_hidden_size)
    layer_flops += (2 if (layout.flash_attention and shape.causal) else 4) * b * shape.num_heads * s * s * d
    passes = 4 if layout.recompute == "full" else 3
    flops = n_layers * layer_flops * passes
    if stage == layout.pp - 1:  # output layer GEMMs and cross-entropy
        vocab = shape_vocab(shape, t) / t
        seconds += 3 * gemm_time(b * s, h, vocab, gpu, eff) + _bytes_time(20 * b * s * vocab, gpu, eff)
        seconds += 2 * tp_one * exposed
        tp_total += 2 * tp_one * exposed
        flops += 6 * b * s * h * vocab
    if stage == 0 and t > 1:  # embedding reduction
        seconds += 2 * tp_one * exposed
        tp_total += 2 * tp_one * exposed
    return seconds, tp_total, flops


def step_time(shape: ModelShape, layout: Layout, gpu: GPU, eff: Efficiency) -> StepTime:
    p, v, m = layout.pp, layout.vpp, layout.num_micro_batches
    per_stage = [stage_micro_batch_time(shape, layout, gpu, eff, i) for i in range(p)]
    slowest = max(range(p), key=lambda i: per_stage[i][0])
    t_mb, tp_mb, flops_mb = per_stage[slowest]
    compute = m * t_mb
    bubble = (p - 1) / v * t_mb
    # pipeline sends: each chunk boundary sends the activation forward and its gradient back
    s = layout.seq_length or shape.seq_length
    e = 4 if layout.precision == "fp32" else 2
    pp_comm = 0.0
    if p > 1:
        volume = e * s * layout.micro_batch * shape.hidden_size
        if layout.scatter_gather or layout.sequence_parallel:
            volume /= layout.tp
        pp_comm = (m + (p - 1) / v) * 2 * v * volume / pp_bandwidth(layout, gpu, eff)
    # data-parallel gradient reduction (fp32 grads) and, with the distributed optimizer, param gather
    params = max(stage_params(shape, layout, i) for i in range(p))
    d = layout.dp
    dp_comm = 0.0
    optimizer_bytes = 34.0 * params
    if d > 1:
        bw = dp_bandwidth(layout, gpu, eff)
        grad = 4.0 * params
        reduce = (2 * (d - 1) / d if not layout.distributed_optimizer else (d - 1) / d) * grad / bw
        gather = (d - 1) / d * 2.0 * params / bw if layout.distributed_optimizer else 0.0
        dp_comm = reduce * (eff.overlap_exposed if layout.overlap_grad_reduce else 1.0)
        dp_comm += gather * (eff.overlap_exposed if layout.overlap_param_gather else 1.0)
    if layout.distributed_optimizer:
        optimizer_bytes /= d
    optimizer = _bytes_time(optimizer_bytes, gpu, eff)
    other = eff.step_overhead_s
    if p > 1 and shape.tie_embeddings:  # keep the two copies of the word embedding equal
        rows = shape_vocab(shape, layout.tp) / layout.tp
        other += 4.0 * rows * shape.hidden_size / pp_bandwidth(layout, gpu, eff)
    return StepTime(compute=compute, bubble=bubble, tp_comm=m * tp_mb, pp_comm=pp_comm, dp_comm=dp_comm,
                    optimizer=optimizer, other=other, executed_flops_per_gpu=m * flops_mb)
