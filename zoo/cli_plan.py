"""`megazoo plan MODEL --gpus N --gpu a100-80gb ...`: memory, step time and MFU of a layout.

MODEL is a model card (`megazoo zoo list`) or a card YAML path. `--search` ranks every feasible
layout; `--dry-run` builds the real megazoo model of one rank on the meta device under torch's fake
process group and checks its parameters against the planner's.
"""

from __future__ import annotations

import argparse
import json
import sys
from math import prod

GIB = float(2**30)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", help="model card name (see `megazoo zoo list`) or a card YAML path")
    parser.add_argument("--gpus", type=int, required=True, help="number of GPUs")
    parser.add_argument("--gpu", default="a100-80gb", help="GPU type: v100, a100-40gb, a100-80gb, h100, h200, b200")
    parser.add_argument("--tp", type=int, default=1, help="tensor-parallel size")
    parser.add_argument("--pp", type=int, default=1, help="pipeline-parallel size")
    parser.add_argument("--vpp", type=int, default=1, help="model chunks per pipeline rank (interleaved schedule)")
    parser.add_argument("--micro-batch", type=int, default=1, help="sequences per micro-batch")
    parser.add_argument("--global-batch", type=int, default=None, help="sequences per step (default: dp x micro-batch)")
    parser.add_argument("--seq-length", type=int, default=None, help="tokens per sequence (default: the card's)")
    parser.add_argument("--recompute", choices=("none", "selective", "full"), default="none")
    parser.add_argument("--distributed-optimizer", action="store_true", help="shard optimizer states over dp (ZeRO-1)")
    parser.add_argument("--sp", dest="sp", action="store_true", default=None, help="sequence parallelism (default: on when tp > 1)")
    parser.add_argument("--no-sp", dest="sp", action="store_false")
    parser.add_argument("--precision", choices=("bf16", "fp16", "fp32"), default="bf16")
    parser.add_argument("--gpus-per-node", type=int, default=None)
    parser.add_argument("--nvlink-gb-s", type=float, default=None, help="per-GPU NVLink bandwidth, one direction")
    parser.add_argument("--network-gb-s", type=float, default=None, help="per-GPU inter-node bandwidth")
    parser.add_argument("--no-flash-attention", dest="flash_attention", action="store_false",
                        help="unfused attention (stores the s x s scores)")
    parser.add_argument("--json", action="store_true", help="print the plan as one JSON object")
    parser.add_argument("--search", action="store_true", help="rank every feasible layout by predicted throughput")
    parser.add_argument("--top", type=int, default=10, help="layouts shown by --search")
    parser.add_argument("--plot", metavar="PNG", help="write a chart of the plan (or of the search) to PNG")
    parser.add_argument("--dry-run", action="store_true",
                        help="build the real model of one rank on the meta device and compare parameters")


def build_layout(args: argparse.Namespace):
    from megazoo.core.plan.shapes import Layout

    return Layout(gpus=args.gpus, tp=args.tp, pp=args.pp, vpp=args.vpp, micro_batch=args.micro_batch,
                  global_batch=args.global_batch, seq_length=args.seq_length, sp=args.sp, recompute=args.recompute,
                  distributed_optimizer=args.distributed_optimizer, precision=args.precision,
                  gpus_per_node=args.gpus_per_node, nvlink_gb_s=args.nvlink_gb_s, network_gb_s=args.network_gb_s,
                  flash_attention=args.flash_attention)


