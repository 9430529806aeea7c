"""Step time: GEMMs, attention, element-wise kernels, communication and the pipeline schedule.

Every kernel's time comes from its FLOPs or bytes and the GPU table, scaled by the one global
`Efficiency`: a GEMM with dimensions (M, K, N) runs at the GPU's sustained matmul rate times
gemm_fraction * prod(d / (d + gemm_dim_half)), so small GEMMs (narrow tp slices, short heads) are
slower; element-wise kernels move bytes at hbm_fraction of HBM bandwidth; every kernel pays a fixed
launch/tail cost; collectives run at link_fraction of the link they cross.
"""

from __future__ import annotations

from dataclasses import dataclass

from megazoo.core.plan.memory import zero3_units
from megazoo.core.plan.params import shape_vocab, stage_expert_params, stage_layers, stage_moe_layers, stage_params
from megazoo.core.plan.shapes import GPU, Efficiency, Layout, ModelShape
from megazoo.core.plan.zero import HOST_ADAM_GB_S, HOST_LINK_GB_S, zero_traffic_per_param


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
    cp_comm: float = 0.0  # exposed ring K/V (and dK/dV) sends of context parallelism (inside compute)
    ep_comm: float = 0.0  # expert all-to-all dispatch and combine (inside compute)
    dp_comm_total: float = 0.0  # data-parallel collectives' seconds before overlap (dp_comm: what is exposed)
    dp_bytes: float = 0.0  # bytes one GPU sends over the data-parallel groups per step (zero.py)

    @property
    def total(self) -> float:
        return self.compute + self.bubble + self.pp_comm + self.dp_comm + self.optimizer + self.other


# HBM bytes per logit of Megatron-LM's vocab-parallel cross-entropy, forward and backward: the fp32
# cast of the bf16 logits (2 + 4), the max (4), subtracting it (4 + 4), exp in place (4 + 4), the sum
# (4), the division into the softmax kept for backward (4 + 4), the backward's scaling by the loss
# gradient (4 + 4) and the cast back to bf16 for the output layer's backward GEMMs (4 + 2). It moves the
# rows whose vocabulary is large against the hidden size (the H100 table's 1.7B: V = 131,072, h = 2048).
CROSS_ENTROPY_BYTES = 52
CROSS_ENTROPY_BYTES_BEFORE = 20  # the count before issue 44 (rules_off "cross_entropy_bytes")


def gemm_time(m: float, k: float, n: float, gpu: GPU, eff: Efficiency, batch: float = 1.0) -> float:
    """Seconds for `batch` GEMMs of (m x k) @ (k x n)."""
    shape_eff = 1.0
    for d in (m, k, n):
        shape_eff *= d / (d + eff.gemm_dim_half)
    return batch * 2.0 * m * k * n / (gpu.matmul_tflops * 1e12 * eff.gemm_fraction * shape_eff)


def _bytes_time(nbytes: float, gpu: GPU, eff: Efficiency) -> float:
    return nbytes / (gpu.hbm_gb_s * 1e9 * eff.hbm_fraction)


