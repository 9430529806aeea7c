"""Memory per GPU: model states by DESIGN.md section 5, activations by Korthikanti et al. 2022.

Activation bytes per layer and micro-batch (s sequence, b micro-batch, h hidden, t tp, a heads),
for a GELU MLP with f = 4h and dropout: sbh(34 + 5as/h) with no parallelism; with tensor
parallelism sbh(10 + 24/t + 5as/(ht)); adding sequence parallelism divides everything by t;
selective recompute drops the 5as/h term (the s x s attention core); full recompute keeps only the
layer input, 2sbh (/t with sequence parallelism). The terms are built item by item below so that
GQA, SwiGLU, f != 4h, no-dropout and fused (flash) attention follow from the same counting.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from megazoo.core.plan.params import shape_vocab, stage_layers, stage_moe_layers, stage_params, stage_shapes
from megazoo.core.plan.shapes import Layout, ModelShape

GIB = float(2**30)


@dataclass
class StageMemory:
    """Bytes held by one GPU of pipeline rank `stage`."""

    stage: int
    params: int
    weights: int
    grads: int
    optimizer: int
    activations: int
    overhead: int
    inflight_micro_batches: int

    @property
    def total(self) -> int:
        return self.weights + self.grads + self.optimizer + self.activations + self.overhead


def state_bytes(params: int, precision: str, distributed_optimizer: bool, dp: int) -> tuple[int, int, int]:
    """(weights, grads, optimizer states) bytes per DESIGN.md section 5: bf16/fp16 params with fp32
    grads, fp32 main params and Adam m, v (18 bytes, or 6 + 12/d sharded); fp32: 4 + 4 + 8 (or 8 + 8/d).
    The textbook count; stage_memory uses megazoo_state_bytes, which adds what megazoo really holds
    besides (bucket padding, the distributed optimizer's reduced-gradient shard of 4/d bytes)."""
    if precision == "fp32":
        weights, grads, opt_per = 4 * params, 4 * params, 8
    else:
        weights, grads, opt_per = 2 * params, 4 * params, 12
    shard = -(-params // dp) if distributed_optimizer else params
    return weights, grads, opt_per * shard


def grad_buckets(shape: ModelShape, layout: Layout, stage: int) -> list[tuple[int, int, int, bool]]:
    """(elements, padded elements, shards, expert) of each gradient bucket of pipeline rank `stage`, laid out
    as megazoo's GradBuffers does (core/optim/buffers.py): parameters in reverse model order, first
    the dense ones, then the MoE experts' in buckets of their own, then the tied embedding copies
    (pp > 1) in a separate last bucket; a bucket is closed once it holds at least `layout.bucket_size`
    elements and padded to a multiple of its shard count (with the distributed optimizer: dp x cp for
    dense buckets, the expert-dp size dp x cp / ep for expert buckets; else 1). The order within the
    model follows stage_shapes, except that GPT's learned positions come before the word embedding,
    as in the real module."""
    shapes = stage_shapes(shape, layout, stage, experts=False if shape.moe else None)
    experts = stage_shapes(shape, layout, stage, experts=True) if shape.moe else []
    late: list[tuple[int, ...]] = []
    if shape.tie_embeddings and layout.pp > 1 and shape.traits.pipeline_parallel:
        if stage == 0:
            late.append(shapes.pop(0))  # the word embedding
        if stage == layout.pp - 1:
            late.append(shapes.pop())  # the last stage's copy of it (the output layer)
    if stage == 0 and shape.traits.position_table_first and shape.position == "learned" and not late and shapes:
        shapes[0], shapes[1] = shapes[1], shapes[0]  # pos_embed is registered before embed.weight
    dense = layout.dp_cp if layout.distributed_optimizer else 1
    expert = layout.expert_dp if layout.distributed_optimizer else 1
    out: list[tuple[int, int, int, bool]] = []
    for group, shards, is_expert in ((shapes, dense, False), (experts, expert, True), (late, dense, False)):
        used = 0
        group = list(reversed(group))
        for i, s in enumerate(group):
            used += prod(s)
            if used >= layout.bucket_size or i == len(group) - 1:
                out.append((used, -(-used // shards) * shards, shards, is_expert))
                used = 0
    return out


def megazoo_state_bytes(shape: ModelShape, layout: Layout, stage: int, dp_rank: int = 0) -> tuple[int, int, int]:
    """(weights, grads, optimizer states) bytes of one GPU as megazoo really holds them, exactly:
    the flat parameter buffer and the fp32 main-grad buffer span the padded buckets; with the
    distributed optimizer (a bucket sharded over more than one rank) a separate fp32 shard receives
    the reduce-scattered gradients (each bucket's padded size / its shards); bf16/fp16 models keep
    fp32 main parameters for the owned (padded) shards, fp32 models update their own parameters;
    Adam's m and v (fp32) cover only the real elements this rank owns (the padding at a bucket's end
    falls in the last ranks' slices, so rank 0 holds the most). dp_rank is the data-parallel rank
    (cp rank 0): dp_rank x cp in the dense buckets' dp x cp group, (dp_rank // ep) x cp in the
    expert buckets' expert-dp group (core/parallel/context.py)."""
    buckets = grad_buckets(shape, layout, stage)
    numel = sum(padded for _, padded, _, _ in buckets)
    sharded = layout.distributed_optimizer and any(shards > 1 for _, _, shards, _ in buckets)
    shard_numel, owned = 0, 0
    for used, padded, shards, expert in buckets:
        size = padded // shards
        rank = (dp_rank // layout.ep if expert else dp_rank) * layout.cp if shards > 1 else 0
        shard_numel += size
        owned += max(0, min(used, (rank + 1) * size) - rank * size)
    e = 4 if layout.precision == "fp32" else 2
    weights = e * numel
    grads = 4 * numel + (4 * shard_numel if sharded else 0)
    main = 0 if layout.precision == "fp32" else 4 * (shard_numel if sharded else numel)
    return weights, grads, main + 8 * owned


def local_seq(shape: ModelShape, layout: Layout) -> int:
    """Tokens of one sequence a rank holds: s / cp (two chunks of s / (2 cp) with context parallelism)."""
    return (layout.seq_length or shape.seq_length) // layout.cp


def layer_activation_bytes(shape: ModelShape, layout: Layout, recompute: str | None = None,
                           moe: bool = False) -> float:
    """Activations one layer keeps for the backward pass of one micro-batch, per GPU.

    Context parallelism: every per-token item holds s / cp tokens; the attention core of the ring
    keeps, fused, the log-sum-exp of its s / cp rows (unfused: its s / cp x s scores). An MoE layer
    (moe=True) keeps, in place of the MLP's hidden items, those of its routed token copies (top_k
    per token, capped by the capacity factor; balanced routing): the experts' hidden activations
    (split over tp), and, whole on every tp rank, the gathered router input, the expert input and
    output rows and the router's fp32 logits and probabilities (an estimate; the dense items are
    Korthikanti's count)."""
    s = local_seq(shape, layout)
    full = layout.seq_length or shape.seq_length
    b, h, t = layout.micro_batch, shape.hidden_size, layout.tp
    f, q, k = shape.ffn_hidden_size, shape.q_size, shape.kv_size
    a = shape.num_heads
    sp = layout.sequence_parallel
    e = 4 if layout.precision == "fp32" else 2  # bytes per stored activation element
    recompute = recompute or layout.recompute
    drop = 1 if shape.dropout else 0
    if recompute == "full":
        return e * s * b * h / (t if sp else 1)
    # replicated across tp ranks unless sequence parallel: two norm inputs, the qkv and fc1 inputs,
    # two dropout masks (1 byte per element)
    replicated = (4 * e + drop * 2) * s * b * h
    # split across tp ranks: q, k, v; the attention output (projection input); the MLP
    split = e * s * b * (q + 2 * k) + e * s * b * q
    routed = 1.0
    whole = 0.0  # held whole on every tp rank, sequence parallel or not
    if moe:
        f, routed = shape.expert_ffn, shape.routed_share
        # megazoo gathers the sp slices before routing (core/nn/moe/layer.py): the router's input, the
        # expert input and output rows of the routed copies, the router's fp32 logits and probabilities
        whole = e * s * b * h + 2 * e * s * b * h * routed + 8 * s * b * shape.num_experts
    split += routed * e * s * b * f * (2 if shape.gated else 1)  # activation-function input(s)
    split += routed * e * s * b * f  # fc2 input
    if recompute != "selective":
        if layout.flash_attention:
            split += 4 * a * s * b  # fp32 log-sum-exp per row; no s x s matrix is stored
        else:
            split += (e + drop * (1 + e)) * a * s * full * b  # softmax output, dropout mask and output
    return (replicated / (t if sp else 1)) + split / t + whole


def stage_layer_activation_bytes(shape: ModelShape, layout: Layout, stage: int, recompute: str | None = None) -> float:
    """Mean of layer_activation_bytes over the layers of pipeline rank `stage` (MoE and dense layers)."""
    n_moe = stage_moe_layers(shape, layout, stage)
    if not n_moe:
        return layer_activation_bytes(shape, layout, recompute)
    n = sum(stop - start for start, stop in stage_layers(shape, layout, stage))
    return ((n - n_moe) * layer_activation_bytes(shape, layout, recompute)
            + n_moe * layer_activation_bytes(shape, layout, recompute, moe=True)) / n


def ring_buffer_bytes(shape: ModelShape, layout: Layout) -> float:
    """Context parallelism's transient peak: the K/V chunk in hand and the one arriving (cp > 1)."""
    if layout.cp == 1:
        return 0.0
    e = 4 if layout.precision == "fp32" else 2
    return 2 * 2 * e * local_seq(shape, layout) * layout.micro_batch * shape.kv_size / layout.tp


def inflight_chunks(layout: Layout, stage: int) -> int:
    """Model-chunk micro-batches whose activations pipeline rank `stage` holds at its peak: p - i for
    1F1B; 2(p - i - 1) + (v - 1)p + 1 for the interleaved schedule (Megatron's warm-up), at most m*v."""
    p, v, m = layout.pp, layout.vpp, layout.num_micro_batches
    if v == 1:
        return min(p - stage, m)
    return min(2 * (p - stage - 1) + (v - 1) * p + 1, m * v)


def stage_memory(shape: ModelShape, layout: Layout, stage: int, overhead_gib: float,
                 dp_rank: int = 0) -> StageMemory:
    """Memory of one GPU of pipeline rank `stage` (data-parallel rank `dp_rank`; rank 0 holds the most).
    Weights, gradients and optimizer states are megazoo's real layout (megazoo_state_bytes)."""
    params = stage_params(shape, layout, stage)
    weights, grads, optimizer = megazoo_state_bytes(shape, layout, stage, dp_rank)
    s = local_seq(shape, layout)
    b, h, t = layout.micro_batch, shape.hidden_size, layout.tp
    sp_div = t if layout.sequence_parallel else 1
    e = 4 if layout.precision == "fp32" else 2
    chunks = inflight_chunks(layout, stage)
    chunk_layers = shape.num_layers // (layout.pp * layout.vpp)
    layers_per_rank = sum(stop - start for start, stop in stage_layers(shape, layout, stage))
    encoder_decoder = shape.traits.encoder_decoder  # one stage holding both stacks
    n_layers = shape.num_layers + shape.num_decoder_layers if encoder_decoder else layers_per_rank
    act = chunks * chunk_layers * stage_layer_activation_bytes(shape, layout, stage) if not encoder_decoder else \
        n_layers * layer_activation_bytes(shape, layout)
    if layout.recompute == "full":  # one layer's full set is live while it is recomputed
        act += layer_activation_bytes(shape, layout, recompute="none", moe=shape.moe)
    act += ring_buffer_bytes(shape, layout)
    if stage == 0 and shape.dropout:  # embedding dropout mask per in-flight micro-batch
        act += -(-chunks // layout.vpp) * s * b * h / sp_div
    if stage == layout.pp - 1:  # final norm and head inputs, the cross-entropy's fp32 softmax (4sbV/t)
        vocab = shape_vocab(shape, t) // t
        act += 2 * e * s * b * h / sp_div + 4 * s * b * vocab
    return StageMemory(stage=stage, params=params, weights=weights, grads=grads, optimizer=optimizer,
                       activations=int(act), overhead=int(overhead_gib * GIB), inflight_micro_batches=chunks)
