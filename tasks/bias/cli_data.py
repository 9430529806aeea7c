"""`megazoo task bias data OUT_DIR [--seed N]`: the hand-written SBIC-format set (generate.py)."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from megazoo.core.argtypes import int_in
    from megazoo.core.fs import output_arg
    from megazoo.tasks.bias.stage import MAX_SEED

    output_arg(parser, "out", kind="folder",
               help="the folder to write SBIC.v2.{trn,dev,tst}.csv and SBIC.v2.agg.*.csv into")
    parser.add_argument("--seed", type=int_in(0, MAX_SEED), default=0,
                        help="annotator votes and the split (0: the shipped copy)")


def run(args) -> int:
    from megazoo.core.fs import atomic_folder
    from megazoo.tasks.bias.generate import generate_sbic

    # the output policy has refused an existing non-empty folder without --overwrite; the set is written
    # into a scratch folder that replaces OUT_DIR only once complete
    with atomic_folder(args.out, overwrite=args.overwrite) as tmp:
        counts = generate_sbic(tmp, args.seed)
    for split, c in counts.items():
        print(f"SBIC.v2.{split}.csv: {c['posts']} posts ({c['offensive']} offensive), {c['rows']} annotation rows")
    return 0
