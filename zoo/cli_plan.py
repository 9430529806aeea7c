"""`megazoo plan MODEL --gpus N --gpu a100-80gb ...`: memory, step time and MFU of a layout.

MODEL is a model card (`megazoo zoo list`) or a card YAML path; --num-layers, --hidden-size, ...
override the card's sizes, and --num-experts (--top-k, --moe-every, ...) makes it a mixture of
experts. --cp and --ep set context and expert parallelism (with --search, lists to try: --cp 1,2,4).
--shard optimizer|grads|full (ZeRO-1/2/3) and --optimizer-offload cpu plan sharding over the
data-parallel ranks (core/plan/zero.py). `--search` ranks every feasible layout, the sharding mode
included; `--dry-run` builds the real
megazoo model of one rank on the meta device under torch's fake process group and checks its
parameters against the planner's. `megazoo plan --validate` prints the planner against every
published run of core/plan/published.py: each row's residual in step time and TFLOP/s, its source
and assumptions, the mean and worst error per source, and, for each row the flags express, the
command that reproduces it (DeepSpeed's pipeline engine and its full-activation sends, overlapped
communication and the paper's FLOP convention all have flags); `--json` gives it to scripts.
`--train-tokens` adds the time to train (core/plan/train_time.py): with `--rampup-batch-size START
INCREMENT SAMPLES` (Megatron's ramp) the step time at each ramp batch, the time with and without the
ramp, and with `--lr-warmup-tokens` / `--lr-decay-tokens` the step and time where each ends.
"""

from __future__ import annotations

import argparse
import json
import sys
from math import prod

from megazoo.core.argtypes import float_in, int_in
from megazoo.core.fs import input_arg, output_arg
from megazoo.core.plan.flops import FLOPS_CONVENTIONS as FLOPS_CONVENTION_HELP

GIB = float(2**30)
# bounds of the numeric flags: the planner is arithmetic, so they are wide (a million GPUs, 16M-token
# sequences), but finite: no NaN, no infinity, no size that no machine could ever hold
GPUS = int_in(1, 1 << 20)
DEGREE = int_in(1, 1 << 16)
BATCH = int_in(1, 1 << 26)
BANDWIDTH = float_in(1e-3, 1e6)  # GB/s
PLOT_FORMATS = ("png", "pdf", "svg", "jpg", "jpeg", "webp", "tif", "tiff", "eps", "ps")


def count(lo: int):
    """An argparse type: a whole count >= lo, written 270000000000, 270e9 or 270B (K, M, B, T)."""
    def parse(text: str) -> int:
        scale = {"k": 10**3, "m": 10**6, "b": 10**9, "t": 10**12}.get(text[-1:].lower(), 1)
        body = text[:-1] if scale > 1 else text
        try:
            value = float(body) * scale if any(c in body for c in ".eE") else int(body) * scale
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a count such as 270000000000, 270e9 or 270B, got {text!r}") from None
        if value != value or value in (float("inf"), float("-inf")) or value != int(value):
            raise argparse.ArgumentTypeError(f"expected a whole count, got {text!r}")
        if not lo <= value <= 10**16:
            raise argparse.ArgumentTypeError(f"must be between {lo} and 1e16, got {text}")
        return int(value)
    parse.__name__ = "int"
    parse.bounds = (lo, 10**16)
    return parse


