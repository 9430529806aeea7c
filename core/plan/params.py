"""Exact parameter counts and shapes per pipeline stage and tensor-parallel rank.

Megatron's layout: the word embedding (and learned positions) live on the first stage, the final
norm and output layer on the last; with tied embeddings and more than one stage, the last stage
keeps its own copy of the word embedding (kept equal by an all-reduce of its gradient). Column-
parallel weights are split by output rows, row-parallel ones by input columns; biases of row-
parallel layers and norms are replicated.
"""

from __future__ import annotations

from dataclasses import replace
from math import prod

from megazoo.core.plan.shapes import RECOMPUTE_MODULES, Layout, ModelShape, PlanError
from megazoo.core.plan.zero import check_mode


def padded_vocab(vocab_size: int, tp: int, multiple: int = 128) -> int:
    """Round the vocabulary up to a multiple of `multiple * tp`, as Megatron-LM does, so every
    tp shard is equal and GEMM-friendly. Padded rows are masked out of logits and loss.

    The one definition: megazoo.core.parallel.embedding uses it as `padded_vocab_size`; it lives
    here because core/plan imports no torch (`megazoo plan` starts without it)."""
    step = multiple * tp
    return -(-vocab_size // step) * step


def shape_vocab(shape: ModelShape, tp: int) -> int:
    """The model's padded vocabulary at tensor-parallel degree tp."""
    return padded_vocab(shape.vocab_size, tp, shape.vocab_multiple)


def check_layout(shape: ModelShape, layout: Layout) -> None:
    """Raise PlanError when the layout does not divide the model or the GPUs."""
    shape.validate()
    for name in ("gpus", "tp", "pp", "vpp", "cp", "ep", "micro_batch"):
        value = getattr(layout, name)
        if not isinstance(value, int) or value < 1:
            raise PlanError(f"{name} must be a positive integer, got {value!r}")
    t, p, c = layout.tp, layout.pp, layout.cp
    if layout.gpus % (t * c * p):
        what = f"tp x pp = {t} x {p}" if c == 1 else f"tp x cp x pp = {t} x {c} x {p}"
        raise PlanError(f"{layout.gpus} GPUs are not divisible by {what} = {t * c * p}; "
                        "choose degrees whose product divides the number of GPUs")
    if shape.num_heads % t:
        raise PlanError(f"num_heads {shape.num_heads} is not divisible by tp {t}")
    if shape.kv_heads % t:
        raise PlanError(f"num_kv_heads {shape.kv_heads} is not divisible by tp {t}")
    if shape.ffn_hidden_size % t:
        raise PlanError(f"ffn_hidden_size {shape.ffn_hidden_size} is not divisible by tp {t}")
    if layout.etp is not None and (not isinstance(layout.etp, int) or layout.etp < 1):
        raise PlanError(f"etp must be a positive integer (or unset: experts split over tp), got {layout.etp!r}")
    if shape.moe and shape.expert_ffn % layout.expert_tp:
        what = f"etp {layout.etp}" if layout.folded else f"tp {t}"
        raise PlanError(f"the experts' ffn_hidden_size {shape.expert_ffn} is not divisible by {what}")
    if c > 1 and shape.traits.encoder_decoder:  # the ring splits self-attention, not cross-attention
        raise PlanError(f"context parallelism for {shape.traits.title} is not supported; use cp=1")
    if layout.ep > 1 and not shape.moe:
        raise PlanError(f"ep {layout.ep} needs a mixture-of-experts model (num_experts > 0); use ep=1")
    if shape.moe and shape.num_experts % layout.ep:
        raise PlanError(f"ep {layout.ep} does not divide num_experts {shape.num_experts}; every expert-parallel "
                        "rank holds the same number of experts")
    if layout.etp is not None and not shape.moe:
        raise PlanError(f"etp {layout.etp} needs a mixture-of-experts model (num_experts > 0); leave etp unset")
    if layout.folded and (t * c * layout.dp) % (layout.etp * layout.ep):
        raise PlanError(f"etp x ep = {layout.etp} x {layout.ep} does not divide tp x cp x dp = {t} x {c} x "
                        f"{layout.dp} = {t * c * layout.dp}: with parallel folding the expert grid (etp x ep x "
                        "expert-dp) spans the tp x cp x dp ranks of a pipeline stage")
    if not layout.folded and layout.dp % layout.ep:
        raise PlanError(f"ep {layout.ep} does not divide the data-parallel size {layout.dp} (GPUs {layout.gpus} = "
                        f"tp {t} x cp {c} x pp {p} x dp {layout.dp}): expert parallelism is carved out of the "
                        "data-parallel ranks")
    if not shape.traits.pipeline_parallel and p > 1:
        raise PlanError(f"pipeline parallelism for {shape.traits.title} is not supported (as in Megatron-LM); use pp=1")
    if layout.vpp > 1 and p == 1:
        raise PlanError("vpp > 1 needs pp > 1 (interleaving needs a pipeline)")
    slots = pipeline_slots(shape, layout)
    if slots % (p * layout.vpp):
        what = f"pp x vpp = {p} x {layout.vpp}" if layout.vpp > 1 else f"pp {p}"
        if layout.embedding_slots:
            raise PlanError(f"num_layers {shape.num_layers} + 2 (embedding_slots: the embedding and the output "
                            f"layer each take a layer's place) is not divisible by {what}")
        raise PlanError(f"num_layers {shape.num_layers} is not divisible by {what}; "
                        "every pipeline stage must hold the same number of layers")
    if layout.embedding_slots and shape.traits.encoder_decoder:
        raise PlanError(f"embedding_slots is for decoder-only models, not {shape.traits.title}; "
                        "use embedding_slots=False")
    if layout.sequence_parallel and t == 1:
        raise PlanError("sequence parallelism needs tp > 1")
    seq = layout.seq_length or shape.seq_length
    if c > 1 and seq % (2 * c):
        raise PlanError(f"seq_length {seq} is not divisible by 2 x cp = {2 * c} (context parallelism splits the "
                        "sequence into 2 x cp chunks, an early and a late one per rank)")
    if layout.sequence_parallel and (seq // c) % t:
        local = f"seq_length {seq}" if c == 1 else f"the {seq // c} tokens per cp rank"
        raise PlanError(f"{local} is not divisible by tp {t} (sequence parallelism splits it)")
    if layout.recompute not in ("none", "selective", "full"):
        raise PlanError(f"recompute must be none, selective or full, got {layout.recompute!r}")
    unknown = [m for m in layout.recompute_modules if m not in RECOMPUTE_MODULES]
    if unknown:
        raise PlanError(f"recompute module {unknown[0]!r} is not one of {', '.join(RECOMPUTE_MODULES)}")
    if layout.recompute_modules and layout.recompute != "selective":
        raise PlanError(f"recompute modules ({', '.join(layout.recompute_modules)}) need recompute selective, "
                        f"got recompute {layout.recompute}")
    if layout.pipeline_engine not in ("megatron", "deepspeed"):
        raise PlanError(f"pipeline_engine must be megatron or deepspeed, got {layout.pipeline_engine!r}")
    if layout.pipeline_engine == "deepspeed" and layout.vpp > 1:
        raise PlanError("DeepSpeed's pipeline engine has no interleaved schedule; use vpp 1")
    check_mode(layout.sharding, layout.optimizer_offload)
    if layout.precision not in ("bf16", "fp16", "fp32"):
        raise PlanError(f"precision must be bf16, fp16 or fp32, got {layout.precision!r}")
    per_step = layout.dp * layout.micro_batch
    if layout.batch % per_step:
        raise PlanError(f"global batch {layout.batch} is not divisible by dp x micro-batch = "
                        f"{layout.dp} x {layout.micro_batch} = {per_step}")


def _norm(shape: ModelShape, h: int) -> list[tuple[int, ...]]:
    return [(h,), (h,)] if shape.norm == "layernorm" else [(h,)]


def attention_shapes(shape: ModelShape, tp: int, cross: bool = False) -> list[tuple[int, ...]]:
    """Self-attention (fused qkv) or, with cross=True, T5 cross-attention (q, fused kv)."""
    h, q, k = shape.hidden_size, shape.q_size, shape.kv_size
    out: list[tuple[int, ...]] = []
    if cross:
        out += [(q // tp, h), (2 * k // tp, h)]
        if shape.bias:
            out += [(q // tp,), (2 * k // tp,)]
    else:
        out.append(((q + 2 * k) // tp, h))
        if shape.bias:
            out.append(((q + 2 * k) // tp,))
    out.append((h, q // tp))
    if shape.bias:
        out.append((h,))
    return out


def mlp_shapes(shape: ModelShape, tp: int, ffn: int | None = None) -> list[tuple[int, ...]]:
    """fc1 (and, for SwiGLU, a separate gate of the same shape), both column-parallel; fc2 row-parallel.
    ffn: the hidden size (an expert's; None: the model's)."""
    h, f = shape.hidden_size, ffn or shape.ffn_hidden_size
    column: list[tuple[int, ...]] = [(f // tp, h)] + ([(f // tp,)] if shape.bias else [])
    out = column * (2 if shape.gated else 1)
    out.append((h, f // tp))
    if shape.bias:
        out.append((h,))
    return out


def router_shapes(shape: ModelShape) -> list[tuple[int, ...]]:
    """The router of an MoE layer: one num_experts x h weight, no bias, replicated on every rank."""
    return [(shape.num_experts, shape.hidden_size)]


def expert_shapes(shape: ModelShape, tp: int, ep: int = 1) -> list[tuple[int, ...]]:
    """The expert MLPs one rank holds in one MoE layer: num_experts / ep of them, each split over tp
    like the dense MLP, stacked as core/nn/moe/experts.py registers them (fc1 [e, f/tp, h], the gate,
    fc2 [e, h, f/tp], then the biases); ep 0: none. These are the expert parameters (reduced over the
    expert-dp ranks)."""
    if not ep:
        return []
    e, f, h = shape.num_experts // ep, shape.expert_ffn // tp, shape.hidden_size
    gates = 2 if shape.gated else 1
    out: list[tuple[int, ...]] = [(e, f, h)] * gates + [(e, h, f)]
    if shape.bias:
        out += [(e, f)] * gates + [(e, h)]
    return out


def layer_shapes(shape: ModelShape, tp: int, decoder: bool = False, moe: bool = False,
                 ep: int = 1, etp: int | None = None) -> list[tuple[int, ...]]:
    """One transformer layer on one tp rank (a T5 decoder layer adds cross-attention; an MoE layer
    has a router and num_experts / ep experts, split over etp (None: tp), instead of the MLP; ep 0
    leaves the experts out)."""
    h = shape.hidden_size
    out = _norm(shape, h) + attention_shapes(shape, tp)
    if decoder:
        out += _norm(shape, h) + attention_shapes(shape, tp, cross=True)
    mlp = router_shapes(shape) + expert_shapes(shape, etp or tp, ep) if moe else mlp_shapes(shape, tp)
    return out + _norm(shape, h) + mlp + adapter_shapes(shape, tp)


def adapter_shapes(shape: ModelShape, tp: int) -> list[tuple[int, ...]]:
    """Two bottleneck adapters (after attention and after the MLP): a column-parallel down
    projection and a row-parallel up projection, both with biases (core/nn/adapter.py)."""
    h, r = shape.hidden_size, shape.adapter_size
    if not r:
        return []
    return [(r // tp, h), (r // tp,), (h, r // tp), (h,)] * 2


def embedding_shapes(shape: ModelShape, tp: int, seq: int) -> list[tuple[int, ...]]:
    h = shape.hidden_size
    out: list[tuple[int, ...]] = [(shape_vocab(shape, tp) // tp, h)]
    if shape.position == "learned":
        out.append((seq, h))
    if shape.traits.token_types and shape.num_tokentypes:
        out.append((shape.num_tokentypes, h))  # token types
    if shape.has_embedding_norm:
        out += _norm(shape, h)  # post-norm layouts (the original BERT) normalise the embeddings
    return out


def head_shapes(shape: ModelShape, tp: int, pp: int) -> list[tuple[int, ...]]:
    """Final norm and output layer of the last stage (plus BERT's pooler and heads, and a
    fine-tuning head)."""
    h = shape.hidden_size
    vocab_rows = shape_vocab(shape, tp) // tp
    out = list(_norm(shape, h)) if shape.final_norm else []
    if shape.traits.encoder_decoder:
        out += _norm(shape, h)  # encoder and decoder each end with a norm
    if shape.traits.mlm_heads:
        if shape.pooler:
            out += [(h, h), (h,)]
        if shape.lm_head:
            out += [(h, h), (h,)] + _norm(shape, h) + [(vocab_rows,)]  # masked-LM head transform + bias
        if shape.binary_head:
            out += [(2, h), (2,)]  # binary (next-sentence) head
    if shape.task_outputs:  # replicated on every tp rank (zoo/heads/)
        out += [(shape.task_outputs, h), (shape.task_outputs,)]
    if shape.lm_head and (not shape.tie_embeddings or pp > 1):
        out.append((vocab_rows, h))
    return out


def pipeline_slots(shape: ModelShape, layout: Layout) -> int:
    """Layer places the pipeline split divides evenly: the layers, and with layout.embedding_slots one
    more each for the embedding (the first place) and the output layer with its loss (the last)."""
    return shape.num_layers + (2 if layout.embedding_slots else 0)


def stage_layers(shape: ModelShape, layout: Layout, stage: int) -> list[tuple[int, int]]:
    """The (start, stop) layer ranges of each model chunk on pipeline rank `stage` (chunk c holds the
    places (c p + stage) k to (c p + stage + 1) k, k = places / (p v); with embedding_slots the
    embedding's and the output layer's places hold no layer, so those two chunks hold k - 1)."""
    p, v = layout.pp, layout.vpp
    per_chunk = pipeline_slots(shape, layout) // (p * v)
    shift = 1 if layout.embedding_slots else 0
    n = shape.num_layers

    def layer(place: int) -> int:
        return min(n, max(0, place - shift))
    return [(layer((c * p + stage) * per_chunk), layer((c * p + stage + 1) * per_chunk)) for c in range(v)]


def stage_shapes(shape: ModelShape, layout: Layout, stage: int, experts: bool | None = None) -> list[tuple[int, ...]]:
    """Every parameter shape held by one tp rank of pipeline rank `stage`, in model order. experts:
    None, all of them; True, only the expert MLPs' (their own gradient buffer, reduced over the
    expert-dp ranks); False, all but those."""
    if experts:
        return [s for a, b in stage_layers(shape, layout, stage) for i in range(a, b) if shape.is_moe_layer(i)
                for s in expert_shapes(shape, layout.expert_tp, layout.ep)]
    t, p = layout.tp, layout.pp
    seq = layout.seq_length or shape.seq_length
    out: list[tuple[int, ...]] = []
    if stage == 0:
        out += embedding_shapes(shape, t, seq)
        if shape.position == "relative":
            out.append((shape.relative_buckets, shape.num_heads // t))
    if not shape.moe:
        out += layer_shapes(shape, t) * sum(b - a for a, b in stage_layers(shape, layout, stage))
    for start, stop in stage_layers(shape, layout, stage) if shape.moe else ():
        for i in range(start, stop):
            out += layer_shapes(shape, t, moe=shape.is_moe_layer(i), ep=0 if experts is False else layout.ep,
                                etp=layout.expert_tp)
    if shape.traits.encoder_decoder:
        out += layer_shapes(shape, t, decoder=True) * shape.num_decoder_layers
        out.append((shape.relative_buckets, shape.num_heads // t))
    if stage == p - 1:
        out += head_shapes(shape, t, p)
    return out


def _count(shapes: list[tuple[int, ...]]) -> int:
    return sum(prod(s) for s in shapes)


def stage_params(shape: ModelShape, layout: Layout, stage: int) -> int:
    """Parameters held by one tp rank of pipeline rank `stage` (the sum over stage_shapes)."""
    t, p = layout.tp, layout.pp
    total = 0
    if stage == 0:
        total += _count(embedding_shapes(shape, t, layout.seq_length or shape.seq_length))
        if shape.position == "relative":
            total += shape.relative_buckets * (shape.num_heads // t)
    n_layers = sum(b - a for a, b in stage_layers(shape, layout, stage))
    n_moe = stage_moe_layers(shape, layout, stage)
    total += (n_layers - n_moe) * _count(layer_shapes(shape, t))
    total += n_moe * _count(layer_shapes(shape, t, moe=True, ep=layout.ep, etp=layout.expert_tp)) if n_moe else 0
    if shape.traits.encoder_decoder:
        total += shape.num_decoder_layers * _count(layer_shapes(shape, t, decoder=True))
        total += shape.relative_buckets * (shape.num_heads // t)
    if stage == p - 1:
        total += _count(head_shapes(shape, t, p))
    return total


def stage_moe_layers(shape: ModelShape, layout: Layout, stage: int) -> int:
    """MoE layers held by pipeline rank `stage` (over all its model chunks)."""
    return sum(shape.is_moe_layer(i) for a, b in stage_layers(shape, layout, stage) for i in range(a, b))


def stage_expert_params(shape: ModelShape, layout: Layout, stage: int) -> int:
    """Expert parameters (part of stage_params) held by one rank of pipeline rank `stage`: its
    num_experts / ep experts of each MoE layer, split over expert_tp (tp, or etp with parallel folding)."""
    n_moe = stage_moe_layers(shape, layout, stage)
    return n_moe * _count(expert_shapes(shape, layout.expert_tp, layout.ep)) if n_moe else 0


def active_params(shape: ModelShape, tp: int = 1) -> int:
    """Parameters one token runs through: total_params with top_k experts of each MoE layer in
    place of all num_experts (the router counts in full)."""
    unused = shape.num_moe_layers * (shape.num_experts - shape.top_k) * _count(mlp_shapes(shape, 1, shape.expert_ffn))
    return total_params(shape, tp) - unused


def total_params(shape: ModelShape, tp: int = 1) -> int:
    """Parameters of the whole model at pp=1 (one copy of each tensor), with the vocabulary padded
    as for `tp` ranks (a trained model's count; the default tp=1 is the card's)."""
    padded = replace(shape, vocab_size=shape_vocab(shape, tp))  # already a multiple of multiple * tp
    return stage_params(padded, Layout(gpus=1, sp=False), 0)
