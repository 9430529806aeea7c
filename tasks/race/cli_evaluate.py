"""`megazoo task race evaluate --data DIR --checkpoint CKPT --out FILE.json [--split test] [--batch N]`.

Writes FILE.json (task, n, metrics: accuracy, accuracy_middle, accuracy_high, ...) and the
predictions (softmaxes) beside it as FILE.predictions.jsonl, the input of `ensemble` (the
task-evaluation kit's naming rule). Both outputs are declared, so an existing
FILE.predictions.jsonl (or one given as --data) is refused like FILE.json.
Errors propagate to the one boundary (megazoo/cli.py): a user's mistake is one line, exit 2.
"""

from __future__ import annotations

import argparse

from megazoo.core.argtypes import int_in
from megazoo.core.fs import input_arg, output_arg

PROG = "megazoo task race evaluate"
MAX_BATCH = 4096  # questions per forward pass (x4 option rows of up to 512 tokens each)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from megazoo.eval.taskkit import evaluation_outputs
    from megazoo.tasks.race.files import PREDICTIONS

    input_arg(parser, "--data", required=True, hf=True, help="a RACE folder (original layout, or HF parquet/JSON)")
    # a run folder may hold its own evaluations (runs/race/eval.json)
    input_arg(parser, "--checkpoint", inside_ok=True, required=True,
              help="a RACE training checkpoint: a run's checkpoints/, one iter_*, or checkpoints/best")
    output_arg(parser, "--out", required=True, also=evaluation_outputs(PREDICTIONS),
               help="FILE.json: the metrics; the predictions go to FILE.predictions.jsonl beside it")
    parser.add_argument("--split", default="test", help="train, dev or test (default test); 'none' when --data "
                                                        "is already one split's folder")
    parser.add_argument("--batch", type=int_in(1, MAX_BATCH), default=8,
                        help=f"questions per forward pass (1-{MAX_BATCH})")


def run(args) -> int:
    from megazoo.tasks.race.evaluate import format_accuracy, write_evaluation
    from megazoo.tasks.race.evaluate_stage import evaluate_checkpoint

    split = None if args.split in ("none", "") else args.split
    record = evaluate_checkpoint(args.data, args.checkpoint, split, args.batch)
    out, pred = write_evaluation(args.out, record)
    print(f"{record['checkpoint']} on {split or args.data}: " + format_accuracy(record["accuracy"], record["counts"]))
    print(f"metrics written to {out}, predictions to {pred}")
    return 0