def degrees(text: str) -> tuple[int, ...]:
    """A parallel degree or a comma-separated list of them ("1,2,4"; a list is for --search)."""
    return tuple(DEGREE(part) for part in text.split(","))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    input_arg(parser, "model", nargs="?", help="model card name (see `megazoo zoo list`) or a card YAML path")
    parser.add_argument("--gpus", type=GPUS, default=None, help="number of GPUs (required unless --validate)")
    parser.add_argument("--gpu", default="a100-80gb", help="GPU type: v100, a100-40gb, a100-80gb, h100, h200, b200")
    parser.add_argument("--tp", type=DEGREE, default=1, help="tensor-parallel size")
    parser.add_argument("--pp", type=DEGREE, default=1, help="pipeline-parallel size")
    parser.add_argument("--vpp", type=DEGREE, default=1, help="model chunks per pipeline rank (interleaved schedule)")
    parser.add_argument("--cp", type=degrees, default=(1,),
                        help="context-parallel size (the sequence split over cp ranks, ring attention); with "
                             "--search a list to try, e.g. 1,2,4")
    parser.add_argument("--ep", type=degrees, default=(1,),
                        help="expert-parallel size (MoE experts split over ep of the data-parallel ranks); with "
                             "--search a list to try, e.g. 1,2,8")
    parser.add_argument("--etp", type=DEGREE, default=None,
                        help="expert tensor-parallel size with Megatron-Core's MoE parallel folding: the experts split "
                             "over etp ranks, their etp x ep x expert-dp grid over the tp x cp x dp ranks "
                             "(default: megazoo's MoE layer, experts split over tp, ep carved out of dp)")
    parser.add_argument("--no-cp-overlap", dest="cp_overlap", action="store_false",
                        help="the ring's K/V sends do not overlap the attention compute (default: they do)")
    parser.add_argument("--micro-batch", type=BATCH, default=1, help="sequences per micro-batch")
    parser.add_argument("--global-batch", type=BATCH, default=None, help="sequences per step (default: dp x micro-batch)")
    parser.add_argument("--seq-length", type=int_in(1, 1 << 24), default=None, help="tokens per sequence (default: the card's)")
    parser.add_argument("--recompute", choices=("none", "selective", "full"), default="none")
    parser.add_argument("--recompute-modules", nargs="+", default=(), metavar="MODULE",
                        help="with --recompute selective, the modules recomputed (Megatron-Core's --recompute-modules): "
                             "core_attn (the default), layernorm, moe_act")
    parser.add_argument("--distributed-optimizer", action="store_true", help="shard optimizer states over dp (ZeRO-1)")
    parser.add_argument("--shard", default=None, metavar="{none,optimizer,grads,full}",
                        help="what the data-parallel ranks shard (parallel.shard): optimizer states (ZeRO-1, as "
                             "--distributed-optimizer), also gradients (grads, ZeRO-2), also weights (full, ZeRO-3); "
                             "with --search only this mode (default: every mode is tried)")
    parser.add_argument("--no-shard-prefetch", dest="shard_prefetch", action="store_false",
                        help="ZeRO-3 gathers each unit's weights only when it is needed (default: the next unit's "
                             "gather runs under the current one's compute)")
    parser.add_argument("--optimizer-offload", default=None, metavar="cpu",
                        help="keep fp32 main weights and Adam in host memory and step there (train.optimizer_offload)")
    parser.add_argument("--sp", dest="sp", action="store_true", default=None, help="sequence parallelism (default: on when tp > 1)")
    parser.add_argument("--no-sp", dest="sp", action="store_false")
    parser.add_argument("--precision", choices=("bf16", "fp16", "fp32"), default="bf16")
    parser.add_argument("--gpus-per-node", type=int_in(1, 1024), default=None)
    parser.add_argument("--nvlink-gb-s", type=BANDWIDTH, default=None, help="per-GPU NVLink bandwidth, one direction")
    parser.add_argument("--network-gb-s", type=BANDWIDTH, default=None, help="per-GPU inter-node bandwidth")
    parser.add_argument("--no-flash-attention", dest="flash_attention", action="store_false",
                        help="unfused attention (stores the s x s scores)")
    parser.add_argument("--no-scatter-gather", dest="scatter_gather", action="store_false",
                        help="pipeline sends carry the whole activation, not 1/tp of it (DeepSpeed's pipeline, "
                             "as MT-NLG ran; Megatron-LM's scatter/gather optimisation is the default)")
    parser.add_argument("--embedding-slots", action="store_true",
                        help="the embedding and the output layer each take one layer's place in the pipeline split "
                             "(Llama 3's balanced stages; Megatron-LM's account-for-embedding/loss-in-pipeline-split)")
    parser.add_argument("--pipeline-engine", choices=("megatron", "deepspeed"), default="megatron",
                        help="whose pipeline schedule runs: Megatron-LM's 1F1B / interleaved (default) or DeepSpeed's "
                             "pipeline engine, whose fill and drain cost twice as much (docs/parallelism.md)")
    parser.add_argument("--overlap-grad-reduce", action="store_true", help="overlap the data-parallel gradient reduction")
    parser.add_argument("--overlap-param-gather", action="store_true",
                        help="overlap the distributed optimizer's parameter all-gather")
    parser.add_argument("--tp-comm-overlap", action="store_true", help="overlap tensor-parallel communication with GEMMs")
    parser.add_argument("--flops-convention", choices=tuple(FLOPS_CONVENTION_HELP), default="model",
                        help="FLOP count behind the reported TFLOP/s: " + "; ".join(
                            f"{k} = {v}" for k, v in FLOPS_CONVENTION_HELP.items()) + " (MFU is always model FLOPs)")
    # model sizes over the card's (to plan a shape no card has, e.g. a published table's row)
    for flag, help_ in (("num-layers", "transformer layers"), ("hidden-size", "hidden size"),
                        ("num-heads", "attention heads"), ("num-kv-heads", "key/value heads (default: --num-heads)"),
                        ("ffn-hidden-size", "MLP hidden size"), ("vocab-size", "vocabulary size (padded as Megatron pads it)")):
        parser.add_argument(f"--{flag}", type=int_in(1, 1 << 24), default=None, help=f"{help_}, over the card's")
    # mixture of experts over the card's dense model (model.moe.*)
    parser.add_argument("--num-experts", type=DEGREE, default=None,
                        help="experts per MoE layer (makes the card's model a mixture of experts)")
    parser.add_argument("--top-k", type=DEGREE, default=None, help="experts per token (default 2 with --num-experts)")
    parser.add_argument("--moe-every", type=DEGREE, default=None, help="every N-th layer is an MoE layer (default 1)")
    parser.add_argument("--moe-ffn-hidden-size", type=int_in(1, 1 << 24), default=None,
                        help="an expert's MLP hidden size (default: the model's)")
    parser.add_argument("--capacity-factor", type=float_in(1e-3, 1e4), default=None,
                        help="expert capacity factor (tokens beyond it are dropped; default: dropless)")
    parser.add_argument("--untie-embeddings", dest="tie_embeddings", action="store_false", default=None,
                        help="a separate output layer (over the card's tie_embeddings)")
    parser.add_argument("--tie-embeddings", dest="tie_embeddings", action="store_true")
    # the run: time to train, with Megatron's batch ramp-up (core/plan/train_time.py)
    parser.add_argument("--train-tokens", type=count(1), default=None,
                        help="training tokens of the run (270e9 or 270B): prints the time to train")
    parser.add_argument("--rampup-batch-size", type=int_in(0, 1 << 50), nargs=3, default=None,
                        metavar=("START", "INCREMENT", "SAMPLES"),
                        help="Megatron's batch ramp-up (train.rampup_batch_size): the global batch grows from START by "
                             "INCREMENT over SAMPLES samples to --global-batch; prints each batch's step time and the "
                             "time to train with and without it (MT-NLG: 32 32 5859375, 12B tokens of 2048)")
    parser.add_argument("--lr-warmup-tokens", type=count(0), default=0,
                        help="lr warm-up in tokens (train.lr_warmup_tokens): the step and time it ends")
    parser.add_argument("--lr-decay-tokens", type=count(0), default=0,
                        help="end of the lr decay in tokens (train.lr_decay_tokens): the step and time it ends")
    parser.add_argument("--validate", action="store_true",
                        help="print the planner against every published run (core/plan/published.py): each row's "
                             "residual in step time and TFLOP/s, and the mean and worst error per source")
    parser.add_argument("--json", action="store_true",
                        help="print the plan as one JSON object (with --validate: {rows, sources, tolerance})")
    parser.add_argument("--search", action="store_true", help="rank every feasible layout by predicted throughput")
    parser.add_argument("--top", type=int_in(1, 1 << 20), default=10, help="layouts shown by --search")
    output_arg(parser, "--plot", kind="file", metavar="PNG",
               help="write a chart of the plan (or of the search) to this file (.png, .pdf, .svg ...)")
    parser.add_argument("--dry-run", action="store_true",
                        help="build the real model of one rank on the meta device and compare parameters")


