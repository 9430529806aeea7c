"""`megazoo task retrieval embed --store STORE --checkpoint CKPT --out VEC [--nproc N] [--shard-size N]
[--dtype float32|float16]`: every passage's vector from the checkpoint's context tower, in shards
(embed.py, vectors.py). `--nproc N` local ranks share the shards; across machines, start the same
command under torchrun on each (VEC on a shared file system): the ranks take shards k % world. A
killed job rerun with the same command reuses the finished shards; VEC of another embedding is
refused (or replaced with --overwrite)."""

from __future__ import annotations

import argparse

from megazoo.core.argtypes import int_in, local_ranks
from megazoo.core.fs import input_arg, output_arg
from megazoo.tasks.retrieval.similarity import SIMILARITIES
from megazoo.tasks.retrieval.vectors import DTYPES

PROG = "megazoo task retrieval embed"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from megazoo.tasks.retrieval.cli_index import add_lengths

    input_arg(parser, "--store", kind="any", required=True,
              help="a passage store (`megazoo task retrieval store`), or a small psgs_w100.tsv read into memory")
    input_arg(parser, "--checkpoint", kind="any", required=True,
              help="the encoder: a retrieval run's checkpoints/, an import-hf folder or an HF BERT folder")
    output_arg(parser, "--out", kind="folder", resumable=True, required=True,
               help="the vectors folder (a rerun of the same job continues it)")
    parser.add_argument("--nproc", type=local_ranks, default=1, help="local ranks that share the shards")
    parser.add_argument("--shard-size", type=int_in(1, 1 << 30), default=100_000, help="passages per shard file")
    parser.add_argument("--dtype", choices=DTYPES, default="float32", help="how the vectors are stored")
    parser.add_argument("--pooling", choices=("mean", "cls"), default=None,
                        help="default: the checkpoint's model.pooling (mean for a plain encoder)")
    parser.add_argument("--similarity", choices=SIMILARITIES, default=None,
                        help="cosine: L2-normalised vectors (default: the run's task.similarity, else dot)")
    add_lengths(parser, question=False)


def run(args) -> int:
    from megazoo.core.parallel.launch import RankFailure
    from megazoo.tasks.retrieval import embed

    settings = (args.store, args.checkpoint, args.out, args.shard_size, args.dtype, args.pooling,
                args.passage_length, args.similarity, args.batch)
    from megazoo.core.parallel.launch import under_launcher

    if under_launcher():
        return _run_torchrun(args, settings)
    try:
        manifest, reports = embed.embed_store(*settings[:3], nproc=args.nproc, shard_size=args.shard_size,
                                              dtype=args.dtype, pooling=args.pooling,
                                              passage_length=args.passage_length, similarity=args.similarity,
                                              batch=args.batch, overwrite=args.overwrite)
    except RankFailure as e:
        from megazoo.tasks.retrieval.cli_index import rank_failure

        return rank_failure(e, PROG)
    _report(manifest, reports, args.out)
    return 0


def _run_torchrun(args, settings) -> int:
    """One rank of a torchrun job: rank 0 plans, every rank embeds its shards, rank 0 finishes."""
    import torch.distributed as dist

    from megazoo.core.parallel.launch import setup_rank, teardown_rank
    from megazoo.tasks.retrieval import embed

    rank, world = setup_rank()
    try:
        box = [embed.plan(*settings, overwrite=args.overwrite) if rank == 0 else None]
        dist.broadcast_object_list(box, src=0)
        report = embed.embed_rank(args.out, box[0], args.batch)
        reports = [None] * world
        dist.all_gather_object(reports, report)
        if rank == 0:
            _report(embed.finish(args.out, box[0]), reports, args.out)
    finally:
        teardown_rank(world)
    return 0


def _report(manifest: dict, reports: list[dict], out) -> None:
    done = sum(r["passages"] for r in reports)
    reused = sum(r["reused"] for r in reports)
    slowest = max(r["seconds"] for r in reports)
    rate = f", {done / slowest:,.0f} passages/s" if done and slowest > 0 else ""
    print(f"{manifest['count']:,} passage vectors ({manifest['dim']}-d {manifest['dtype']}, "
          f"{len(manifest['shards'])} shards, {reused} reused) by {len(reports)} rank(s) in {slowest:.1f} s{rate}: "
          f"{out}")
    print("peak RSS per rank: " + ", ".join(f"{r['peak_rss_mib']:,.0f}" for r in reports) + " MiB")