# ----------------------------------------------------------------------------------------- dry run
def gpt_config(card: dict, seq_length: int | None = None):
    """The zoo's GPTConfig for a gpt/llama card."""
    from megazoo.core.plan.shapes import PlanError
    from megazoo.zoo.gpt.config import GPTConfig

    if card["arch"] not in ("gpt", "llama"):
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
    print(f"{p.model} on {lay['gpus']} x {p.gpu}: tp {lay['tp']} x pp {lay['pp']}"
          + (f" (vpp {lay['vpp']})" if lay["vpp"] > 1 else "") + f" x dp {p.dp}; micro-batch {lay['micro_batch']}, "
          f"global batch {lay['global_batch']} ({p.num_micro_batches} micro-batches per replica), seq {lay['seq_length']}; "
          f"sp {'on' if lay['sp'] else 'off'}, recompute {lay['recompute']}, "
          f"distributed optimizer {'on' if lay['distributed_optimizer'] else 'off'}, {lay['precision']}")
    print(f"parameters: {p.params_total:,} in all, {p.params_per_gpu:,} on the largest GPU")
    mem = p.memory_breakdown_gb
    print(f"memory per GPU: {p.memory_gb_per_gpu:.1f} GiB of {p.gpu_memory_gb:.0f} GiB -> "
          f"{'fits' if p.fits else 'DOES NOT FIT'} (" + ", ".join(f"{k} {v:.1f}" for k, v in mem.items()) + ")")
    print(f"FLOPs per iteration: {p.flops_per_iteration:.4g}; pipeline bubble (p-1)/(v*m): {p.bubble_fraction:.1%}")
    tb = p.time_breakdown_s
    print(f"step time: {p.step_time_s:.3g} s (" + ", ".join(f"{k} {v:.3g}" for k, v in tb.items()) + ")")
    print(f"throughput: {p.tokens_per_s:,.0f} tokens/s, {p.tflops_per_gpu:.1f} TFLOP/s per GPU, MFU {p.mfu:.1%}")
    for w in p.warnings:
        print(f"warning: {w}")


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
        tb = {k: v for k, v in p.time_breakdown_s.items() if k != "tp_comm_in_compute"}
        ax2.bar(list(tb), list(tb.values()), color="tab:orange")
        ax2.set_ylabel("seconds per step")
        for ax in (ax1, ax2):
            ax.tick_params(axis="x", rotation=30)
    else:
        labels = [f"tp{p.layout['tp']} pp{p.layout['pp']}" + (f" v{p.layout['vpp']}" if p.layout["vpp"] > 1 else "")
                  for p in plans]
        ax1.barh(labels[::-1], [p.tflops_per_gpu for p in plans][::-1], color="tab:green")
        ax1.set_xlabel("predicted model TFLOP/s per GPU")
        ax2.barh(labels[::-1], [p.memory_gb_per_gpu for p in plans][::-1], color="tab:blue")
        ax2.axvline(plans[0].gpu_memory_gb, color="red", linestyle="--")
        ax2.set_xlabel("GiB per GPU")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def run(args: argparse.Namespace) -> int:
    from megazoo.core.plan.planner import plan
    from megazoo.core.plan.search import search
    from megazoo.core.plan.shapes import PlanError
    from megazoo.zoo.cards import CardError, card_shape, load_card

    try:
        card = load_card(args.model)
        shape = card_shape(card)
        layout = build_layout(args)
        if args.search:
            plans = search(shape, layout, args.gpu)
            if not plans:
                raise PlanError(f"no layout of {args.gpus} GPUs fits {card['name']} on {args.gpu}; add GPUs, "
                                "or a larger global batch that more data-parallel replicas can share")
            plans = plans[: args.top]
            if args.json:
                print(json.dumps([p.to_dict() for p in plans], indent=1))
            else:
                print(f"{'rank':>4} {'tp':>3} {'pp':>4} {'vpp':>3} {'dp':>5} {'mb':>3} {'recompute':>9} {'dist-opt':>8} "
                      f"{'GiB':>6} {'step s':>8} {'tokens/s':>10} {'TFLOP/s':>8} {'MFU':>6}")
                for i, p in enumerate(plans, 1):
                    lay = p.layout
                    print(f"{i:>4} {lay['tp']:>3} {lay['pp']:>4} {lay['vpp']:>3} {p.dp:>5} {lay['micro_batch']:>3} "
                          f"{lay['recompute']:>9} {'on' if lay['distributed_optimizer'] else 'off':>8} "
                          f"{p.memory_gb_per_gpu:>6.1f} {p.step_time_s:>8.3g} {p.tokens_per_s:>10.4g} {p.tflops_per_gpu:>8.1f} {p.mfu:>6.1%}")
            if args.plot:
                plot(args.plot, plans, f"{card['name']} on {args.gpus} x {args.gpu}: best layouts")
            return 0
        result = plan(shape, layout, args.gpu)
        checks = dry_run(card, layout) if args.dry_run else None
    except (PlanError, CardError) as e:
        print(f"megazoo plan: error: {e}", file=sys.stderr)
        return 2
    if args.json:
        out = result.to_dict()
        if checks is not None:
            out["dry_run"] = checks
        print(json.dumps(out, indent=1))
    else:
        print_plan(result)
        for c in checks or []:
            print(f"dry run, pipeline stage {c['stage']} (rank {c['rank']}): model {c['model_params']:,} parameters "
                  f"in {c['model_tensors']} tensors, planner {c['planner_params']:,} in {c['planner_tensors']}: "
                  + ("agree" if c["ok"] else "DISAGREE"))
    if args.plot:
        plot(args.plot, [result], f"{card['name']} on {args.gpus} x {result.gpu}")
    if checks is not None and not all(c["ok"] for c in checks):
        return 1
    return 0