def layer_forward(shape: ModelShape, layout: Layout, gpu: GPU, eff: Efficiency,
                  moe: bool = False) -> tuple[float, float, float]:
    """(GEMM seconds, attention-core seconds, element-wise seconds) of one layer's forward pass for
    one micro-batch on one GPU.

    Context parallelism: the rank's s / cp queries meet all s keys over the ring; the load-balanced
    split gives every rank 1/cp of the (causal) attention work. An MoE layer (moe=True) runs the
    router GEMM and, in place of the MLP, num_experts / ep expert GEMMs (grouped) over the tokens
    routed to this rank: balanced routing, top_k copies per token (capped by the capacity factor)
    spread evenly over the experts."""
    full = layout.seq_length or shape.seq_length
    s = full // layout.cp
    b, h, t = layout.micro_batch, shape.hidden_size, layout.tp
    f, q, k, a, d = shape.ffn_hidden_size, shape.q_size, shape.kv_size, shape.num_heads, shape.head_dim
    tokens = b * s
    gemm = gemm_time(tokens, h, (q + 2 * k) / t, gpu, eff) + gemm_time(tokens, q / t, h, gpu, eff)
    extra_kernels = 0
    routed = 1.0
    if moe:
        f, routed = shape.expert_ffn, shape.routed_share
        local = shape.num_experts // layout.ep
        gathered = expert_tokens(layout, tokens)
        per_expert = gathered * routed * layout.ep / shape.num_experts  # tokens each local expert runs
        width, et = (2 if shape.gated else 1) * f, layout.expert_tp
        gemm += gemm_time(own_tokens(layout, tokens), h, shape.num_experts, gpu, eff)  # the router
        gemm += local * (gemm_time(per_expert, h, width / et, gpu, eff) + gemm_time(per_expert, f / et, h, gpu, eff))
        extra_kernels = 4  # router softmax/top-k, permute, unpermute, weighted combine
    else:
        width = (2 if shape.gated else 1) * f
        gemm += gemm_time(tokens, h, width / t, gpu, eff) + gemm_time(tokens, f / t, h, gpu, eff)
    heads = b * a / t
    if layout.flash_attention:
        frac = 0.5 if shape.causal else 1.0
        attn = frac * 4.0 * heads * s * full * d / (gpu.matmul_tflops * 1e12 * eff.gemm_fraction * eff.flash_fraction)
    else:  # two batched GEMMs per head over the full (masked) s x s matrix
        attn = gemm_time(s, d, full, gpu, eff, heads) + gemm_time(s, full, d, gpu, eff, heads)
    e = 4 if layout.precision == "fp32" else 2
    drop = 1 if shape.dropout else 0
    # norms (read + write), two bias-dropout-residual adds; replicated across tp unless SP
    rep = 2 * (3 * e + drop) * tokens * h
    if moe:  # permute and unpermute the routed copies (read + write), the weighted combine
        rep += (2 * 2 * e + 2 * e) * tokens * routed * h
    rep /= t if layout.sequence_parallel else 1
    rep += norm_bytes(shape, layout, tokens)
    split = activation_bytes(shape, layout, tokens, moe)  # fused activation (and gating)
    if shape.position == "rope":
        split += 2 * e * tokens * (q + k) / t
    if not layout.flash_attention:  # fused scale-mask-softmax, then dropout on the probabilities
        split += (2 * e + drop * (2 * e + 1)) * heads * s * full
    # kernels per layer forward: 4 GEMMs, 2 norms, 2 residual adds, the activation, attention
    # (1 fused or 4 unfused: two batched GEMMs, softmax, dropout), rope
    kernels = 9 + (1 if layout.flash_attention else 4) + (1 if shape.position == "rope" else 0)
    elementwise = _bytes_time(rep + split, gpu, eff) + (kernels - 4 + extra_kernels) * eff.kernel_overhead_s
    return gemm + (4 + (1 if moe else 0)) * eff.kernel_overhead_s, attn, elementwise


def norm_bytes(shape: ModelShape, layout: Layout, tokens: float) -> float:
    """HBM bytes of a layer's two norms in one forward (read + write; per rank, split by sp)."""
    e = 4 if layout.precision == "fp32" else 2
    return 2 * 2 * e * tokens * shape.hidden_size / (layout.tp if layout.sequence_parallel else 1)


def activation_bytes(shape: ModelShape, layout: Layout, tokens: float, moe: bool = False) -> float:
    """HBM bytes of a layer's fused MLP activation (and gating) in one forward, per rank: the routed
    copies of an MoE layer, the expert's hidden size split over tp (over etp with folding: the same
    bytes per rank)."""
    e = 4 if layout.precision == "fp32" else 2
    f, routed = (shape.expert_ffn, shape.routed_share) if moe else (shape.ffn_hidden_size, 1.0)
    return routed * (3 if shape.gated else 2) * e * tokens * f / layout.tp


def own_tokens(layout: Layout, tokens: float) -> float:
    """Tokens (of a micro-batch's `tokens` per cp rank) a rank routes and dispatches itself: with
    Megatron-Core's folding and sequence parallelism its own slice, tokens / tp; megazoo's layer
    gathers the slices over tp before routing, so all of them."""
    return tokens / layout.tp if layout.folded and layout.sequence_parallel else tokens


def expert_tokens(layout: Layout, tokens: float) -> float:
    """Tokens (of a micro-batch's `tokens` per cp rank) whose routed copies one rank's experts share
    out: megazoo's layer gathers the sequence-parallel slices over tp before routing, so all of them;
    Megatron-Core's folding gathers only over the etp ranks of an expert, so etp / tp of them with
    sequence parallelism."""
    if layout.folded and layout.sequence_parallel:
        return tokens * layout.expert_tp / layout.tp
    return tokens


