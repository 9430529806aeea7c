"""`megazoo task retrieval index --passages FILE.tsv --checkpoint CKPT --out DIR [--index flat|ivf|hnsw]`.

Embeds every passage (title, text) with the checkpoint's encoder (a tqdm bar on stderr; `--nproc N`
local ranks embed a strided share each), builds the
faiss index and writes DIR/index.faiss, DIR/ids.npy (row -> passage id) and DIR/meta.json (with
the recall@10 an approximate index keeps against exact search).
"""

from __future__ import annotations

import argparse
import sys

from megazoo.tasks.retrieval.index import DEVICES
from megazoo.tasks.retrieval.similarity import SIMILARITIES

PROG = "megazoo task retrieval index"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--passages", required=True, help="a psgs_w100.tsv-layout file (id<TAB>text<TAB>title, header)")
    parser.add_argument("--checkpoint", required=True, help="the encoder: a retrieval run's checkpoints/, an "
                                                            "import-hf folder or an HF BERT folder")
    parser.add_argument("--out", required=True, help="the index folder to write")
    parser.add_argument("--index", default="flat", choices=("flat", "ivf", "hnsw"),
                        help="flat: exact; ivf / hnsw: approximate (recall reported)")
    parser.add_argument("--pooling", choices=("mean", "cls"), default=None,
                        help="default: the checkpoint's model.pooling (mean for a plain encoder)")
    parser.add_argument("--similarity", choices=SIMILARITIES, default=None,
                        help="cosine: L2-normalised vectors (default: the run's task.similarity, else dot)")
    parser.add_argument("--passage-length", type=int, default=None,
                        help="tokens per passage, title + text (default: the run's task.passage_length, else 256)")
    parser.add_argument("--batch", type=int, default=32, help="passages per forward pass")
    parser.add_argument("--nproc", type=int, default=1, help="local ranks that embed the passages (a share each)")
    parser.add_argument("--nlist", type=int, default=None, help="ivf: cells (default 4 sqrt(N))")
    parser.add_argument("--nprobe", type=int, default=8, help="ivf: cells searched per query")
    parser.add_argument("--hnsw-m", type=int, default=32, help="hnsw: links per node")
    parser.add_argument("--ef-search", type=int, default=128, help="hnsw: search depth")
    parser.add_argument("--faiss-device", choices=DEVICES, default="auto",
                        help="where faiss trains and fills the index: auto (the GPUs a GPU build of faiss sees, "
                             "else the CPU), cpu, gpu; the saved index is a CPU index")


def run(args) -> int:
    from megazoo.tasks.retrieval.errors import KNOWN
    from megazoo.core.parallel.launch import RankFailure
    from megazoo.tasks.retrieval.evaluate_stage import index_passages

    if args.batch < 1 or (args.passage_length or 4) < 4 or args.nproc < 1:
        print(f"{PROG}: error: --batch and --nproc must be >= 1 and --passage-length >= 4", file=sys.stderr)
        return 2
    try:
        meta = index_passages(args.passages, args.checkpoint, args.out, args.index, args.pooling, args.batch,
                              args.passage_length, nlist=args.nlist, nprobe=args.nprobe, m=args.hnsw_m,
                              ef_search=args.ef_search, nproc=args.nproc,
                              similarity=args.similarity, device=args.faiss_device)
    except KNOWN + (RankFailure,) as e:
        lines = str(e).strip().splitlines() or [""]  # a rank's failure: its traceback's last line says it
        print(f"{PROG}: error: {lines[-1] if isinstance(e, RankFailure) else lines[0]}", file=sys.stderr)
        return 2
    recall = f", recall@10 vs exact {meta['recall_at_10']:.4f}" if "recall_at_10" in meta else ""
    print(f"{meta['kind']} index of {meta['passages']} ({meta['embed_s']:.1f} s embedding, {meta['build_s']:.2f} s "
          f"building{recall}) written to {args.out}")
    return 0
