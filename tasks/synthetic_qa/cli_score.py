"""`megazoo task synthetic_qa score --data DEV.json --predictions PRED.json --out FILE.json
[--na-probs NA.json --na-threshold T]`: a predictions file {id: answer} scored alone, as the
official v1.1/v2.0 scripts score it (score.py): the same keys as evaluate. Questions without a
prediction are reported on stderr and scored as wrong.
"""

from __future__ import annotations

import argparse
import sys

PROG = "megazoo task synthetic_qa score"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", required=True, help="a SQuAD v1.1/v2.0 JSON file")
    parser.add_argument("--predictions", required=True, help="one JSON object {question id: answer text}")
    parser.add_argument("--out", required=True, help="FILE.json: the metrics")
    parser.add_argument("--na-probs", default=None, help="v2.0: {question id: probability of no answer}")
    parser.add_argument("--na-threshold", type=float, default=1.0,
                        help="v2.0: predict no answer above this probability (default 1.0, as the official script)")


def run(args) -> int:
    from megazoo.tasks.synthetic_qa.cli_common import errors, fail, need_file
    from megazoo.tasks.synthetic_qa.evaluate_stage import write_result
    from megazoo.tasks.synthetic_qa.score import read_predictions, score
    from megazoo.tasks.synthetic_qa.squad import read_squad

    try:
        f = read_squad(need_file(args.data, "--data"))
        predictions = read_predictions(need_file(args.predictions, "--predictions"))
        na = None
        if args.na_probs:
            na = read_predictions_numbers(need_file(args.na_probs, "--na-probs"))
        r = score(f.questions, predictions, f.v2, na, args.na_threshold)
        write_result(args.out, r, version=f.version, data=str(args.data), predictions=str(args.predictions))
    except errors() as e:
        return fail(PROG, e)
    if r["missing"]:
        shown = ", ".join(r["missing"][:5]) + (", ..." if len(r["missing"]) > 5 else "")
        print(f"{PROG}: warning: {len(r['missing'])} of {r['n']} questions have no prediction in {args.predictions} "
              f"and score 0: {shown}", file=sys.stderr)
    print(", ".join(f"{k} {v:.2f}" for k, v in r["metrics"].items()) + f" (n={r['n']}); written to {args.out}")
    return 0


def read_predictions_numbers(path) -> dict:
    from megazoo.tasks.synthetic_qa.squad import SquadFormatError, _lined_json

    obj = _lined_json(path)
    if not isinstance(obj, dict) or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                            for v in obj.values()):
        raise SquadFormatError(path, 1, "a no-answer probability file is one JSON object {question id: number}")
    return {k: float(v) for k, v in obj.items()}
