"""`megazoo task detox filter --generations FILE.jsonl --out-prefix PREFIX --tokenizer T [--fraction 0.5]
[--scorer profanity|hf:DIR|perspective] [--cache FILE]`

Scores the self-generations (cached by text hash), keeps the least toxic --fraction (Megatron keeps
50%), writes them to PREFIX.jsonl ({"text", "id", "score"}) and preprocesses that with an
end-of-document token after each sample into PREFIX.bin/.idx (`megazoo preprocess --append-eod`),
the training run's data.path. --tokenizer is the run's data.tokenizer (gpt2, hf:DIR, ...). With
--with-prompt a prompted sample is trained on as prompt + continuation.

PREFIX.jsonl/.bin/.idx are the declared outputs: none may be an input (the generations file named
PREFIX.jsonl is refused), existing ones are replaced only with --overwrite, and all three are moved
into place only once the preprocessing succeeded.
"""

from __future__ import annotations

import argparse

from megazoo.core.argtypes import probability
from megazoo.core.fs import input_arg, output_arg


def prefix_files(prefix) -> list:
    return [prefix.with_name(prefix.name + ext) for ext in (".jsonl", ".bin", ".idx")]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from megazoo.tasks.detox.stage import add_scorer

    input_arg(parser, "--generations", kind="file", required=True, help="the sample stage's JSONL (self-generations)")
    output_arg(parser, "--out-prefix", kind="prefix", also=prefix_files, required=True,
               help="writes PREFIX.jsonl, PREFIX.bin and PREFIX.idx")
    parser.add_argument("--tokenizer", required=True, help="the training run's data.tokenizer (gpt2, hf:DIR, ...)")
    parser.add_argument("--fraction", type=probability, default=0.5,
                        help="the least toxic share kept, in (0, 1] (default 0.5)")
    parser.add_argument("--with-prompt", action="store_true", help="prompted samples: train on prompt + "
                                                                    "continuation (the continuation is scored)")
    add_scorer(parser)


def run(args) -> int:
    from megazoo.tasks.detox.cache import ScoreCache
    from megazoo.tasks.detox.filtering import keep_least_toxic, write_training_data
    from megazoo.tasks.detox.scoring_stage import fill_scores
    from megazoo.tasks.detox.stage import check_derived, check_scorer_name, make_scorer, scorer_input
    from megazoo.tasks.detox.stream import read_records

    prefix = args.out_prefix
    cache = args.cache or f"{prefix}.cache.jsonl"
    check_derived([("--generations", args.generations), *scorer_input(args)],
                  [] if args.cache else [("the score cache", cache)],
                  [(f"--out-prefix ({ext})", f"{prefix}{ext}") for ext in (".jsonl", ".bin", ".idx")]
                  + [("--cache", args.cache)])
    check_scorer_name(args.scorer)
    records = read_records(args.generations)  # an empty file is refused there
    scores = fill_scores(records, make_scorer(args), ScoreCache(cache))
    kept = keep_least_toxic(records, scores, args.fraction)
    if not kept:
        raise ValueError(f"{args.generations}: every generation is empty; nothing to train on")
    stats = write_training_data(prefix, kept, args.tokenizer, args.with_prompt)
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    print(f"kept {len(kept)} of {len(records)} samples (mean toxicity {mean([r['score'] for r in kept]):.4f}, "
          f"all {mean([s for s in scores if s >= 0] or [0.0]):.4f}); {stats.tokens} tokens in "
          f"{prefix}.bin/.idx")
    return 0
