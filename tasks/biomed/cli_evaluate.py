"""`megazoo task biomed evaluate --kind ner|re|qa --data FILE --checkpoint CKPT --out FILE.json`.

Writes FILE.json ({"task": "biomed", "kind", "n", "metrics"}: precision/recall/f1 for ner and re,
strict_accuracy/lenient_accuracy/mrr for qa) and the predictions beside it (evaluate.py). The
predictions file is a declared output too (of every kind, as the parser runs before --kind is
read), so an --out whose predictions file is an input, or exists, is refused before anything runs.
Errors propagate to the one boundary (megazoo/cli.py): a user's mistake is one line, exit 2.
"""

from __future__ import annotations

import argparse

from megazoo.core.argtypes import int_in
from megazoo.core.fs import input_arg, output_arg

PROG = "megazoo task biomed evaluate"
MAX_BATCH = 4096  # rows (windows of up to 512 tokens) per forward pass


def _predictions_files(out):
    from megazoo.tasks.biomed.evaluate import every_predictions_path

    return every_predictions_path(out)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kind", required=True, choices=("ner", "re", "qa"), help="the task of the checkpoint")
    input_arg(parser, "--data", required=True, help="a data file (test.tsv, test.json) or a release folder "
                                                    "(with --split)")
    # a run folder may hold its own evaluations (runs/ner/eval.json)
    input_arg(parser, "--checkpoint", inside_ok=True, required=True,
              help="a biomed training checkpoint: a run's checkpoints/, one iter_*, or checkpoints/best")
    output_arg(parser, "--out", required=True, also=_predictions_files,
               help="FILE.json: the metrics; the predictions go beside it")
    parser.add_argument("--split", default="test", help="the split when --data is a folder (default test)")
    parser.add_argument("--batch", type=int_in(1, MAX_BATCH), default=32, help=f"rows per forward pass (1-{MAX_BATCH})")


def run(args) -> int:
    from megazoo.tasks.biomed.evaluate import write_evaluation
    from megazoo.tasks.biomed.evaluate_stage import evaluate_checkpoint

    r = evaluate_checkpoint(args.data, args.checkpoint, args.kind, args.split, args.batch)
    out, pred = write_evaluation(args.out, r["kind"], r["examples"], r["predictions"], r["metrics"],
                                 data=str(args.data), checkpoint=r["checkpoint"], step=r["step"])
    shown = ", ".join(f"{k} {v:.4f}" for k, v in r["metrics"].items())
    print(f"{r['checkpoint']} on {args.data} ({r['kind']}, n={len(r['examples'])}): {shown}")
    print(f"metrics written to {out}, predictions to {pred}")
    return 0