def build_layout(args: argparse.Namespace):
    from megazoo.core.plan.shapes import Layout

    return Layout(gpus=args.gpus, tp=args.tp, pp=args.pp, vpp=args.vpp, cp=args.cp[0], ep=args.ep[0], etp=args.etp,
                  cp_overlap=args.cp_overlap, micro_batch=args.micro_batch,
                  global_batch=args.global_batch, seq_length=args.seq_length, sp=args.sp, recompute=args.recompute,
                  recompute_modules=tuple(args.recompute_modules),
                  distributed_optimizer=args.distributed_optimizer, shard=args.shard,
                  shard_prefetch=args.shard_prefetch, optimizer_offload=args.optimizer_offload, precision=args.precision,
                  gpus_per_node=args.gpus_per_node, nvlink_gb_s=args.nvlink_gb_s, network_gb_s=args.network_gb_s,
                  flash_attention=args.flash_attention, scatter_gather=args.scatter_gather,
                  pipeline_engine=args.pipeline_engine, overlap_grad_reduce=args.overlap_grad_reduce, overlap_param_gather=args.overlap_param_gather,
                  tp_comm_overlap=args.tp_comm_overlap, embedding_slots=args.embedding_slots)


SHAPE_FLAGS = ("num_layers", "hidden_size", "num_heads", "num_kv_heads", "ffn_hidden_size", "vocab_size",
               "tie_embeddings")
# flag (argparse name) -> ModelShape field of the mixture-of-experts settings
MOE_FLAGS = {"num_experts": "num_experts", "top_k": "top_k", "moe_every": "moe_every",
             "moe_ffn_hidden_size": "moe_ffn_hidden_size", "capacity_factor": "capacity_factor"}


def build_shape(card: dict, args: argparse.Namespace):
    """The card's ModelShape with the size flags applied (num_kv_heads follows --num-heads unless given)."""
    from dataclasses import replace

    from megazoo.zoo.cards import card_shape

    from megazoo.core.plan.shapes import PlanError

    shape = card_shape(card)
    changes = {k: getattr(args, k) for k in SHAPE_FLAGS if getattr(args, k, None) is not None}
    if "num_heads" in changes and "num_kv_heads" not in changes and shape.kv_heads == shape.num_heads:
        changes["num_kv_heads"] = changes["num_heads"]
    moe = {field: getattr(args, flag) for flag, field in MOE_FLAGS.items() if getattr(args, flag, None) is not None}
    if moe and "num_experts" not in moe:
        raise PlanError("--" + next(iter(moe)).replace("_", "-") + " needs --num-experts (a mixture-of-experts model)")
    if moe:
        changes.update({"top_k": min(2, moe["num_experts"]), **moe})
    if not changes:
        return shape
    shape = replace(shape, **changes, name=f"{shape.name} (" + ", ".join(f"{k}={v}" for k, v in changes.items()) + ")")
    shape.validate()
    return shape


