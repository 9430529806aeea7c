"""`megazoo task retrieval index --passages FILE.tsv --checkpoint CKPT --out DIR [--index flat|ivf|hnsw]`.

Embeds every passage (title, text) with the checkpoint's encoder (a tqdm bar on stderr; `--nproc N`
local ranks embed a strided share each), builds the
faiss index and writes DIR/index.faiss, DIR/ids.npy (row -> passage id) and DIR/meta.json (with
the recall@10 an approximate index keeps against exact search). An existing non-empty DIR is
replaced only with --overwrite, and only once the new index is complete.
"""

from __future__ import annotations

import argparse
import sys

from megazoo.core.argtypes import int_in
from megazoo.core.fs import input_arg, output_arg
from megazoo.tasks.retrieval.index import DEVICES
from megazoo.tasks.retrieval.similarity import SIMILARITIES

PROG = "megazoo task retrieval index"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    input_arg(parser, "--passages", kind="file", required=True,
              help="a psgs_w100.tsv-layout file (id<TAB>text<TAB>title, header)")
    input_arg(parser, "--checkpoint", kind="any", required=True,
              help="the encoder: a retrieval run's checkpoints/, an import-hf folder or an HF BERT folder")
    output_arg(parser, "--out", kind="folder", required=True, help="the index folder to write")
    parser.add_argument("--index", default="flat", choices=("flat", "ivf", "hnsw"),
                        help="flat: exact; ivf / hnsw: approximate (recall reported)")
    parser.add_argument("--pooling", choices=("mean", "cls"), default=None,
                        help="default: the checkpoint's model.pooling (mean for a plain encoder)")
    parser.add_argument("--similarity", choices=SIMILARITIES, default=None,
                        help="cosine: L2-normalised vectors (default: the run's task.similarity, else dot)")
    add_lengths(parser, question=False)
    parser.add_argument("--nproc", type=int_in(1, 256), default=1,
                        help="local ranks that embed the passages (a share each)")
    parser.add_argument("--nlist", type=int_in(1, 1 << 20), default=None, help="ivf: cells (default 4 sqrt(N))")
    parser.add_argument("--nprobe", type=int_in(1, 1 << 20), default=8, help="ivf: cells searched per query")
    # each node keeps 2m links of 4 bytes: 256 is far above any published setting (16-64)
    parser.add_argument("--hnsw-m", type=int_in(2, 256), default=32, help="hnsw: links per node")
    parser.add_argument("--ef-search", type=int_in(1, 1 << 16), default=128, help="hnsw: search depth")
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


def run(args) -> int:
    from megazoo.core.parallel.launch import RankFailure
    from megazoo.tasks.retrieval.evaluate_stage import index_passages

    # other errors go to megazoo's boundary: one line, exit 2 for what the user gave, 1 for a failing disk
    try:
        meta = index_passages(args.passages, args.checkpoint, args.out, args.index, args.pooling, args.batch,
                              args.passage_length, nlist=args.nlist, nprobe=args.nprobe, m=args.hnsw_m,
                              ef_search=args.ef_search, nproc=args.nproc, similarity=args.similarity,
                              device=args.faiss_device, overwrite=args.overwrite)
    except RankFailure as e:
        lines = str(e).strip().splitlines() or [""]  # a rank's failure: its traceback's last line says it
        print(f"{PROG}: error: {lines[-1]}", file=sys.stderr)
        return 2
    recall = f", recall@10 vs exact {meta['recall_at_10']:.4f}" if "recall_at_10" in meta else ""
    print(f"{meta['kind']} index of {meta['passages']} ({meta['embed_s']:.1f} s embedding, {meta['build_s']:.2f} s "
          f"building{recall}) written to {args.out}")
    return 0
