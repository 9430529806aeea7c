"""`megazoo task detox generate FILE.jsonl [--corpus-prompts 60] [--seed 0] [--scorer profanity]`: a
RealToxicityPrompts-format prompts file built offline (generate.py; generated data, with toxicity
from the offline scorer, standing in for RealToxicityPrompts and Perspective)."""

from __future__ import annotations

import argparse

PROG = "megazoo task detox generate"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out", help="the prompts.jsonl to write")
    parser.add_argument("--corpus-prompts", type=int, default=60, help="prompts cut from the embedded corpus "
                                                                      "(besides the hand-written starts)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--scorer", default="profanity", help="what fills prompt.toxicity (profanity, hf:DIR, "
                                                              "perspective)")


def run(args) -> int:
    from megazoo.tasks.detox.generate import build_prompts
    from megazoo.tasks.detox.stage import ERRORS, check_scorer_name, fail
    from megazoo.tasks.detox.scorers import make_scorer

    try:
        if args.corpus_prompts < 0:
            raise ValueError(f"--corpus-prompts must be >= 0, got {args.corpus_prompts}")
        check_scorer_name(args.scorer)
        records = build_prompts(args.out, args.corpus_prompts, args.seed, make_scorer(args.scorer))
    except ERRORS as e:
        return fail(PROG, e)
    toxic = sum(1 for r in records if r["prompt"]["toxicity"] > 0.5)
    print(f"{len(records)} prompts ({toxic} toxic by {args.scorer}) written to {args.out}")
    return 0
