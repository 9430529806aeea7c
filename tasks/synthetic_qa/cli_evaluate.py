"""`megazoo task synthetic_qa evaluate --data DEV.json --checkpoint CKPT --out FILE.json`: EM and F1
of a QA checkpoint on a SQuAD v1.1/v2.0 file, as the official script scores them ({"task", "n",
"metrics": {"exact_match", "f1"}, ...}, fractions; v2.0 adds has_ans_* and no_ans_*). The
predictions {id: answer}, the file the official script (and the score stage) reads, go to
FILE.predictions.json beside it, a declared output too.
"""

from __future__ import annotations

import argparse

from megazoo.core.argtypes import float_in
from megazoo.core.fs import input_arg, output_arg
from megazoo.tasks.synthetic_qa.cli_common import BATCH, MAX_BATCH

PROG = "megazoo task synthetic_qa evaluate"
MAX_NULL = 1e4  # a difference of span logits: real ones are within a few tens


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from megazoo.eval.taskkit import evaluation_outputs
    from megazoo.tasks.synthetic_qa.evaluate_stage import PREDICTIONS

    input_arg(parser, "--data", kind="file", required=True, hf=True,
              help="a SQuAD v1.1/v2.0 JSON file (the package's dev set: `data` copies it to OUT/dev.json)")
    # a run folder may hold its own evaluations (runs/qa/eval.json)
    input_arg(parser, "--checkpoint", inside_ok=True, required=True,
              help="a QA checkpoint (task synthetic_qa, kind qa)")
    output_arg(parser, "--out", required=True, also=evaluation_outputs(PREDICTIONS),
               help="FILE.json: the metrics (the predictions go to FILE.predictions.json)")
    parser.add_argument("--null-threshold", type=float_in(-MAX_NULL, MAX_NULL), default=None,
                        help="v2.0: predict no answer when the null score beats the best span by more "
                             "(default: the checkpoint's task setting)")
    parser.add_argument("--batch", type=BATCH, default=32, help=f"rows per forward pass (1-{MAX_BATCH})")


def run(args) -> int:
    from megazoo.eval.taskkit import predictions_path
    from megazoo.tasks.synthetic_qa.evaluate_stage import PREDICTIONS, evaluate_checkpoint, shown, write_evaluation

    r = evaluate_checkpoint(args.data, args.checkpoint, args.batch, args.null_threshold)
    write_evaluation(args.out, r, args.data)
    print(f"{r['checkpoint']} on {args.data} (n={r['result']['n']}): {shown(r['result']['metrics'])}; written to "
          f"{args.out}, predictions to {predictions_path(args.out, PREDICTIONS)}")
    return 0
