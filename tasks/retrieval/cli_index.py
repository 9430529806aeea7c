"""`megazoo task retrieval index --vectors VEC --out DIR [--index-factory SPEC]`, or
`megazoo task retrieval index --passages FILE.tsv --checkpoint CKPT --out DIR [--index flat|ivf|hnsw]`.

--vectors: the index of a vectors folder (`megazoo task retrieval embed`), built without holding the
vectors in memory (index_build.py): any faiss factory string, trained on a sample (--train-sample),
filled block by block, split into --index-shards files searched as one faiss.IndexShards, and its
recall@10/@100 against exact search measured on --recall-queries stored vectors. The passage ids come
from the store the vectors were embedded from (--store, default: the one their manifest names).
--passages: embeds every passage (title, text) with the checkpoint's encoder in process (a tqdm bar on
stderr; `--nproc N` local ranks embed a strided share each), then builds the index the same way.
Either writes DIR/index.faiss (or index-00000.faiss, ...), DIR/ids.npy (row -> passage id) and
DIR/meta.json. An existing non-empty DIR is replaced only with --overwrite, and only once the new
index is complete. --index flat|ivf|hnsw are aliases of the factory strings Flat, IVF{nlist},Flat and
HNSW{m}.
"""

from __future__ import annotations

import argparse
import sys

from megazoo.core.argtypes import int_in, local_ranks
from megazoo.core.fs import input_arg, output_arg
from megazoo.tasks.retrieval.index import DEVICES, KINDS
from megazoo.tasks.retrieval.similarity import SIMILARITIES

PROG = "megazoo task retrieval index"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    input_arg(source, "--vectors", kind="folder", help="a vectors folder of `megazoo task retrieval embed`")
    input_arg(source, "--passages", kind="file", help="a psgs_w100.tsv-layout file (id<TAB>text<TAB>title, header), "
                                                      "embedded in process (needs --checkpoint)")
    input_arg(parser, "--store", kind="any", default=None,
              help="--vectors: the passage store they were embedded from, for the ids (default: the manifest's)")
    input_arg(parser, "--checkpoint", kind="any", default=None,
              help="--passages: the encoder: a retrieval run's checkpoints/, an import-hf folder or an HF BERT folder")
    output_arg(parser, "--out", kind="folder", required=True, help="the index folder to write")
    kind = parser.add_mutually_exclusive_group()
    kind.add_argument("--index-factory", default=None, metavar="SPEC",
                      help="a faiss factory string: Flat, IVF4096,Flat, IVF65536,PQ64, HNSW32, OPQ64,IVF4096,PQ64, ...")
    kind.add_argument("--index", default=None, choices=KINDS,
                      help="aliases: flat = Flat (exact), ivf = IVF{nlist},Flat, hnsw = HNSW{hnsw-m}")
    parser.add_argument("--train-sample", type=int_in(1, 1 << 40), default=None,
                        help="vectors an index that needs training trains on (default: min(count, max(100000, "
                             "40 x its centroids)))")
    parser.add_argument("--index-shards", type=int_in(1, 4096), default=1,
                        help="index files over contiguous row ranges, searched as one faiss.IndexShards")
    parser.add_argument("--recall-queries", type=int_in(0, 100_000), default=None,
                        help="--vectors: stored vectors drawn as queries for recall against exact search (default "
                             "1000; 0: skip)")
    parser.add_argument("--pooling", choices=("mean", "cls"), default=None,
                        help="default: the checkpoint's model.pooling (mean for a plain encoder)")
    parser.add_argument("--similarity", choices=SIMILARITIES, default=None,
                        help="cosine: L2-normalised vectors (default: the run's task.similarity, else dot)")
    add_lengths(parser, question=False)
    parser.add_argument("--nproc", type=local_ranks, default=1,
                        help="--passages: local ranks that embed the passages (a share each)")
    parser.add_argument("--nlist", type=int_in(1, 1 << 20), default=None, help="ivf: cells (default 4 sqrt(N))")
    parser.add_argument("--nprobe", type=int_in(1, 1 << 20), default=8, help="IVF indexes: cells searched per query")
    # each node keeps 2m links of 4 bytes: 256 is far above any published setting (16-64)
    parser.add_argument("--hnsw-m", type=int_in(2, 256), default=32, help="hnsw: links per node")
    parser.add_argument("--ef-search", type=int_in(1, 1 << 16), default=128, help="HNSW indexes: search depth")
    parser.add_argument("--faiss-device", choices=DEVICES, default="auto",
                        help="where faiss trains and fills the index: auto (the GPUs a GPU build of faiss sees, "
                             "else the CPU), cpu, gpu; the saved index is a CPU index")


