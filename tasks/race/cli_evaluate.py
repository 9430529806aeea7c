"""`megazoo task race evaluate --data DIR --checkpoint CKPT --out FILE.json [--split test] [--batch N]`.

Writes FILE.json (task, n, metrics: accuracy, accuracy_middle, accuracy_high, ...) and the
predictions (softmaxes) beside it as FILE.predictions.json, the input of `ensemble`.
"""

from __future__ import annotations

import argparse
import sys

from megazoo.core.argtypes import positive_int

PROG = "megazoo task race evaluate"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", required=True, help="a RACE folder (original layout, or HF parquet/JSON)")
    parser.add_argument("--checkpoint", required=True,
                        help="a RACE training checkpoint: a run's checkpoints/, one iter_*, or checkpoints/best")
    parser.add_argument("--out", required=True, help="FILE.json: the metrics; the predictions go to "
                                                     "FILE.predictions.json beside it")
    parser.add_argument("--split", default="test", help="train, dev or test (default test); 'none' when --data "
                                                        "is already one split's folder")
    parser.add_argument("--batch", type=positive_int, default=8, help="questions per forward pass")


def run(args) -> int:
    from megazoo.core.checkpoint import CheckpointError
    from megazoo.tasks.race.evaluate import format_accuracy, write_evaluation
    from megazoo.tasks.race.evaluate_stage import evaluate_checkpoint

    split = None if args.split in ("none", "") else args.split
    try:
        record = evaluate_checkpoint(args.data, args.checkpoint, split, args.batch)
        out, pred = write_evaluation(args.out, record)
    except (ValueError, FileNotFoundError, CheckpointError, OSError) as e:
        # ValueError covers ConfigError, RaceFormatError and a checkpoint of another task
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1
    print(f"{record['checkpoint']} on {split or args.data}: " + format_accuracy(record["accuracy"], record["counts"]))
    print(f"metrics written to {out}, predictions to {pred}")
    return 0
