"""`megazoo task synthetic_qa generate OUT_DIR [--seed N] [--bootstrap handwritten|templates|both]`: the
pipeline's offline data (generate.py)."""

from __future__ import annotations

import argparse

from megazoo.core.argtypes import positive_int

PROG = "megazoo task synthetic_qa generate"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out", help="the folder to write train.json, qg.jsonl, paragraphs.json, dev.json into")
    parser.add_argument("--seed", type=int, default=0, help="the paragraph shuffle")
    parser.add_argument("--bootstrap", choices=("handwritten", "templates", "both"), default="handwritten",
                        help="what the answer extractor, question generator and filter train on: the package's "
                             "hand-written questions (default), template questions, or both")
    parser.add_argument("--train-paragraphs", type=positive_int, default=400, help="paragraphs with template "
                                                                                    "questions (at most)")
    parser.add_argument("--text-paragraphs", type=positive_int, default=600, help="paragraphs for synthetic data")


def run(args) -> int:
    from megazoo.tasks.synthetic_qa.cli_common import errors, fail
    from megazoo.tasks.synthetic_qa.generate import generate

    try:
        counts = generate(args.out, args.seed, args.train_paragraphs, args.text_paragraphs, args.bootstrap)
    except errors() as e:
        return fail(PROG, e)
    print(f"wrote {args.out}: " + ", ".join(f"{k} {v}" for k, v in counts.items()) + " (generated data)")
    return 0
