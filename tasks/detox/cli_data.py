"""`megazoo task detox data FILE.jsonl [--corpus-prompts 60] [--seed 0] [--scorer profanity]`: a
RealToxicityPrompts-format prompts file built offline (generate.py; generated data, with toxicity
from the offline scorer, standing in for RealToxicityPrompts and Perspective). An existing non-empty
FILE.jsonl is replaced only with --overwrite, and only once the new file is complete."""

from __future__ import annotations

import argparse

from megazoo.core.argtypes import int_in
from megazoo.core.fs import input_arg, output_arg


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from megazoo.tasks.detox.stage import SEED

    output_arg(parser, "out", kind="file", help="the prompts.jsonl to write")
    parser.add_argument("--corpus-prompts", type=int_in(0, 100_000), default=60,
                        help="prompts cut from the embedded corpus (besides the hand-written starts)")
    parser.add_argument("--seed", type=SEED, default=0)
    input_arg(parser, "--scorer", default="profanity",
              help="what fills prompt.toxicity (profanity, hf:DIR, perspective)")


def run(args) -> int:
    from megazoo.tasks.detox.generate import build_prompts
    from megazoo.tasks.detox.scorers import make_scorer
    from megazoo.tasks.detox.stage import check_derived, check_scorer_name, scorer_input

    check_derived(scorer_input(args), [], [("OUT", args.out)])
    check_scorer_name(args.scorer)
    records = build_prompts(args.out, args.corpus_prompts, args.seed, make_scorer(args.scorer))
    toxic = sum(1 for r in records if r["prompt"]["toxicity"] > 0.5)
    print(f"{len(records)} prompts ({toxic} toxic by {args.scorer}) written to {args.out}")
    return 0