def add_lengths(parser: argparse.ArgumentParser, question: bool = True) -> None:
    """--question-length, --passage-length and --batch with their bounds (index and evaluate)."""
    # lengths past the encoder's positions are refused by the encoder with its own figure
    if question:
        parser.add_argument("--question-length", type=int_in(4, 1 << 16), default=None,
                            help="default: the run's, else 64")
    parser.add_argument("--passage-length", type=int_in(4, 1 << 16), default=None,
                        help="tokens per passage, title + text (default: the run's task.passage_length, else 256)")
    parser.add_argument("--batch", type=int_in(1, 4096), default=32, help="texts per forward pass")


def _check_source(args) -> None:
    """Flags that belong to the other source are refused in one line, not ignored."""
    if args.passages is not None:
        if args.checkpoint is None:
            raise ValueError("--passages needs --checkpoint CKPT (the encoder that embeds them); or give --vectors VEC "
                             "of `megazoo task retrieval embed`")
        for flag, value in (("--store", args.store), ("--recall-queries", args.recall_queries)):
            if value is not None:
                raise ValueError(f"{flag} goes with --vectors; with --passages the file is the store")
        return
    given = [flag for flag, value in (("--checkpoint", args.checkpoint), ("--pooling", args.pooling),
                                      ("--similarity", args.similarity), ("--passage-length", args.passage_length),
                                      ("--nproc", None if args.nproc == 1 else args.nproc)) if value is not None]
    if given:
        raise ValueError(f"{given[0]} goes with --passages; the vectors in {args.vectors} are embedded already "
                         f"(their manifest holds the encoder settings)")


def run_vectors(args) -> dict:
    """The --vectors form: open the vectors and their store, build (index_build.build_from_vectors)."""
    from megazoo.tasks.retrieval.index_build import build_from_vectors
    from megazoo.tasks.retrieval.store import open_store
    from megazoo.tasks.retrieval.vectors import open_vectors

    vec = open_vectors(args.vectors)
    where = args.store or vec.manifest.get("store_path")
    if where is None:
        raise ValueError(f"--vectors {args.vectors}: its manifest names no passage store; pass --store STORE (the "
                         f"store the vectors were embedded from)")
    store = open_store(where)
    return build_from_vectors(vec, args.out, args.index_factory or args.index or "flat", store=store,
                              nlist=args.nlist, m=args.hnsw_m, train_sample=args.train_sample,
                              index_shards=args.index_shards, nprobe=args.nprobe, ef_search=args.ef_search,
                              device=args.faiss_device, overwrite=args.overwrite,
                              probes=1000 if args.recall_queries is None else args.recall_queries)


def run(args) -> int:
    from megazoo.core.parallel.launch import RankFailure
    from megazoo.tasks.retrieval.evaluate_stage import index_passages
    from megazoo.tasks.retrieval.index import check_factory, factory_spec

    # other errors go to megazoo's boundary: one line, exit 2 for what the user gave, 1 for a failing disk
    _check_source(args)
    if args.vectors is not None:
        meta = run_vectors(args)
        recall = "".join(f", recall@{k} vs exact {meta[f'recall_at_{k}']:.4f}" for k in (10, 100)
                         if f"recall_at_{k}" in meta)
        trained = f"{meta['train_s']:.1f} s training on {meta['trained_on']}, " if meta["trained_on"] else ""
        print(f"{meta['factory']} index of {meta['count']} vectors in {meta['index_shards']} file(s) ({trained}"
              f"{meta['add_s']:.1f} s adding, {meta['add_per_s']:,.0f} vectors/s{recall}) written to {args.out}")
        return 0
    # the in-process form: a factory string's syntax is checked before the embedding; the options beyond
    # the old ones are passed only when given, so index_passages gets only what it knows
    check_factory(factory_spec(args.index_factory or "flat", 1))
    shards = None if args.index_shards == 1 else args.index_shards
    extra = {k: v for k, v in (("train_sample", args.train_sample), ("index_shards", shards)) if v is not None}
    try:
        meta = index_passages(args.passages, args.checkpoint, args.out, args.index_factory or args.index or "flat",
                              args.pooling, args.batch, args.passage_length, nlist=args.nlist, nprobe=args.nprobe,
                              m=args.hnsw_m, ef_search=args.ef_search, nproc=args.nproc, similarity=args.similarity,
                              device=args.faiss_device, overwrite=args.overwrite, **extra)
    except RankFailure as e:
        return rank_failure(e, PROG)
    recall = f", recall@10 vs exact {meta['recall_at_10']:.4f}" if "recall_at_10" in meta else ""
    print(f"{meta['kind']} index of {meta['passages']} ({meta['embed_s']:.1f} s embedding, {meta['build_s']:.2f} s "
          f"building{recall}) written to {args.out}")
    return 0


def rank_failure(e: Exception, prog: str) -> int:
    """A failure of a local rank as one line (its traceback's last line says it), exit 2; under
    MEGAZOO_DEBUG=1 the ranks' tracebacks instead."""
    from megazoo.core.train.user_errors import debug

    if debug():
        raise e
    lines = str(e).strip().splitlines() or [""]
    print(f"{prog}: error: {lines[-1]}", file=sys.stderr)
    return 2
