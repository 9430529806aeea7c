"""`megazoo task race ensemble EVAL.json EVAL.json ... [--out FILE.json]`: average the softmaxes.

Each input is an `evaluate --out` result (FILE.json or its FILE.predictions.jsonl); --out writes the
same two files as evaluate: FILE.json (metrics) and FILE.predictions.jsonl. Both are declared
outputs, so `ensemble a.json b.json --out a.json` (or any --out whose predictions file is an input,
or the file a summary leads to) is refused before anything is read or written.
"""

from __future__ import annotations

import argparse

from megazoo.core.fs import input_arg, output_arg


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from megazoo.eval.taskkit import evaluation_outputs
    from megazoo.tasks.race.files import PREDICTIONS

    input_arg(parser, "predictions", nargs="+", kind="file",
              help="files written by `evaluate --out` (either of each pair)")
    output_arg(parser, "--out", default=None, also=evaluation_outputs(PREDICTIONS),
               help="FILE.json: the ensemble's metrics (its predictions go to FILE.predictions.jsonl)")


def run(args) -> int:
    from megazoo.tasks.race.evaluate import ensemble, format_accuracy, write_evaluation

    if args.out:
        check_sources(args.predictions, args.out)
    record = ensemble(args.predictions)
    written = write_evaluation(args.out, record) if args.out else None
    print(f"ensemble of {len(args.predictions)}: " + format_accuracy(record["accuracy"], record["counts"]))
    if written:
        print(f"metrics written to {written[0]}, predictions to {written[1]}")
    return 0


def check_sources(predictions, out) -> None:
    """A summary leads to the predictions file it names: refuse an --out that would replace that
    file too (the parser's declarations only know the paths as typed)."""
    from megazoo.core.fs import Declared, PathRole, check_paths
    from megazoo.eval.taskkit import evaluation_outputs
    from megazoo.tasks.race.evaluate import locate_predictions
    from megazoo.tasks.race.files import PREDICTIONS

    read = [Declared("PREDICTIONS", str(locate_predictions(p)[0]), PathRole("input", "file")) for p in predictions]
    wrote = [Declared("--out", str(out), PathRole("output", "file", also=evaluation_outputs(PREDICTIONS)))]
    check_paths(read, wrote, overwrite=True)  # existing outputs were checked (with --overwrite) by the dispatcher
