"""`megazoo task race data OUT_DIR [--seed N] [--articles N] [--words N] [--questions N]`: a RACE-format
set generated from the embedded corpus (generate.py; `generate` is the stage's older name).

The set is written into a scratch folder beside OUT_DIR and moved into place only when complete
(core.fs.atomic_folder); an existing non-empty OUT_DIR is refused unless --overwrite, and then
replaced only once the new set is complete.
"""

from __future__ import annotations

import argparse

from megazoo.core.argtypes import int_in
from megazoo.core.fs import output_arg

# bounds: the embedded corpus yields a few thousand articles; far beyond that generate_race refuses anyway
MAX_ARTICLES = 100_000
MAX_WORDS = 2_000
MAX_QUESTIONS = 50


def add_arguments(parser: argparse.ArgumentParser) -> None:
    output_arg(parser, "out", kind="folder", help="the folder to write RACE/{train,dev,test}/{middle,high}/*.txt into")
    parser.add_argument("--seed", type=int_in(0, 2**31 - 1), default=0)
    parser.add_argument("--articles", type=int_in(1, MAX_ARTICLES), default=400,
                        help=f"training articles (dev and test get 15%% each; 1-{MAX_ARTICLES})")
    parser.add_argument("--words", type=int_in(8, MAX_WORDS), default=80,
                        help=f"about how many words a high-school article has (8-{MAX_WORDS})")
    parser.add_argument("--questions", type=int_in(1, MAX_QUESTIONS), default=3,
                        help=f"questions per article (1-{MAX_QUESTIONS})")


def run(args) -> int:
    from megazoo.core.fs import atomic_folder
    from megazoo.tasks.race.generate import generate_race

    held_out = max(2, int(args.articles * 0.15))
    with atomic_folder(args.out, getattr(args, "overwrite", False)) as tmp:
        counts = generate_race(tmp, args.seed, {"train": args.articles, "dev": held_out, "test": held_out},
                               args.questions, args.words)
    for split, per_level in counts.items():
        print(f"{split}: " + ", ".join(f"{level} {n} questions" for level, n in per_level.items()))
    return 0