# ----------------------------------------------------------------------------------------- dry run
def gpt_config(card: dict, seq_length: int | None = None):
    """The zoo's GPTConfig for a gpt/llama card."""
    from megazoo.core.plan.shapes import PlanError
    from megazoo.core.plan.traits import DECODER, kind_of
    from megazoo.zoo.gpt.config import GPTConfig

    if kind_of(card["arch"]) != DECODER:
        raise PlanError(f"--dry-run builds the GPT family (gpt, llama cards); {card['name']} is a {card['arch']} model")
    m = card["model"]
    kw = dict(num_layers=m["num_layers"], hidden_size=m["hidden_size"], num_heads=m["num_heads"],
              num_kv_heads=m["num_kv_heads"], ffn_hidden_size=m["ffn_hidden_size"], activation=m["activation"],
              norm=m["norm"], norm_eps=float(m["norm_eps"]), position=m["position"], bias=bool(m["bias"]),
              vocab_size=m["vocab_size"], seq_length=seq_length or m["seq_length"],
              tie_embeddings=bool(m["tie_embeddings"]))
    if m.get("rope_theta") is not None:
        kw["rope_theta"] = float(m["rope_theta"])
    if m.get("kv_channels") is not None:
        kw["kv_channels"] = m["kv_channels"]
    return GPTConfig(**kw)


