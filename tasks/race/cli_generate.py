"""`megazoo task race generate OUT_DIR [--seed N] [--articles N] [--words N]`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from megazoo.core.argtypes import positive_int


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out", help="the folder to write RACE/{train,dev,test}/{middle,high}/*.txt into")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--articles", type=positive_int, default=400, help="training articles (dev and test get 15%% each)")
    parser.add_argument("--words", type=positive_int, default=80, help="about how many words a high-school article has")
    parser.add_argument("--questions", type=positive_int, default=3, help="questions per article")


def run(args) -> int:
    from megazoo.tasks.race.generate import generate_race

    out = Path(args.out)
    if out.exists() and any(out.iterdir()):
        print(f"megazoo task race generate: error: {out} exists and is not empty; choose a new folder",
              file=sys.stderr)
        return 1
    held_out = max(2, int(args.articles * 0.15))
    counts = generate_race(out, args.seed, {"train": args.articles, "dev": held_out, "test": held_out},
                           args.questions, args.words)
    for split, per_level in counts.items():
        print(f"{split}: " + ", ".join(f"{level} {n} questions" for level, n in per_level.items()))
    return 0
