"""`megazoo task bias generate OUT_DIR [--seed N]`: the hand-written SBIC-format set."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out", help="the folder to write SBIC.v2.{trn,dev,tst}.csv and SBIC.v2.agg.*.csv into")
    parser.add_argument("--seed", type=int, default=0, help="annotator votes and the split (0: the shipped copy)")


def run(args) -> int:
    from megazoo.tasks.bias.generate import generate_sbic

    out = Path(args.out)
    if out.exists() and any(out.iterdir()):
        print(f"megazoo task bias generate: error: {out} exists and is not empty; choose a new folder",
              file=sys.stderr)
        return 2
    for split, c in generate_sbic(out, args.seed).items():
        print(f"SBIC.v2.{split}.csv: {c['posts']} posts ({c['offensive']} offensive), {c['rows']} annotation rows")
    return 0
