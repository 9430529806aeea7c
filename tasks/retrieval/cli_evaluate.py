"""`megazoo task retrieval evaluate --passages FILE.tsv --qas FILE --checkpoint CKPT [--index DIR]
[--pooling mean|cls] [--top-k 1,5,20,100] [--match string|regex] --out FILE.json`.

Writes FILE.json `{"task": "retrieval", "n", "metrics": {"top1", "top5", "top20", "top100"},
"predictions", ...}` (the fraction of questions with an answer in their top-k passages, DPR's
has_answer; printed as percent) and beside it FILE.predictions.jsonl, one line per question with
its ranked passage ids and their hits (eval/taskkit.write_evaluation; both are declared outputs, so
neither may be an input, and existing ones are replaced only with --overwrite). Without --index
the passages are embedded and searched exactly (faiss Flat). Under torchrun (one rank per machine,
--index a folder of `index --index-shards S`), each rank loads only its shards (s % world == rank)
and the ranks' top-k are merged (shard_search.py); rank 0 writes FILE.json.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from megazoo.core.fs import input_arg, output_arg
from megazoo.tasks.retrieval.index import DEVICES
from megazoo.tasks.retrieval.similarity import SIMILARITIES

PROG = "megazoo task retrieval evaluate"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from megazoo.eval.taskkit import evaluation_outputs
    from megazoo.tasks.retrieval.cli_index import add_lengths

    input_arg(parser, "--passages", kind="any", required=True, hf=True,
              help="a passage store (`megazoo task retrieval store`: any size, read by row), or a psgs_w100.tsv-"
                   "layout file (id<TAB>text<TAB>title, header) read into memory")
    input_arg(parser, "--qas", kind="file", required=True, hf=True,
              help="questions: a DPR *-test.csv (question<TAB>['answer', ...]) or nq-*.json")
    input_arg(parser, "--checkpoint", kind="any", required=True,
              help="the encoder: a retrieval run's checkpoints/, an import-hf folder or an HF BERT folder")
    output_arg(parser, "--out", kind="file", required=True, also=evaluation_outputs(),
               help="FILE.json; the ranked ids go to FILE.predictions.jsonl")
    input_arg(parser, "--index", kind="folder", default=None, help="an index folder of `megazoo task retrieval index`")
    parser.add_argument("--pooling", choices=("mean", "cls"), default=None,
                        help="default: the checkpoint's model.pooling (mean for a plain encoder)")
    parser.add_argument("--similarity", choices=SIMILARITIES, default=None,
                        help="cosine: L2-normalised vectors (default: the run's task.similarity, else dot)")
    parser.add_argument("--top-k", default="1,5,20,100", help="the k of top-k accuracy (default 1,5,20,100)")
    parser.add_argument("--match", choices=("string", "regex"), default="string",
                        help="string: DPR's tokenised match; regex: answers are patterns (CuratedTREC)")
    add_lengths(parser)
    parser.add_argument("--faiss-device", choices=DEVICES, default="auto",
                        help="where faiss searches: auto (the GPUs a GPU build of faiss sees, else the CPU), cpu, gpu")


def run(args) -> int:
    from megazoo.eval.taskkit import write_evaluation
    from megazoo.core.parallel.launch import under_launcher
    from megazoo.tasks.retrieval.evaluate import parse_ks
    from megazoo.tasks.retrieval.evaluate_stage import evaluate_retriever

    # errors go to megazoo's boundary: one line, exit 2 for what the user gave, 1 for a failing disk
    ks = parse_ks(args.top_k)
    settings = (args.passages, args.qas, args.checkpoint, args.index, args.pooling, ks, args.match, args.batch,
                args.question_length, args.passage_length)
    if under_launcher() and args.index is not None:  # each machine holds its shards of the index
        from megazoo.core.parallel.launch import setup_rank, teardown_rank

        rank, world = setup_rank()
        try:
            record, predictions = evaluate_retriever(*settings, similarity=args.similarity,
                                                     faiss_device=args.faiss_device, shard_ranks=True)
        finally:
            teardown_rank(world)
        if rank:  # rank 0 writes the one result
            return 0
    else:
        record, predictions = evaluate_retriever(*settings, similarity=args.similarity,
                                                 faiss_device=args.faiss_device)
    rest = {k: v for k, v in record.items() if k not in ("task", "n", "metrics")}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)  # --out may name a new folder
    out, pred = write_evaluation(args.out, "retrieval", record["n"], record["metrics"], predictions, **rest)
    print(f"{record['checkpoint']} on {args.qas} ({record['n']} questions): "
          + ", ".join(f"{k} {100 * v:.2f}%" for k, v in record["metrics"].items()))
    print(f"metrics written to {out}, ranked passages to {pred}")
    return 0
