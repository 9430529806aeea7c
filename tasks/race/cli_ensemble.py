"""`megazoo task race ensemble PRED.json PRED.json ... [--out FILE.json]`: average the softmaxes.

Each input is an `evaluate --out` result (FILE.json or its FILE.predictions.json); --out writes the
same two files as evaluate: FILE.json (metrics) and FILE.predictions.json.
"""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("predictions", nargs="+", help="files written by `evaluate --out` (either of each pair)")
    parser.add_argument("--out", default=None, help="FILE.json: the ensemble's metrics (its predictions go to "
                                                    "FILE.predictions.json)")


def run(args) -> int:
    from megazoo.tasks.race.evaluate import ensemble, format_accuracy, write_evaluation

    try:
        record = ensemble(args.predictions)
        written = write_evaluation(args.out, record) if args.out else None
    except (ValueError, FileNotFoundError, OSError) as e:
        print(f"megazoo task race ensemble: error: {e}", file=sys.stderr)
        return 1
    print(f"ensemble of {len(args.predictions)}: " + format_accuracy(record["accuracy"], record["counts"]))
    if written:
        print(f"metrics written to {written[0]}, predictions to {written[1]}")
    return 0
