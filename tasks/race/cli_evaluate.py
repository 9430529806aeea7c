"""`megazoo task race evaluate --data DIR --checkpoint CKPT [--split test] [--out FILE]`."""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", required=True, help="a RACE folder (original layout, or HF parquet/JSON)")
    parser.add_argument("--checkpoint", required=True, help="a fine-tuned RACE checkpoint (or its run's checkpoints/)")
    parser.add_argument("--split", default="test", help="train, dev or test (default test); 'none' when --data "
                                                        "is already one split's folder")
    parser.add_argument("--out", default=None, help="write the predictions (softmaxes) as JSON here")
    parser.add_argument("--batch", type=int, default=8, help="questions per forward pass")
    parser.add_argument("--max-seq-length", type=int, default=None, help="default: the one it was trained with")


def run(args) -> int:
    from megazoo.core.checkpoint import CheckpointError
    from megazoo.tasks.race.run import evaluate_checkpoint

    split = None if args.split in ("none", "") else args.split
    try:
        evaluate_checkpoint(args.data, args.checkpoint, split, args.out, args.batch, args.max_seq_length)
    except (ValueError, FileNotFoundError, CheckpointError) as e:
        print(f"megazoo task race evaluate: error: {e}", file=sys.stderr)
        return 1
    if args.out:
        print(f"predictions written to {args.out}")
    return 0
