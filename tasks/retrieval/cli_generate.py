"""`megazoo task retrieval generate OUT_DIR [--seed N] [--corpus all|stdlib|gensim-lee] [--words N]`:
a psgs_w100.tsv collection from offline text, NQ-style questions in both DPR layouts, and ICT's
sentence-split .bin/.idx (generated data; see megazoo.tasks.retrieval.generate)."""

from __future__ import annotations

import argparse
import sys

PROG = "megazoo task retrieval generate"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out", help="the folder to write (replaced when it exists)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--corpus", default="all", choices=("all", "stdlib", "gensim-lee"),
                        help="all: the embedded corpus, plus gensim's Lee corpus when gensim is installed")
    parser.add_argument("--words", type=int, default=100, help="words per passage (DPR: 100)")
    parser.add_argument("--questions-per-passage", type=int, default=2)


def run(args) -> int:
    from megazoo.tasks.retrieval.errors import KNOWN
    from megazoo.tasks.retrieval.generate import generate_retrieval

    if args.words < 10 or args.questions_per_passage < 1:
        print(f"{PROG}: error: --words must be >= 10 and --questions-per-passage >= 1", file=sys.stderr)
        return 2
    try:
        counts = generate_retrieval(args.out, args.seed, args.corpus, args.words, args.questions_per_passage)
    except KNOWN as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    print(f"{args.out}: {counts['passages']} passages from {counts['documents']} documents; questions train "
          f"{counts['train']}, dev {counts['dev']}, test {counts['test']} (generated data)")
    return 0