def tp_bandwidth(layout: Layout, gpu: GPU, eff: Efficiency, size: int | None = None) -> float:
    """Bus bandwidth of a tensor-parallel collective over `size` adjacent ranks (default: tp)."""
    per_node = layout.gpus_per_node or gpu.gpus_per_node
    size = layout.tp if size is None else size
    link = (layout.nvlink_gb_s or gpu.nvlink_gb_s) if size <= per_node else (layout.network_gb_s or gpu.network_gb_s)
    return link * 1e9 * eff.link_fraction


def dp_bandwidth(layout: Layout, gpu: GPU, eff: Efficiency, size: int | None = None,
                 stride: int | None = None) -> float:
    """Bus bandwidth of a data-parallel collective over `size` ranks `stride` apart (default: the dp
    group, tp apart): NVLink inside a node; across nodes, the adapters of the group's members on
    each node (one rail per GPU) share the traffic."""
    size = layout.dp if size is None else size
    stride = layout.tp if stride is None else stride
    per_node = layout.gpus_per_node or gpu.gpus_per_node
    nvlink = layout.nvlink_gb_s or gpu.nvlink_gb_s
    if stride * size <= per_node:
        return nvlink * 1e9 * eff.link_fraction
    members_per_node = max(1, min(size, per_node // stride))
    net = (layout.network_gb_s or gpu.network_gb_s) * members_per_node
    return min(nvlink, net) * 1e9 * eff.link_fraction


def cp_bandwidth(layout: Layout, gpu: GPU, eff: Efficiency) -> float:
    """The ring's point-to-point bandwidth: the cp ranks are tp apart, so the ring stays on NVLink
    while tp x cp fits in a node; otherwise its slowest hop crosses the network."""
    per_node = layout.gpus_per_node or gpu.gpus_per_node
    link = (layout.nvlink_gb_s or gpu.nvlink_gb_s) if layout.tp * layout.cp <= per_node \
        else (layout.network_gb_s or gpu.network_gb_s)
    return link * 1e9 * eff.link_fraction


def ring_exposed(shape: ModelShape, layout: Layout, gpu: GPU, eff: Efficiency, attn_fwd: float,
                 attn_bwd: float) -> tuple[float, float]:
    """Exposed seconds of one layer's ring traffic, (forward, backward), for one micro-batch.

    Forward: cp - 1 steps, each sending this rank's K and V chunk (2 x s/cp x b x kv / tp
    elements) to the next rank; backward: cp - 1 steps sending K, V and the accumulated dK, dV
    (twice the bytes), then one more shift of dK, dV that brings each block's gradient home after
    the last compute (core/parallel/ring_attention.py), always exposed. Assumption (megazoo's ring,
    as Megatron-Core's): with cp_overlap each step's send runs under the attention of the chunk in
    hand (1/cp of the layer's attention), so a step costs only what its send takes beyond that
    compute; without it, every send is exposed."""
    if layout.cp == 1:
        return 0.0, 0.0
    e = 4 if layout.precision == "fp32" else 2
    s = (layout.seq_length or shape.seq_length) // layout.cp
    kv_bytes = 2 * e * s * layout.micro_batch * shape.kv_size / layout.tp
    send = kv_bytes / cp_bandwidth(layout, gpu, eff)
    steps = layout.cp - 1
    if not layout.cp_overlap:
        return steps * send, steps * 2 * send + send
    return (steps * max(0.0, send - attn_fwd / layout.cp), steps * max(0.0, 2 * send - attn_bwd / layout.cp) + send)


def all_to_all_time(shape: ModelShape, layout: Layout, gpu: GPU, eff: Efficiency) -> float:
    """Seconds of one expert all-to-all (dispatch or combine) of one MoE layer and micro-batch.

    Volume per rank: its tokens x top_k (capped by the capacity factor) x h x bytes, of which
    (ep - 1)/ep leaves the rank. megazoo's MoE layer gathers the sequence-parallel slices over tp
    before routing (core/nn/moe/layer.py), so every tp rank dispatches all s / cp tokens of its
    micro-batch, and the ep ranks are tp x cp apart. With Megatron-Core's parallel folding
    (layout.etp) each rank dispatches its own slice (s / (cp tp) tokens with sequence parallelism)
    and the ep ranks are etp apart. The share bound for peers on this node crosses NVLink, the rest
    the node's network adapters (one per GPU), both at once."""
    if layout.ep == 1:
        return 0.0
    e = 4 if layout.precision == "fp32" else 2
    tokens = own_tokens(layout, layout.micro_batch * (layout.seq_length or shape.seq_length) // layout.cp)
    volume = tokens * shape.routed_share * shape.hidden_size * e
    per_node = layout.gpus_per_node or gpu.gpus_per_node
    stride = layout.expert_tp if layout.folded else layout.tp * layout.cp
    on_node = max(1, min(layout.ep, per_node // stride))  # ep members on one node, this rank included
    nvlink = (layout.nvlink_gb_s or gpu.nvlink_gb_s) * 1e9 * eff.link_fraction
    net = (layout.network_gb_s or gpu.network_gb_s) * 1e9 * eff.link_fraction
    intra = volume * (on_node - 1) / layout.ep / nvlink
    inter = volume * (layout.ep - on_node) / layout.ep / net
    return max(intra, inter)


def pp_bandwidth(layout: Layout, gpu: GPU, eff: Efficiency) -> float:
    per_node = layout.gpus_per_node or gpu.gpus_per_node
    if layout.gpus <= per_node:  # tp x cp x dp x pp: the whole grid on one node
        return (layout.nvlink_gb_s or gpu.nvlink_gb_s) * 1e9 * eff.link_fraction
    return (layout.network_gb_s or gpu.network_gb_s) * 1e9 * eff.link_fraction


@dataclass
class LayerTime:
    """One layer, one micro-batch, forward + recompute + backward, on one GPU."""

    seconds: float  # everything below included
    tp_comm: float
    cp_comm: float
    ep_comm: float
    flops: float  # executed


def layer_time(shape: ModelShape, layout: Layout, gpu: GPU, eff: Efficiency, moe: bool = False) -> LayerTime:
    """A dense layer, or with moe=True an MoE layer, with its exposed tp, ring and all-to-all time.
    The all-to-alls are on the critical path (not overlapped with compute, as in MCore v0.8)."""
    full = layout.seq_length or shape.seq_length
    s = full // layout.cp
    b, h, t = layout.micro_batch, shape.hidden_size, layout.tp
    e = 4 if layout.precision == "fp32" else 2
    gemm, attn, elem = layer_forward(shape, layout, gpu, eff, moe)
    attn_bwd = 2.5 if layout.flash_attention else 2.0  # fused attention recomputes scores backward
    per_layer = 3 * gemm + (1 + attn_bwd) * attn + 3 * elem
    n_collectives = 4  # two forward, two backward (all-reduce, or all-gather + reduce-scatter)
    ring_fwd, ring_bwd = ring_exposed(shape, layout, gpu, eff, attn, attn_bwd * attn)
    ring = ring_fwd + ring_bwd
    n_all_to_all = 4  # dispatch and combine, forward and backward
    if layout.recompute == "full":
        per_layer += gemm + attn + elem
        n_collectives += 2
        ring += ring_fwd
        n_all_to_all += 2
    elif layout.recompute == "selective":  # the modules listed (layout.recomputes), their forward again
        if layout.recomputes("core_attn"):
            per_layer += attn + (0 if layout.flash_attention else elem * 0.5)
            ring += ring_fwd  # the recomputed attention goes round the ring again
        tokens = b * s
        if layout.recomputes("layernorm"):  # two norm kernels
            per_layer += _bytes_time(norm_bytes(shape, layout, tokens), gpu, eff) + 2 * eff.kernel_overhead_s
        if moe and layout.recomputes("moe_act"):  # the experts' activation kernel
            per_layer += _bytes_time(activation_bytes(shape, layout, tokens, moe), gpu, eff) + eff.kernel_overhead_s
    tp_one = 0.0
    if t > 1:
        volume = e * s * b * h
        tp_one = 2 * (t - 1) / t * volume / tp_bandwidth(layout, gpu, eff)
    exposed = eff.overlap_exposed if layout.tp_comm_overlap else 1.0
    # an MoE layer's MLP side, in all-reduces of the layer's activation per direction: the experts'
    # tp all-reduce over the routed copies (top_k per token) and, with sp, the all-gather of the
    # sequence slices (half an all-reduce); a dense MLP: one. With parallel folding, the all-gather
    # and reduce-scatter of the routed copies over the etp ranks of each expert (none at etp 1)
    mlp_comm = tp_one
    if moe and layout.folded:
        et = layout.expert_tp
        rows = expert_tokens(layout, b * s) * shape.routed_share  # routed copies an etp group runs
        mlp_comm = 2 * (et - 1) / et * e * rows * h / tp_bandwidth(layout, gpu, eff, et) if et > 1 else 0.0
    elif moe:
        mlp_comm = (shape.routed_share + (0.5 if layout.sequence_parallel else 0.0)) * tp_one
    tp_layer = n_collectives * (tp_one + mlp_comm) / 2 * exposed
    ep_layer = n_all_to_all * all_to_all_time(shape, layout, gpu, eff) if moe else 0.0
    d = shape.head_dim
    if moe:
        mlp = shape.routed_share * (3 if shape.gated else 2) * h * shape.expert_ffn + h * shape.num_experts
    else:
        mlp = (3 if shape.gated else 2) * h * shape.ffn_hidden_size
    layer_flops = 2 * b * s * (h * (shape.q_size + 2 * shape.kv_size) + shape.q_size * h + mlp)
    layer_flops += (2 if (layout.flash_attention and shape.causal) else 4) * b * shape.num_heads * s * full * d
    passes = 4 if layout.recompute == "full" else 3
    return LayerTime(seconds=per_layer + tp_layer + ring + ep_layer, tp_comm=tp_layer, cp_comm=ring, ep_comm=ep_layer,
                     flops=layer_flops * passes)


def stage_micro_batch_time(shape: ModelShape, layout: Layout, gpu: GPU, eff: Efficiency,
                           stage: int) -> tuple[float, float, float, float, float]:
    """(seconds, exposed tp-comm seconds, executed FLOPs, exposed cp-ring seconds, all-to-all
    seconds) of one micro-batch through every chunk of pipeline rank `stage`: forward, recompute
    and backward."""
    s = (layout.seq_length or shape.seq_length) // layout.cp
    b, h, t = layout.micro_batch, shape.hidden_size, layout.tp
    e = 4 if layout.precision == "fp32" else 2
    n_layers = sum(stop - start for start, stop in stage_layers(shape, layout, stage))
    n_moe = stage_moe_layers(shape, layout, stage)
    if shape.traits.encoder_decoder:
        n_layers += shape.num_decoder_layers * 1.5  # cross-attention adds about half a layer
    dense = layer_time(shape, layout, gpu, eff)
    sparse = layer_time(shape, layout, gpu, eff, moe=True) if n_moe else dense
    parts = [(n_layers - n_moe, dense), (n_moe, sparse)]
    seconds = sum(n * lt.seconds for n, lt in parts)
    tp_total = sum(n * lt.tp_comm for n, lt in parts)
    cp_total = sum(n * lt.cp_comm for n, lt in parts)
    ep_total = sum(n * lt.ep_comm for n, lt in parts)
    flops = sum(n * lt.flops for n, lt in parts)
    exposed = eff.overlap_exposed if layout.tp_comm_overlap else 1.0
    tp_one = 2 * (t - 1) / t * e * s * b * h / tp_bandwidth(layout, gpu, eff) if t > 1 else 0.0
    if stage == layout.pp - 1 and shape.lm_head:  # output layer GEMMs and cross-entropy (a shape without
        # an output layer, such as BLOOM's layer slots where a slot stands in for it, pays none)
        vocab = shape_vocab(shape, t) / t
        ce_bytes = CROSS_ENTROPY_BYTES_BEFORE if "cross_entropy_bytes" in eff.rules_off else CROSS_ENTROPY_BYTES
        seconds += 3 * gemm_time(b * s, h, vocab, gpu, eff) + _bytes_time(ce_bytes * b * s * vocab, gpu, eff)
        seconds += 2 * tp_one * exposed
        tp_total += 2 * tp_one * exposed
        flops += 6 * b * s * h * vocab
    if stage == 0 and t > 1:  # embedding reduction
        seconds += 2 * tp_one * exposed
        tp_total += 2 * tp_one * exposed
    return seconds, tp_total, flops, cp_total, ep_total


def bubble_time(layout: Layout, t_mb: float, eff: Efficiency | None = None) -> float:
    """Pipeline fill and drain: (p - 1) / v micro-batch times (forward, recompute and backward) for
    Megatron-LM's 1F1B and interleaved schedules.

    DeepSpeed's pipeline engine (layout.pipeline_engine "deepspeed", no interleaving) pays twice
    that, 2 (p - 1) micro-batch times. The rule is read off MT-NLG's table, the one source that
    varies the number of micro-batches at a fixed pipeline: its three step times (60.1, 50.2, 44.4 s
    at 240, 192, 160 micro-batches) fall on a line whose slope is the planner's micro-batch time
    (within 6%) and whose intercept, the part that does not shrink with the micro-batches, is 13 s
    where the Megatron bubble leaves 7 s (docs/parallelism.md). DeepSpeed's TrainSchedule runs 2 (m + p - 1)
    alternating forward and backward steps with blocking sends and receives between neighbours;
    during fill and drain a stage's idle slots wait on its neighbours' opposite passes, which is
    where the second (p - 1) comes from (the mechanism is our reading of the schedule; the size is
    the table's)."""
    p, v = layout.pp, layout.vpp
    rule = eff is None or "deepspeed_bubble" not in eff.rules_off
    slots = 2 * (p - 1) if layout.pipeline_engine == "deepspeed" and rule else (p - 1) / v
    return slots * t_mb


def overlapped_exposed(total: float, buckets: int, eff: Efficiency) -> float:
    """Exposed seconds of an overlapped data-parallel collective of `total` seconds cut into
    `buckets` equal buckets: the share an overlapped collective leaves exposed (eff.overlap_exposed),
    and never less than one bucket. The last gradient bucket is complete only when the backward pass
    ends (the first weight bucket is needed before the forward can start), so nothing hides it: it
    binds for few, large buckets (ZeRO-3's layer units of a small model, a model in one bucket).
    A stricter reading (every bucket past the last micro-batch's backward exposed, Megatron-Core's
    schedule) was tried and rejected: docs/parallelism.md has its figures."""
    return max(eff.overlap_exposed * total, total / max(1, buckets))


def zero3_gather_exposed(gather_pass: float, units: int, t_mb: float, layout: Layout, eff: Efficiency) -> float:
    """Exposed seconds of ZeRO-3's weight all-gathers for one micro-batch: one pass of `gather_pass`
    seconds (all the stage's weights, `units` units) in the forward and one in the backward. Without
    prefetch every gather waits. With it, each unit's gather runs under the previous unit's compute
    (the forward about a third of the micro-batch time, a quarter with full recompute, the backward
    the rest): a pass costs its first unit's gather, then for each later unit what its gather takes
    beyond that compute, and at least the share an overlapped collective leaves exposed
    (eff.overlap_exposed, as for the overlapped gradient reduction)."""
    g = gather_pass / units
    if not layout.shard_prefetch:
        return 2 * gather_pass
    forward = forward_share(layout) * t_mb
    return sum(g + (units - 1) * max(eff.overlap_exposed * g, g - c / units) for c in (forward, t_mb - forward))


def forward_share(layout: Layout) -> float:
    """The forward pass's share of a micro-batch's time: a third (forward 1, backward 2), a quarter
    with full recompute (the backward runs the forward again)."""
    return 1 / (4 if layout.recompute == "full" else 3)


def step_time(shape: ModelShape, layout: Layout, gpu: GPU, eff: Efficiency) -> StepTime:
    p, v, m = layout.pp, layout.vpp, layout.num_micro_batches
    per_stage = [stage_micro_batch_time(shape, layout, gpu, eff, i) for i in range(p)]
    slowest = max(range(p), key=lambda i: per_stage[i][0])
    t_mb, tp_mb, flops_mb, cp_mb, ep_mb = per_stage[slowest]
    compute = m * t_mb
    bubble = bubble_time(layout, t_mb, eff)
    # pipeline sends: each chunk boundary sends the activation forward and its gradient back
    s = (layout.seq_length or shape.seq_length) // layout.cp
    e = 4 if layout.precision == "fp32" else 2
    pp_comm = 0.0
    if p > 1:
        volume = e * s * layout.micro_batch * shape.hidden_size
        if layout.scatter_gather or layout.sequence_parallel:
            volume /= layout.tp
        pp_comm = (m + (p - 1) / v) * 2 * v * volume / pp_bandwidth(layout, gpu, eff)
    # data-parallel traffic (zero.py): dense parameters over the dp x cp ranks (tp apart), expert
    # parameters over the expert-dp ranks (tp x cp x dp / (expert_tp x ep); expert_tp x ep apart, for
    # megazoo's layer an approximation when cp > 1); gradients in fp32, weights in the compute dtype
    big = max(range(p), key=lambda i: stage_params(shape, layout, i))
    experts = stage_expert_params(shape, layout, big)
    groups = [(stage_params(shape, layout, big) - experts, layout.dp_cp, layout.tp, True),
              (experts, layout.expert_dp, layout.expert_tp * layout.ep, False)]
    mode = layout.sharding
    # ZeRO-3 keeps each chunk's root unit (embedding, head) gathered all step: gathered once, its
    # gradients reduce-scattered per micro-batch, as ZeRO-2 does (core/optim/weight_shards.py)
    roots, layer_units = zero3_units(shape, layout, big) if mode == "full" else ([], [])
    dp_comm = dp_total = dp_bytes = gather_pass = 0.0
    optimizer_bytes = 0.0
    for params, d, stride, dense in groups:
        if not params:
            continue
        if d > 1:
            bw = dp_bandwidth(layout, gpu, eff, d, stride)
            parts = [(params, mode)]
            if mode == "full" and dense:  # the dense group holds the roots
                parts = [(params - sum(roots), "full"), (sum(roots), "grads")]
            for n, how in parts:
                traffic = zero_traffic_per_param(how, d, m, layout.precision)
                reduce = 4.0 * (traffic["all_reduce"] + traffic["reduce_scatter"]) * n / bw
                gather = e * traffic["all_gather"] * n / bw
                dp_bytes += traffic["bytes"] * n
                dp_total += reduce + gather
                # the gradient buckets: ZeRO-3's layer units (each reduce-scattered once its gradients are
                # in), else bucket_size elements; ZeRO-2/3 reduce every micro-batch under its own backward,
                # the others once, under the last micro-batch's backward
                buckets = len(layer_units) if how == "full" else -(-n // layout.bucket_size)
                times = m if how in ("grads", "full") else 1
                if layout.overlap_grad_reduce:
                    dp_comm += times * overlapped_exposed(reduce / times, buckets, eff)
                else:
                    dp_comm += reduce
                if how == "full":  # the layers: per micro-batch, forward and backward (the prefetch rule)
                    gather_pass += gather / (2 * m)
                elif mode == "full":  # the roots: once, at the first forward, before any layer
                    dp_comm += gather
                elif layout.overlap_param_gather:  # once per step, under the next step's first forward
                    dp_comm += overlapped_exposed(gather, buckets, eff)
                else:  # once per step, after the optimizer
                    dp_comm += gather
        optimizer_bytes += 34.0 * params / (d if layout.sharded else 1)
    if gather_pass:
        dp_comm += m * zero3_gather_exposed(gather_pass, len(layer_units), t_mb, layout, eff)
    if layout.optimizer_offload:  # the shard's fp32 gradients to the host, Adam there, the weights back
        shard = optimizer_bytes / 34.0
        optimizer = (4.0 + e) * shard / (HOST_LINK_GB_S * 1e9) + optimizer_bytes / (HOST_ADAM_GB_S * 1e9)
    else:
        optimizer = _bytes_time(optimizer_bytes, gpu, eff)
    other = eff.step_overhead_s
    if p > 1 and shape.tie_embeddings:  # keep the two copies of the word embedding equal
        rows = shape_vocab(shape, layout.tp) / layout.tp
        other += 4.0 * rows * shape.hidden_size / pp_bandwidth(layout, gpu, eff)
    return StepTime(compute=compute, bubble=bubble, tp_comm=m * tp_mb, pp_comm=pp_comm, dp_comm=dp_comm,
                    optimizer=optimizer, other=other, executed_flops_per_gpu=m * flops_mb, cp_comm=m * cp_mb,
                    ep_comm=m * ep_mb, dp_comm_total=dp_total, dp_bytes=dp_bytes)
