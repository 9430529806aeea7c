"""`megazoo task biomed evaluate --kind ner|re|qa --data FILE --checkpoint CKPT --out FILE.json`.

Writes FILE.json ({"task": "biomed", "kind", "n", "metrics"}: precision/recall/f1 for ner and re,
strict_accuracy/lenient_accuracy/mrr for qa) and the predictions beside it (evaluate.py).
"""

from __future__ import annotations

import argparse
import sys

from megazoo.core.argtypes import positive_int

PROG = "megazoo task biomed evaluate"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kind", required=True, choices=("ner", "re", "qa"), help="the task of the checkpoint")
    parser.add_argument("--data", required=True, help="a data file (test.tsv, test.json) or a release folder "
                                                      "(with --split)")
    parser.add_argument("--checkpoint", required=True, help="a biomed training checkpoint: a run's checkpoints/, "
                                                            "one iter_*, or checkpoints/best")
    parser.add_argument("--out", required=True, help="FILE.json: the metrics; the predictions go beside it")
    parser.add_argument("--split", default="test", help="the split when --data is a folder (default test)")
    parser.add_argument("--batch", type=positive_int, default=32, help="rows per forward pass")


def run(args) -> int:
    from megazoo.core.checkpoint import CheckpointError
    from megazoo.tasks.biomed.evaluate import write_evaluation
    from megazoo.tasks.biomed.evaluate_stage import evaluate_checkpoint

    try:
        r = evaluate_checkpoint(args.data, args.checkpoint, args.kind, args.split, args.batch)
        out, pred = write_evaluation(args.out, r["kind"], r["examples"], r["predictions"], r["metrics"],
                                     data=str(args.data), checkpoint=r["checkpoint"], step=r["step"])
    except (ValueError, FileNotFoundError, CheckpointError, OSError) as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    shown = ", ".join(f"{k} {v:.4f}" for k, v in r["metrics"].items())
    print(f"{r['checkpoint']} on {args.data} ({r['kind']}, n={len(r['examples'])}): {shown}")
    print(f"metrics written to {out}, predictions to {pred}")
    return 0
