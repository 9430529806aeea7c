"""`megazoo task synthetic_qa evaluate --data DEV.json --checkpoint CKPT --out FILE.json
[--predictions PRED.json]`: EM and F1 of a QA checkpoint on a SQuAD v1.1/v2.0 file, as the official
script scores them ({"n", "metrics": {"exact_match", "f1"}}; v2.0 adds HasAns_* and NoAns_*);
--predictions writes {id: answer}, the file the official script (and the score stage) reads. Both
--out and --predictions are declared outputs.
"""

from __future__ import annotations

import argparse

from megazoo.core.argtypes import float_in
from megazoo.core.fs import input_arg, output_arg
from megazoo.tasks.synthetic_qa.cli_common import BATCH, MAX_BATCH

PROG = "megazoo task synthetic_qa evaluate"
MAX_NULL = 1e4  # a difference of span logits: real ones are within a few tens


def add_arguments(parser: argparse.ArgumentParser) -> None:
    input_arg(parser, "--data", kind="file", required=True,
              help="a SQuAD v1.1/v2.0 JSON file (the package's dev set: `generate` copies it to OUT/dev.json)")
    # a run folder may hold its own evaluations (runs/qa/eval.json)
    input_arg(parser, "--checkpoint", inside_ok=True, required=True,
              help="a QA checkpoint (task synthetic_qa, kind qa)")
    output_arg(parser, "--out", required=True, help="FILE.json: the metrics")
    output_arg(parser, "--predictions", default=None, help="also write {id: answer} to this JSON file")
    parser.add_argument("--null-threshold", type=float_in(-MAX_NULL, MAX_NULL), default=None,
                        help="v2.0: predict no answer when the null score beats the best span by more "
                             "(default: the checkpoint's task setting)")
    parser.add_argument("--batch", type=BATCH, default=32, help=f"rows per forward pass (1-{MAX_BATCH})")


def run(args) -> int:
    from megazoo.core.fs import write_json_atomic
    from megazoo.tasks.synthetic_qa.evaluate_stage import evaluate_checkpoint, write_result

    r = evaluate_checkpoint(args.data, args.checkpoint, args.batch, args.null_threshold)
    if args.predictions:
        write_json_atomic(args.predictions, r["predictions"], ensure_ascii=False)
    write_result(args.out, r["result"], version=r["version"], data=str(args.data), checkpoint=r["checkpoint"])
    shown = ", ".join(f"{k} {v:.2f}" for k, v in r["result"]["metrics"].items())
    print(f"{r['checkpoint']} on {args.data} (n={r['result']['n']}): {shown}; written to {args.out}")
    return 0
