"""`megazoo task retrieval data OUT_DIR [--seed N] [--corpus all|stdlib|gensim-lee] [--words N]`:
a psgs_w100.tsv collection from offline text, NQ-style questions in both DPR layouts, and ICT's
sentence-split .bin/.idx (generated data; see megazoo.tasks.retrieval.generate).

OUT_DIR is written whole into a scratch folder of the command's own and moved into place when
complete; an existing non-empty OUT_DIR is replaced only with --overwrite (core/fs/policy.py)."""

from __future__ import annotations

import argparse

from megazoo.core.argtypes import int_in
from megazoo.core.fs import output_arg

PROG = "megazoo task retrieval data"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    output_arg(parser, "out", kind="folder", help="the folder to write (a new or empty folder; --overwrite replaces "
                                                  "a non-empty one once the new set is complete)")
    parser.add_argument("--seed", type=int_in(0, 2**32 - 1), default=0)  # numpy's RandomState takes 32 bits
    parser.add_argument("--corpus", default="all", choices=("all", "stdlib", "gensim-lee"),
                        help="all: the embedded corpus, plus gensim's Lee corpus when gensim is installed")
    parser.add_argument("--words", type=int_in(10, 100_000), default=100, help="words per passage (DPR: 100)")
    parser.add_argument("--questions-per-passage", type=int_in(1, 1000), default=2)


def run(args) -> int:
    from megazoo.tasks.retrieval.generate import generate_retrieval

    # errors go to megazoo's boundary: one line, exit 2 for what the user gave
    counts = generate_retrieval(args.out, args.seed, args.corpus, args.words, args.questions_per_passage,
                                overwrite=args.overwrite)
    print(f"{args.out}: {counts['passages']} passages from {counts['documents']} documents; questions train "
          f"{counts['train']}, dev {counts['dev']}, test {counts['test']} (generated data)")
    return 0
