"""Memory per GPU: model states by DESIGN.md section 5, activations by Korthikanti et al. 2022.

Activation bytes per layer and micro-batch (s sequence, b micro-batch, h hidden, t tp, a heads),
for a GELU MLP with f = 4h and dropout: sbh(34 + 5as/h) with no parallelism; with tensor
parallelism sbh(10 + 24/t + 5as/(ht)); adding sequence parallelism divides everything by t;
selective recompute drops the 5as/h term (the s x s attention core); full recompute keeps only the
layer input, 2sbh (/t with sequence parallelism). The terms are built item by item below so that
GQA, SwiGLU, f != 4h, no-dropout and fused (flash) attention follow from the same counting.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from math import prod

from megazoo.core.plan.params import (embedding_shapes, expert_shapes, head_shapes, layer_shapes, shape_vocab,
                                      stage_layers, stage_moe_layers, stage_params, stage_shapes)
from megazoo.core.plan.shapes import Layout, ModelShape
from megazoo.core.plan.zero import state_parts

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
    gathered: int = 0  # ZeRO-3: the whole weights of the unit(s) in use, gathered from the shards
    host: int = 0  # optimizer offload: bytes in host memory (not on the GPU, not in total)

    @property
    def total(self) -> int:
        return self.weights + self.gathered + self.grads + self.optimizer + self.activations + self.overhead


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


def _split_late(shape: ModelShape, layout: Layout, dense: list, first: bool, last: bool) -> tuple[list, list]:
    """(dense, late): the tied embedding copies (pp > 1) leave `dense` for a late bucket of their own
    (the word embedding, first in the first unit of stage 0; the output layer, last in the unit
    holding the head); GPT's learned positions are registered before the word embedding."""
    late: list[tuple[int, ...]] = []
    if shape.tie_embeddings and layout.pp > 1 and shape.traits.pipeline_parallel:
        if first:
            late.append(dense.pop(0))  # the word embedding
        if last:
            late.append(dense.pop())  # the last stage's copy of it (the output layer)
    if first and shape.traits.position_table_first and shape.position == "learned" and not late and len(dense) > 1:
        dense[0], dense[1] = dense[1], dense[0]  # pos_embed is registered before embed.weight
    return dense, late