def dry_run(card: dict, layout, stages: list[int] | None = None) -> list[dict]:
    """Build tp rank 0 of each pipeline stage in `stages` (default: first, middle, last) on the meta
    device, each under a fake process group of the layout's world size, and compare its parameter
    count and shapes with the planner's."""
    import torch
    import torch.distributed as dist
    from torch.testing._internal.distributed.fake_pg import FakeStore

    from megazoo.core.parallel.context import ParallelContext
    from megazoo.core.plan.params import check_layout, stage_layers, stage_shapes
    from megazoo.zoo.cards import card_shape
    from megazoo.zoo.gpt.model import GPTModel

    shape = card_shape(card)
    check_layout(shape, layout)
    cfg = gpt_config(card, layout.seq_length)
    p, v, t, d = layout.pp, layout.vpp, layout.tp, layout.dp
    stages = sorted(set(stages if stages is not None else (0, p // 2, p - 1)))
    results = []
    for stage in stages:
        rank = t * d * stage  # tp rank 0, dp rank 0 of this stage (tp fastest, then dp, then pp)
        if dist.is_initialized():
            dist.destroy_process_group()
        dist.init_process_group("fake", store=FakeStore(), rank=rank, world_size=layout.gpus)
        try:
            tp_ranks = tuple(range(rank, rank + t))
            pp_ranks = tuple(t * d * i for i in range(p))
            ctx = ParallelContext(tp=t, pp=p, dp=d, vpp=v, sp=layout.sequence_parallel, rank=rank,
                                  world_size=layout.gpus, device=torch.device("meta"), backend="fake",
                                  tp_ranks=tp_ranks, pp_ranks=pp_ranks,
                                  tp_group=dist.new_group(list(tp_ranks), use_local_synchronization=True),
                                  pp_group=dist.new_group(list(pp_ranks), use_local_synchronization=True))
            shapes = []
            with torch.device("meta"):
                for chunk, (start, stop) in enumerate(stage_layers(shape, layout, stage)):
                    model = GPTModel(cfg, ctx, pre_process=stage == 0 and chunk == 0,
                                     post_process=stage == p - 1 and chunk == v - 1, layers=(start, stop))
                    if not all(q.is_meta for q in model.parameters()):
                        raise RuntimeError("dry run allocated real parameter memory")
                    shapes += [tuple(q.shape) for q in model.parameters()]
        finally:
            dist.destroy_process_group()
        expected = stage_shapes(shape, layout, stage)
        results.append(dict(stage=stage, rank=rank, model_params=sum(prod(s) for s in shapes),
                            planner_params=sum(prod(s) for s in expected), model_tensors=len(shapes),
                            planner_tensors=len(expected), shapes_match=sorted(shapes) == sorted(expected)))
        results[-1]["ok"] = results[-1]["shapes_match"] and results[-1]["model_params"] == results[-1]["planner_params"]
    return results


# -------------------------------------------------------------------------------------------- output
def print_plan(p) -> None:
    lay = p.layout
    cp = f" x cp {lay['cp']}" if lay["cp"] > 1 else ""
    ep = f" (ep {lay['ep']} inside dp)" if lay["ep"] > 1 else ""
    if lay.get("etp") is not None:
        ep = f" (experts: etp {lay['etp']} x ep {lay['ep']} folded over tp x cp x dp)"
    print(f"{p.model} on {lay['gpus']} x {p.gpu}: tp {lay['tp']}{cp} x pp {lay['pp']}"
          + (f" (vpp {lay['vpp']})" if lay["vpp"] > 1 else "") + f" x dp {p.dp}{ep}; micro-batch {lay['micro_batch']}, "
          f"global batch {lay['global_batch']} ({p.num_micro_batches} micro-batches per replica), seq {lay['seq_length']}; "
          f"sp {'on' if lay['sp'] else 'off'}, recompute {lay['recompute']}"
          + (f" ({', '.join(lay['recompute_modules'])})" if lay.get("recompute_modules") else "") + ", "
          f"sharding {SHARD_WORDS[lay['shard']]}, {lay['precision']}")
    active = f", {p.params_active:,} active per token" if p.params_active != p.params_total else ""
    print(f"parameters: {p.params_total:,} in all{active}, {p.params_per_gpu:,} on the largest GPU")
    if lay["cp"] > 1:
        print(f"context parallelism: {lay['seq_length'] // lay['cp']:,} tokens of each sequence per rank; ring K/V "
              f"sends {'overlapped with' if lay['cp_overlap'] else 'not overlapped with'} the attention compute")
    mem = p.memory_breakdown_gb
    print(f"memory per GPU: {p.memory_gb_per_gpu:.1f} GiB of {p.gpu_memory_gb:.0f} GiB -> "
          f"{'fits' if p.fits else 'DOES NOT FIT'} (" + ", ".join(f"{k} {v:.1f}" for k, v in mem.items()) + ")")
    print_sharding(p)
    print(f"FLOPs per iteration: {p.flops_per_iteration:.4g}; pipeline bubble (p-1)/(v*m): {p.bubble_fraction:.1%}")
    tb = p.time_breakdown_s
    print(f"step time: {p.step_time_s:.3g} s (" + ", ".join(f"{k} {v:.3g}" for k, v in tb.items()) + ")")
    print(f"throughput: {p.tokens_per_s:,.0f} tokens/s, {p.tflops_per_gpu:.1f} TFLOP/s per GPU "
          f"({p.flops_convention} FLOPs), MFU {p.mfu:.1%}")
    if p.flops_convention != "model":
        print(f"  {p.flops_convention} FLOPs: {FLOPS_CONVENTION_HELP[p.flops_convention]}")
    if lay["pp"] > 1 and not lay["scatter_gather"]:
        print("pipeline sends carry the whole activation (no scatter/gather, as DeepSpeed's pipeline)")
    for w in p.warnings:
        print(f"warning: {w}")


SHARD_WORDS = {"none": "none (replicated)", "optimizer": "ZeRO-1 (optimizer states)",
               "grads": "ZeRO-2 (optimizer states, gradients)", "full": "ZeRO-3 (optimizer states, gradients, weights)"}


def print_sharding(p) -> None:
    """The data-parallel traffic per step and how much of it is exposed; ZeRO-3's gathered units;
    offload's host memory."""
    lay = p.layout
    if p.dp_comm_s:
        exposed = p.time_breakdown_s["dp_comm"]
        what = {"none": "all-reduce of the gradients", "optimizer": "reduce-scatter of the gradients, all-gather "
                "of the weights", "grads": "reduce-scatter of each micro-batch's gradients, all-gather of the weights",
                "full": "all-gather of the weights in each micro-batch's forward and backward, reduce-scatter of its "
                "gradients"}[lay["shard"]]
        prefetch = f"; prefetch {'on' if lay['shard_prefetch'] else 'off'}" if lay["shard"] == "full" else ""
        print(f"data-parallel traffic: {p.dp_traffic_gb:.3g} GiB per GPU per step ({what}), {p.dp_comm_s:.3g} s, "
              f"{exposed:.3g} s exposed ({1 - exposed / p.dp_comm_s:.0%} under compute{prefetch})")
    if lay["shard"] == "full":
        print(f"ZeRO-3 gathered weights: {p.memory_breakdown_gb['gathered']:.2f} GiB (the root units, kept all step, "
              "and the largest layer" + (", twice: the next one is prefetched)" if lay["shard_prefetch"] else ")"))
    if lay["optimizer_offload"]:
        print(f"optimizer offload ({lay['optimizer_offload']}): fp32 main weights, Adam and the gradient shard in host "
              f"memory, {p.host_memory_gb_per_gpu:.1f} GiB per GPU; the step runs on the host (optimizer "
              f"{p.time_breakdown_s['optimizer']:.3g} s)")


# ------------------------------------------------------------------------------------------ validate
# a row's sizes go as flags over the card of its arch (MT-NLG has its own): a plain GPT card, and the
# Llama layout (RoPE, RMSNorm, SwiGLU, no biases, no dropout)
VALIDATION_BASE_CARDS = ("gpt-345m", "smollm2-135m")


def row_command(row) -> list[str] | None:
    """`megazoo plan` arguments that reproduce one validation row (core/plan/published.py): the
    row's sizes over a GPT card, its layout, the software settings it assumes and its paper's FLOP
    convention; None for a row the flags cannot express (a model stand-in whose FLOPs are counted on
    another shape, or a shape the base cards and size flags do not reach). tests/test_plan_cli.py runs
    each and checks step time and TFLOP/s."""
    from megazoo.zoo.cards import card_shape, load_card

    from megazoo.core.plan.params import padded_vocab

    if row.flops_shape is not None:
        return None
    s, lay = row.shape, row.layout
    card = "mt-nlg-530b" if row.source.startswith("MT-NLG") else \
        next(c for c in VALIDATION_BASE_CARDS if load_card(c)["arch"] == s.arch)
    argv = [card]
    base = card_shape(card)
    for name in SHAPE_FLAGS[:-1]:
        value = s.kv_heads if name == "num_kv_heads" else getattr(s, name)
        if name == "num_kv_heads" and value == s.num_heads:
            continue  # --num-heads sets the key/value heads too
        if name == "vocab_size" and padded_vocab(value, lay.tp) == padded_vocab(base.vocab_size, lay.tp):
            continue  # the same padded vocabulary: the same model (GPT-2's 50,257 is 51,200 at tp 8)
        if value != getattr(base, name):
            argv += [f"--{name.replace('_', '-')}", str(value)]
    if s.tie_embeddings != base.tie_embeddings:
        argv.append("--tie-embeddings" if s.tie_embeddings else "--untie-embeddings")
    if s.moe:
        for flag, field in MOE_FLAGS.items():
            value = getattr(s, field)
            if field == "num_experts" or value != getattr(base, field):
                argv += [f"--{flag.replace('_', '-')}", str(value)]
    seq = lay.seq_length or s.seq_length
    argv += (["--seq-length", str(seq)] if seq != base.seq_length else []) + ["--gpus", str(lay.gpus), "--gpu", row.gpu,
             "--tp", str(lay.tp), "--pp", str(lay.pp)] + (["--vpp", str(lay.vpp)] if lay.vpp > 1 else [])
    argv += (["--cp", str(lay.cp)] if lay.cp > 1 else []) + (["--ep", str(lay.ep)] if lay.ep > 1 else [])
    argv += ["--etp", str(lay.etp)] if lay.etp is not None else []
    argv += ["--micro-batch", str(lay.micro_batch), "--global-batch", str(lay.batch), "--recompute", lay.recompute]
    argv += ["--recompute-modules", *lay.recompute_modules] if lay.recompute_modules else []
    if lay.precision != "bf16":
        argv += ["--precision", lay.precision]
    if lay.sp is not None:
        argv.append("--sp" if lay.sp else "--no-sp")
    if lay.network_gb_s is not None:
        argv += ["--network-gb-s", f"{lay.network_gb_s:g}"]
    if lay.pipeline_engine != "megatron":
        argv += ["--pipeline-engine", lay.pipeline_engine]
    if lay.embedding_slots:
        argv.append("--embedding-slots")
    if lay.shard is not None:
        argv += ["--shard", lay.shard] + ([] if lay.shard_prefetch else ["--no-shard-prefetch"])
    flags = [(lay.distributed_optimizer and lay.shard is None, "--distributed-optimizer"), (not lay.flash_attention, "--no-flash-attention"),
             (not lay.scatter_gather, "--no-scatter-gather"), (lay.overlap_grad_reduce, "--overlap-grad-reduce"),
             (lay.overlap_param_gather, "--overlap-param-gather"), (lay.tp_comm_overlap, "--tp-comm-overlap")]
    argv += [flag for on, flag in flags if on]
    argv += ["--flops-convention", row.convention]
    return argv if _same_plan(row, argv) else None


def _same_plan(row, argv: list[str]) -> bool:
    """Whether the command plans what the row plans (step time, TFLOP/s and memory agree): the
    size flags reach only the sizes, not, say, a squared-ReLU MLP or a LayerNorm Llama."""
    from math import isclose

    from megazoo.zoo.cards import load_card

    from megazoo.core.plan.planner import plan

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(argv)
    got = plan(build_shape(load_card(args.model), args), build_layout(args), args.gpu,
               flops_convention=args.flops_convention)
    want = plan(row.shape, row.layout, row.gpu, flops_convention=row.convention)
    return all(isclose(getattr(got, k), getattr(want, k), rel_tol=1e-9)
               for k in ("step_time_s", "tflops_per_gpu", "memory_gb_per_gpu"))


def print_validation(as_json: bool, tolerance: float = 0.10) -> None:
    """Every published row with its residual in step time and TFLOP/s, then the mean and worst
    absolute error per source. A row's error is that of the figure its source measured (step time
    where given, else TFLOP/s or MFU); --json prints {rows, sources, tolerance} for scripts."""
    from megazoo.core.plan.validation import published_rows, source_summary, validation_table

    rows = published_rows()
    table = validation_table(rows=rows)
    for r, row in zip(table, rows):
        argv = row_command(row)
        r["command"] = "megazoo plan " + " ".join(argv) if argv else None
    sources = source_summary(table)
    if as_json:
        print(json.dumps(dict(rows=table, sources=sources, tolerance=tolerance), indent=1, default=str))
        return
    print(f"{'source':<30} {'row':<36} {'tp x cp x pp x dp (vpp)':<23} {'step s':>7} {'published':>9} {'residual':>8} "
          f"{'TFLOP/s':>7} {'published':>9} {'residual':>8} {'conv.':<12}")
    for r in table:
        lay = f"{r['tp']} x {r['cp']} x {r['pp']} x {r['dp']}" + (
            f" ({r['vpp']}{'*' if r['interleave_assumed'] else ''})" if r["vpp"] > 1 else "")
        lay += f" ep{r['ep']}" if r["ep"] > 1 else ""
        pub_step = f"{r['published_step_s']:g}" if r["published_step_s"] else "-"
        pub_tf = f"{r['published_tflops']:.1f}" + ("m" if r["tflops_from_mfu"] else "")
        mark = "" if abs(r["error"]) <= tolerance else " <-"
        print(f"{r['source'][:30]:<30} {r['label'][:36]:<36} {lay:<23} {r['predicted_step_s']:>7.3g} {pub_step:>9} "
              f"{r['step_residual']:>+8.1%} {r['predicted_tflops']:>7.1f} {pub_tf:>9} {r['residual']:>+8.1%} "
              f"{r['convention']:<12}{mark}")
    within = sum(abs(r["error"]) <= tolerance for r in table)
    print(f"{within} of {len(table)} rows within {tolerance:.0%} in the figure their source measured (step time where "
          "given, else TFLOP/s). * vpp assumed; m: TFLOP/s from the published MFU (or step time) and the GPU's peak; "
          "a step residual without a published step is the one the published TFLOP/s implies.")
    print(f"\n{'source':<40} {'rows':>4} {'mean |error|':>12} {'worst |error|':>13}")
    for s in sources:
        print(f"{s['source']:<40} {s['rows']:>4} {s['mean_abs_error']:>12.1%} {s['worst_abs_error']:>13.1%}")
    print("\nSources, and the settings each row assumes:")
    for r in table:
        print(f"  {r['label']} [{r['source']}, {r['cite']}]: {r['assumed'] or 'all settings stated'}")
    print("Each row from the command line:")
    for r in table:
        none = "(no command: a stand-in shape, or an MLP or norm the size flags do not set)"
        print(f"  {r['label']}: {r['command'] or none}")


def plot(path: str, plans: list, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    if len(plans) == 1:
        p = plans[0]
        mem = p.memory_breakdown_gb
        ax1.bar(list(mem), list(mem.values()), color="tab:blue")
        ax1.axhline(p.gpu_memory_gb, color="red", linestyle="--", label=f"{p.gpu} memory")
        ax1.set_ylabel("GiB per GPU")
        ax1.legend()
        tb = {k: v for k, v in p.time_breakdown_s.items() if not k.endswith("_in_compute")}
        ax2.bar(list(tb), list(tb.values()), color="tab:orange")
        ax2.set_ylabel("seconds per step")
        for ax in (ax1, ax2):
            ax.tick_params(axis="x", rotation=30)
    else:
        labels = [f"tp{p.layout['tp']} pp{p.layout['pp']}" + (f" v{p.layout['vpp']}" if p.layout["vpp"] > 1 else "")
                  + (f" cp{p.layout['cp']}" if p.layout["cp"] > 1 else "")
                  + (f" ep{p.layout['ep']}" if p.layout["ep"] > 1 else "")
                  + (f" {p.layout['shard']}" if p.layout["shard"] in ("grads", "full") else "") for p in plans]
        ax1.barh(labels[::-1], [p.tflops_per_gpu for p in plans][::-1], color="tab:green")
        ax1.set_xlabel("predicted model TFLOP/s per GPU")
        ax2.barh(labels[::-1], [p.memory_gb_per_gpu for p in plans][::-1], color="tab:blue")
        ax2.axvline(plans[0].gpu_memory_gb, color="red", linestyle="--")
        ax2.set_xlabel("GiB per GPU")
    fig.suptitle(title)
    fig.tight_layout()
    from pathlib import Path

    from megazoo.core.fs import atomic_file

    with atomic_file(path) as f:  # a failed or killed run leaves the old file, never half a chart
        fig.savefig(f, dpi=100, format=Path(path).suffix[1:].lower() or "png")
    plt.close(fig)


def check_plot_path(path: str) -> None:
    """Refuse a --plot path that cannot be written before any work: its folder must exist."""
    from pathlib import Path

    from megazoo.core.plan.shapes import PlanError

    target = Path(path)
    if target.is_dir():
        raise PlanError(f"--plot {path}: is a folder; give a file name such as {target / 'plan.png'}")
    if not target.parent.is_dir():
        raise PlanError(f"--plot {path}: the folder {target.parent} does not exist; create it first")
    if target.suffix and target.suffix[1:].lower() not in PLOT_FORMATS:
        raise PlanError(f"--plot {path}: {target.suffix} is not an image format matplotlib writes; use one of "
                        f"{', '.join('.' + f for f in PLOT_FORMATS)}")


def train_time_of(args: argparse.Namespace, shape, layout):
    """The time to train of --train-tokens (with --rampup-batch-size, --lr-*-tokens); None without it."""
    from megazoo.core.plan.train_time import TrainSettings, train_time

    if not args.train_tokens:
        return None
    settings = TrainSettings(args.train_tokens, tuple(args.rampup_batch_size) if args.rampup_batch_size else None,
                             args.lr_warmup_tokens, args.lr_decay_tokens)
    return train_time(shape, layout, args.gpu, settings, flops_convention=args.flops_convention)


def run(args: argparse.Namespace) -> int:
    from megazoo.core.plan.planner import plan
    from megazoo.core.plan.search import search
    from megazoo.core.plan.shapes import PlanError
    from megazoo.core.plan.zero import check_mode
    from megazoo.zoo.cards import CardError, load_card

    if args.validate:
        print_validation(args.json)
        return 0
    try:
        if args.model is None or args.gpus is None:
            raise PlanError("give a MODEL and --gpus N (or --validate for the validation table)")
        for flag in ("cp", "ep"):
            if len(getattr(args, flag)) > 1 and not args.search:
                raise PlanError(f"--{flag} {','.join(map(str, getattr(args, flag)))} lists several sizes; give one, "
                                "or add --search to rank them")
        if args.plot:
            check_plot_path(args.plot)
        check_mode(args.shard or "none", args.optimizer_offload, names=("--shard", "--optimizer-offload"))
        if args.distributed_optimizer and args.shard not in (None, "optimizer"):
            raise PlanError(f"--distributed-optimizer is --shard optimizer (ZeRO-1); drop it to plan --shard {args.shard}")
        train_flags = [f for f, on in (("--train-tokens", args.train_tokens), ("--rampup-batch-size", args.rampup_batch_size),
                                       ("--lr-warmup-tokens", args.lr_warmup_tokens),
                                       ("--lr-decay-tokens", args.lr_decay_tokens)) if on]
        if train_flags and args.search:
            raise PlanError(f"{train_flags[0]} times one layout; drop --search, or plan the layout --search ranks first")
        if train_flags and not args.train_tokens:
            raise PlanError(f"{train_flags[0]} needs --train-tokens (the run's training tokens, e.g. 270e9)")
        card = load_card(args.model)
        shape = build_shape(card, args)
        layout = build_layout(args)
        if args.search:
            shards = {"shards": (args.shard,)} if args.shard else {}
            plans = search(shape, layout, args.gpu, flops_convention=args.flops_convention, cps=args.cp, eps=args.ep,
                           **shards)
            if not plans:
                raise PlanError(f"no layout of {args.gpus} GPUs fits {card['name']} on {args.gpu}; add GPUs, "
                                "or a larger global batch that more data-parallel replicas can share")
            plans = plans[: args.top]
            if args.json:
                print(json.dumps([p.to_dict() for p in plans], indent=1))
            else:
                wide = args.cp != (1,) or args.ep != (1,) or shape.moe  # cp / ep columns when they are in play
                extra = f" {'cp':>3} {'ep':>3}" if wide else ""
                print(f"{'rank':>4} {'tp':>3} {'pp':>4} {'vpp':>3}{extra} {'dp':>5} {'mb':>3} {'recompute':>9} {'shard':>9} "
                      f"{'GiB':>6} {'step s':>8} {'tokens/s':>10} {'TFLOP/s':>8} {'MFU':>6}   (TFLOP/s: {args.flops_convention} FLOPs)")
                for i, p in enumerate(plans, 1):
                    lay = p.layout
                    extra = f" {lay['cp']:>3} {lay['ep']:>3}" if wide else ""
                    print(f"{i:>4} {lay['tp']:>3} {lay['pp']:>4} {lay['vpp']:>3}{extra} {p.dp:>5} {lay['micro_batch']:>3} "
                          f"{lay['recompute']:>9} {lay['shard']:>9} "
                          f"{p.memory_gb_per_gpu:>6.1f} {p.step_time_s:>8.3g} {p.tokens_per_s:>10.4g} {p.tflops_per_gpu:>8.1f} {p.mfu:>6.1%}")
            if args.plot:
                plot(args.plot, plans, f"{card['name']} on {args.gpus} x {args.gpu}: best layouts")
            return 0
        if args.dry_run and any(getattr(args, k, None) is not None for k in (*SHAPE_FLAGS, *MOE_FLAGS)):
            raise PlanError("--dry-run builds the card's own model: drop the size flags (--num-layers, ...) or "
                            "write a card YAML with those sizes")
        if args.dry_run and (layout.cp > 1 or layout.ep > 1):
            raise PlanError("--dry-run builds dense layouts without context or expert parallelism; use --cp 1 --ep 1")
        result = plan(shape, layout, args.gpu, flops_convention=args.flops_convention)
        run_time = train_time_of(args, shape, layout)
        checks = dry_run(card, layout) if args.dry_run else None
    except (PlanError, CardError) as e:
        from megazoo.core.train.user_errors import debug

        if debug():  # MEGAZOO_DEBUG=1: the traceback behind the one line
            raise
        print(f"megazoo plan: error: {e}", file=sys.stderr)
        return 2
    if args.json:
        out = result.to_dict()
        if checks is not None:
            out["dry_run"] = checks
        if run_time is not None:
            out["train"] = run_time.to_dict()
        print(json.dumps(out, indent=1))
    else:
        print_plan(result)
        for line in run_time.lines() if run_time is not None else ():
            print(line)
        for c in checks or []:
            print(f"dry run, pipeline stage {c['stage']} (rank {c['rank']}): model {c['model_params']:,} parameters "
                  f"in {c['model_tensors']} tensors, planner {c['planner_params']:,} in {c['planner_tensors']}: "
                  + ("agree" if c["ok"] else "DISAGREE"))
    if args.plot:
        plot(args.plot, [result], f"{card['name']} on {args.gpus} x {result.gpu}")
    if checks is not None and not all(c["ok"] for c in checks):
        return 1
    return 0
