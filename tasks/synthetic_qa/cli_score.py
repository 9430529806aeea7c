"""`megazoo task synthetic_qa score --data DEV.json --predictions PRED.json --out FILE.json
[--na-probs NA.json --na-threshold T]`: a predictions file {id: answer} scored alone, as the
official v1.1/v2.0 scripts score it (score.py): evaluate's FILE.json, its "predictions" naming the
scored file (no predictions file is written: they are the input). The predictions must be
for exactly the data's questions: ids the data lacks, or questions without a prediction, are
refused naming both files (a file of another split or an incomplete run would score silently wrong).
"""

from __future__ import annotations

import argparse

from megazoo.core.argtypes import float_in
from megazoo.core.fs import input_arg, output_arg

PROG = "megazoo task synthetic_qa score"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    input_arg(parser, "--data", kind="file", required=True, hf=True, help="a SQuAD v1.1/v2.0 JSON file")
    input_arg(parser, "--predictions", kind="file", required=True,
              help="a JSON file: one object {question id: answer text}")
    output_arg(parser, "--out", required=True, help="FILE.json: the metrics")
    input_arg(parser, "--na-probs", kind="file", default=None,
              help="v2.0: a JSON file {question id: probability of no answer}")
    parser.add_argument("--na-threshold", type=float_in(0.0, 1.0), default=1.0,
                        help="v2.0: predict no answer above this probability (0-1; default 1.0, as the official "
                             "script)")


def run(args) -> int:
    from megazoo.core.fs import write_json_atomic
    from megazoo.tasks.synthetic_qa.cli_common import need_file
    from megazoo.tasks.synthetic_qa.evaluate_stage import result_record, shown
    from megazoo.tasks.synthetic_qa.score import check_ids, read_predictions, score
    from megazoo.tasks.synthetic_qa.squad import read_squad

    f = read_squad(need_file(args.data, "--data"))
    predictions = read_predictions(need_file(args.predictions, "--predictions"))
    check_ids(f.questions, predictions, args.data, args.predictions)
    na = None
    if args.na_probs:
        if not f.v2:
            raise ValueError(f"--na-probs applies to SQuAD v2.0 data; {args.data} is v{f.version.lstrip('v')} "
                             f"(no unanswerable questions): leave --na-probs out")
        na = read_predictions_numbers(need_file(args.na_probs, "--na-probs"))
        check_ids(f.questions, na, args.data, args.na_probs, "no-answer probabilities")
    r = score(f.questions, predictions, f.v2, na, args.na_threshold)
    write_json_atomic(args.out, result_record(r, version=f.version, data=str(args.data),
                                              predictions=str(args.predictions)), indent=1)
    print(f"{shown(r['metrics'])} (n={r['n']}); written to {args.out}")
    return 0


def read_predictions_numbers(path) -> dict:
    """{question id: probability}: each a finite number in [0, 1]."""
    import math

    from megazoo.tasks.synthetic_qa.squad import SquadFormatError, _lined_json

    obj = _lined_json(path)
    if not isinstance(obj, dict) or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                            for v in obj.values()):
        raise SquadFormatError(path, 1, "a no-answer probability file is one JSON object {question id: number}")
    for k, v in obj.items():
        if not (math.isfinite(v) and 0 <= v <= 1):
            raise SquadFormatError(path, 1, f"the no-answer probability of {k!r} is {v}; give a number in [0, 1]")
    return {k: float(v) for k, v in obj.items()}