def grad_units(shape: ModelShape, layout: Layout, stage: int) -> list[tuple[list, list, list]]:
    """(dense, expert, late) parameter shapes of each unit of pipeline rank `stage`, in model order.
    ZeRO-3 (shard full) cuts buckets per unit, the units it gathers: per model chunk, what it holds
    outside its layers (the embedding on the first chunk, the final norm and output layer on the
    last: one unit, empty in a middle chunk), then each transformer layer (T5: its encoder's, then its
    decoder's), as core/optim/weight_shards.find_units; otherwise the whole stage is one unit."""
    moe, t, p = shape.moe, layout.tp, layout.pp
    if layout.sharding != "full":
        dense, late = _split_late(shape, layout, stage_shapes(shape, layout, stage, experts=False if moe else None),
                                  stage == 0, stage == p - 1)
        return [(dense, stage_shapes(shape, layout, stage, experts=True) if moe else [], late)]
    seq = layout.seq_length or shape.seq_length
    chunks = stage_layers(shape, layout, stage)
    out: list[tuple[list, list, list]] = []
    for c, (start, stop) in enumerate(chunks):
        first, last = stage == 0 and c == 0, stage == p - 1 and c == len(chunks) - 1
        outside = embedding_shapes(shape, t, seq) if first else []
        if shape.position == "relative" and first:
            outside.append((shape.relative_buckets, shape.num_heads // t))
        if shape.traits.encoder_decoder:
            outside.append((shape.relative_buckets, shape.num_heads // t))  # the decoder's table
        outside += head_shapes(shape, t, p) if last else []
        kept, late = _split_late(shape, layout, outside, first, last)
        out.append((kept, [], late))  # the chunk's root unit (empty in a middle chunk)
        for i in range(start, stop):
            expert = shape.is_moe_layer(i)
            out.append((layer_shapes(shape, t, moe=expert, ep=0),
                        expert_shapes(shape, layout.expert_tp, layout.ep) if expert else [], []))
    if shape.traits.encoder_decoder:
        out += [(layer_shapes(shape, t, decoder=True), [], [])] * shape.num_decoder_layers
    return out


def grad_buckets(shape: ModelShape, layout: Layout, stage: int) -> list[tuple[int, int, int, bool]]:
    """(elements, padded elements, shards, expert) of each gradient bucket of pipeline rank `stage`, laid out
    as megazoo's GradBuffers does (core/optim/buffers.py): parameters in reverse model order, unit by
    unit from the last (grad_units; one unit unless ZeRO-3), first the dense ones, then the MoE
    experts' in buckets of their own; the tied embedding copies (pp > 1) in separate buckets after
    all others; a bucket is closed once it holds at least `layout.bucket_size` elements or at the
    end of its kind and padded to a multiple of its shard count (sharded, ZeRO-1/2/3: dp x cp for
    dense buckets, the expert-dp size dp x cp / ep for expert buckets; else 1)."""
    dense = layout.dp_cp if layout.sharded else 1
    expert = layout.expert_dp if layout.sharded else 1
    kinds = [kind for unit_dense, unit_experts, late in reversed(grad_units(shape, layout, stage))
             for kind in ((unit_dense, dense, False, False), (unit_experts, expert, True, False),
                          (late, dense, False, True))]
    kinds.sort(key=lambda k: k[3])  # the late buckets last (stable)
    out: list[tuple[int, int, int, bool]] = []
    for group, shards, is_expert, _ in kinds:
        used = 0
        group = list(reversed(group))
        for i, s in enumerate(group):
            used += prod(s)
            if used >= layout.bucket_size or i == len(group) - 1:
                out.append((used, -(-used // shards) * shards, shards, is_expert))
                used = 0
    return out


def zero3_units(shape: ModelShape, layout: Layout, stage: int) -> tuple[list[int], list[int]]:
    """(root units, layer units) of pipeline rank `stage` under ZeRO-3, in elements (grad_units): each
    chunk's root unit (what it holds outside its layers), then every layer unit."""
    units = grad_units(shape, replace(layout, shard="full"), stage)
    held = [sum(prod(s) for part in unit for s in part) for unit in units]
    roots, layers, i = [], [], 0
    for start, stop in stage_layers(shape, layout, stage):  # each chunk: its root unit, then its layers
        roots.append(held[i])
        layers += held[i + 1:i + 1 + stop - start]
        i += 1 + stop - start
    return roots, layers + held[i:]  # (T5: the decoder's layer units after the chunk)


def gathered_elements(shape: ModelShape, layout: Layout, stage: int) -> int:
    """Elements of the whole weights ZeRO-3 holds gathered at its peak on pipeline rank `stage`
    (core/optim/weight_shards.py): every chunk's root unit (gathered at its first forward and kept
    until the step's gradients are complete: the tied output head uses the embedding at the other
    end of the model), and the largest layer unit, twice with prefetch (the next one arrives while
    the current one computes)."""
    roots, layers = zero3_units(shape, layout, stage)
    return sum(roots) + max(layers, default=0) * (2 if layout.shard_prefetch else 1)


def megazoo_state_parts(shape: ModelShape, layout: Layout, stage: int, dp_rank: int = 0) -> dict:
    """Bytes of one GPU (and its share of the host) by part (zero.state_parts), as megazoo really
    holds them, exactly for ZeRO-1: the flat parameter buffer and the fp32 main-grad buffer span the
    padded buckets; with the distributed optimizer (a bucket sharded over more than one rank) a
    separate fp32 shard receives the reduce-scattered gradients (each bucket's padded size / its
    shards); bf16/fp16 models keep fp32 main parameters for the owned (padded) shards, fp32 models
    update their own parameters; Adam's m and v (fp32) cover only the real elements this rank owns
    (the padding at a bucket's end falls in the last ranks' slices, so rank 0 holds the most).
    ZeRO-2/3 keep, of the gradients, the shard and the largest bucket being reduced; ZeRO-3 keeps,
    of the weights, the shard and the gathered unit(s). dp_rank is the data-parallel rank (cp rank
    0): dp_rank x cp in the dense buckets' dp x cp group, (dp_rank // ep) x cp in the expert
    buckets' expert-dp group (core/parallel/context.py)."""
    buckets = grad_buckets(shape, layout, stage)
    numel = sum(padded for _, padded, _, _ in buckets)
    sharded = layout.sharded and any(shards > 1 for _, _, shards, _ in buckets)
    shard_numel, owned = 0, 0
    for used, padded, shards, expert in buckets:
        size = padded // shards
        rank = (dp_rank // layout.ep if expert else dp_rank) * layout.cp if shards > 1 else 0
        shard_numel += size
        owned += max(0, min(used, (rank + 1) * size) - rank * size)
    gathered = gathered_elements(shape, layout, stage) if layout.sharding == "full" else 0
    return state_parts(layout.sharding, layout.precision, layout.optimizer_offload, numel, shard_numel, owned,
                       sharded, bucket=max(padded for _, padded, _, _ in buckets), gathered=gathered)


def megazoo_state_bytes(shape: ModelShape, layout: Layout, stage: int, dp_rank: int = 0) -> tuple[int, int, int]:
    """(weights, grads, optimizer states) bytes on one GPU (megazoo_state_parts; ZeRO-3's gathered
    units and offloaded states left out)."""
    parts = megazoo_state_parts(shape, layout, stage, dp_rank)
    return int(parts["weights"]), int(parts["grads"]), int(parts["main_weights"] + parts["adam"])


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
    modules = layout.recomputed_modules(recompute)  # selective recompute of Megatron-Core's modules
    if "layernorm" in modules:  # output-discarding: the norms' outputs (the qkv and fc1 inputs) go
        replicated -= 2 * e * s * b * h
    # split across tp ranks: q, k, v; the attention output (projection input); the MLP
    split = e * s * b * (q + 2 * k) + e * s * b * q
    routed = 1.0
    whole = 0.0  # held whole on every tp rank, sequence parallel or not
    if moe:
        f, routed = shape.expert_ffn, shape.routed_share
        if layout.folded:  # Megatron-Core's folding: each rank routes its own slice (the router input is
            # the norm output counted above); the expert input and output rows it runs (its etp group's
            # routed copies) and the router's fp32 logits and probabilities of its slice
            local = s * b / (t if sp else 1)
            whole = 2 * e * local * layout.expert_tp * routed * h + 8 * local * shape.num_experts
        else:  # megazoo gathers the sp slices before routing (core/nn/moe/layer.py): the router's input, the
            # expert input and output rows of the routed copies, the router's fp32 logits and probabilities
            whole = e * s * b * h + 2 * e * s * b * h * routed + 8 * s * b * shape.num_experts
    split += routed * e * s * b * f * (2 if shape.gated else 1)  # activation-function input(s)
    if not (moe and "moe_act" in modules):  # moe_act discards the experts' activation output
        split += routed * e * s * b * f  # fc2 input
    if "core_attn" not in modules:
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


def inflight_layers(shape: ModelShape, layout: Layout, stage: int) -> int:
    """Layer activations (one layer, one micro-batch each) pipeline rank `stage` holds at its peak. The
    schedule runs inflight_chunks - 1 forwards to warm up, then one forward and one backward in turn
    (the peak falls after a forward); forwards take the rank's chunks in turn, N micro-batches each
    (N = pp, Megatron's interleaved order; torch.distributed.pipelining's flexible interleaved 1F1B
    takes the same N whenever the micro-batches are a multiple of pp), the
    backwards the chunks in reverse. With chunks of equal size this is inflight_chunks times a chunk's
    layers; with layout.embedding_slots the embedding's and the output layer's chunks hold one layer
    fewer, which lowers the peak of the first stage."""
    sizes = [stop - start for start, stop in stage_layers(shape, layout, stage)]
    v, m = layout.vpp, layout.num_micro_batches
    group = max(1, min(layout.pp, m))
    if len(set(sizes)) == 1:
        return inflight_chunks(layout, stage) * sizes[0]
    forwards = [sizes[(k // group) % v] for k in range(m * v)]
    backwards = [sizes[v - 1 - (k // group) % v] for k in range(m * v)]
    warm = inflight_chunks(layout, stage) - 1
    held = peak = sum(forwards[:warm])
    for k in range(warm, m * v):
        held += forwards[k]
        peak = max(peak, held)
        held -= backwards[k - warm]
    return peak


def stage_memory(shape: ModelShape, layout: Layout, stage: int, overhead_gib: float,
                 dp_rank: int = 0) -> StageMemory:
    """Memory of one GPU of pipeline rank `stage` (data-parallel rank `dp_rank`; rank 0 holds the most).
    Weights, gradients and optimizer states are megazoo's real layout (megazoo_state_parts), with
    the sharding mode and offload of the layout; `host` is what offload puts in host memory."""
    params = stage_params(shape, layout, stage)
    parts = megazoo_state_parts(shape, layout, stage, dp_rank)
    s = local_seq(shape, layout)
    b, h, t = layout.micro_batch, shape.hidden_size, layout.tp
    sp_div = t if layout.sequence_parallel else 1
    e = 4 if layout.precision == "fp32" else 2
    chunks = inflight_chunks(layout, stage)
    layers_per_rank = sum(stop - start for start, stop in stage_layers(shape, layout, stage))
    encoder_decoder = shape.traits.encoder_decoder  # one stage holding both stacks
    n_layers = shape.num_layers + shape.num_decoder_layers if encoder_decoder else layers_per_rank
    act = inflight_layers(shape, layout, stage) * stage_layer_activation_bytes(shape, layout, stage) \
        if not encoder_decoder else n_layers * layer_activation_bytes(shape, layout)
    if layout.recompute == "full":  # one layer's full set is live while it is recomputed
        act += layer_activation_bytes(shape, layout, recompute="none", moe=shape.moe)
    act += ring_buffer_bytes(shape, layout)
    if stage == 0 and shape.dropout:  # embedding dropout mask per in-flight micro-batch
        act += -(-chunks // layout.vpp) * s * b * h / sp_div
    if stage == layout.pp - 1:  # final norm and head inputs, the cross-entropy's fp32 softmax (4sbV/t)
        vocab = shape_vocab(shape, t) // t
        act += 2 * e * s * b * h / sp_div + 4 * s * b * vocab
    return StageMemory(stage=stage, params=params, weights=int(parts["weights"]), grads=int(parts["grads"]),
                       optimizer=int(parts["main_weights"] + parts["adam"]), activations=int(act),
                       overhead=int(overhead_gib * GIB), inflight_micro_batches=chunks,
                       gathered=int(parts["gathered"]), host=int(parts["host"]))
