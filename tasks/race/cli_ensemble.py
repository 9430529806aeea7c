"""`megazoo task race ensemble PRED.json PRED.json ... [--out FILE]`: average the softmaxes."""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("predictions", nargs="+", help="predictions files written by `evaluate --out`")
    parser.add_argument("--out", default=None, help="write the ensemble's predictions here")


def run(args) -> int:
    from megazoo.tasks.race.evaluate import ensemble, format_accuracy, write_json_atomic

    try:
        record = ensemble(args.predictions)
    except (ValueError, FileNotFoundError) as e:
        print(f"megazoo task race ensemble: error: {e}", file=sys.stderr)
        return 1
    print(f"ensemble of {len(args.predictions)}: " + format_accuracy(record["accuracy"], record["counts"]))
    if args.out:
        write_json_atomic(args.out, record)
        print(f"predictions written to {args.out}")
    return 0
