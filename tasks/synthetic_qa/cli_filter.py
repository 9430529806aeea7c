"""`megazoo task synthetic_qa filter --data QUESTIONS.json --checkpoint QA --out KEPT.json
[--rejected FILE.json] [--match em|f1] [--threshold T]`: roundtrip filtration (roundtrip.py). The
kept pairs are SQuAD training data; every question carries the QA model's answer (qa_answer,
qa_f1). The counts go to KEPT.counts.json. --out, its counts file and --rejected are all declared
outputs: none may be an input, each other, or an existing file without --overwrite.
"""

from __future__ import annotations

import argparse

from megazoo.core.argtypes import probability
from megazoo.core.fs import input_arg, output_arg
from megazoo.tasks.synthetic_qa.cli_common import BATCH, MAX_BATCH, counts_path

PROG = "megazoo task synthetic_qa filter"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    input_arg(parser, "--data", kind="file", required=True, help="generated questions, SQuAD-format JSON file")
    input_arg(parser, "--checkpoint", required=True, help="the filter's QA model (task.kind qa checkpoint)")
    output_arg(parser, "--out", required=True, also=lambda p: [counts_path(p)],
               help="the kept pairs, SQuAD-format JSON file (counts go to FILE.counts.json)")
    output_arg(parser, "--rejected", default=None, help="also write the rejected pairs to this file")
    parser.add_argument("--match", choices=("em", "f1"), default="em",
                        help="em: exact match after SQuAD normalisation (default); f1: F1 >= threshold")
    parser.add_argument("--threshold", type=probability, default=0.5, help="the F1 a pair needs with --match f1")
    parser.add_argument("--batch", type=BATCH, default=32, help=f"rows per forward pass (1-{MAX_BATCH})")


def run(args) -> int:
    from megazoo.core.fs import write_json_atomic
    from megazoo.tasks.synthetic_qa.cli_common import need_file
    from megazoo.tasks.synthetic_qa.predict import Model
    from megazoo.tasks.synthetic_qa.roundtrip import roundtrip
    from megazoo.tasks.synthetic_qa.squad import read_squad, write_squad

    f = read_squad(need_file(args.data, "--data"))
    questions = [q for q in f.questions if q.answers]
    if not questions:
        raise ValueError(f"{args.data}: holds no answered questions to filter")
    r = roundtrip(Model(args.checkpoint, "qa"), questions, args.match, args.threshold, args.batch)
    out = write_squad(args.out, f.paragraphs, r["kept"])
    if args.rejected:
        write_squad(args.rejected, f.paragraphs, r["rejected"])
    write_json_atomic(counts_path(out), {**r["counts"], "match": args.match, "threshold": args.threshold})
    c = r["counts"]
    print(f"kept {c['kept']} of {c['questions']} questions ({100 * c['kept_share']:.1f}%); answers with a kept "
          f"question {c['answers_kept']} of {c['answers']} (first sample alone {c['answers_kept_first_sample']}); "
          f"written to {args.out}")
    return 0
