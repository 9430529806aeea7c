"""`megazoo task detox filter --generations FILE.jsonl --out-prefix PREFIX --tokenizer T [--fraction 0.5]
[--scorer profanity|hf:DIR|perspective] [--cache FILE]`

Scores the self-generations (cached by text hash), keeps the least toxic --fraction (Megatron keeps
50%), writes them to PREFIX.jsonl ({"text", "id", "score"}) and preprocesses that with an
end-of-document token after each sample into PREFIX.bin/.idx (`megazoo preprocess --append-eod`),
the training run's data.path. --tokenizer is the run's data.tokenizer (gpt2, hf:DIR, ...). With
--with-prompt a prompted sample is trained on as prompt + continuation.
"""

from __future__ import annotations

import argparse

PROG = "megazoo task detox filter"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from megazoo.tasks.detox.stage import add_scorer

    parser.add_argument("--generations", required=True, help="the selfgen stage's JSONL")
    parser.add_argument("--out-prefix", required=True, help="writes PREFIX.jsonl, PREFIX.bin and PREFIX.idx")
    parser.add_argument("--tokenizer", required=True, help="the training run's data.tokenizer (gpt2, hf:DIR, ...)")
    parser.add_argument("--fraction", type=float, default=0.5, help="the least toxic share kept (default 0.5)")
    parser.add_argument("--with-prompt", action="store_true", help="prompted samples: train on prompt + "
                                                                    "continuation (the continuation is scored)")
    add_scorer(parser)


def run(args) -> int:
    from megazoo.core.data.errors import DataError
    from megazoo.tasks.detox.cache import ScoreCache
    from megazoo.tasks.detox.filtering import keep_least_toxic, to_indexed, write_texts
    from megazoo.tasks.detox.scoring_stage import fill_scores
    from megazoo.tasks.detox.stage import ERRORS, check_scorer_name, fail, make_scorer
    from megazoo.tasks.detox.stream import read_records

    prefix = args.out_prefix
    try:
        if not 0 < args.fraction <= 1:
            raise ValueError(f"--fraction must be in (0, 1], got {args.fraction}")
        check_scorer_name(args.scorer)
        records = read_records(args.generations)  # an empty file is refused there
        scores = fill_scores(records, make_scorer(args), ScoreCache(args.cache or f"{prefix}.cache.jsonl"))
        kept = keep_least_toxic(records, scores, args.fraction)
        if not kept:
            raise ValueError(f"{args.generations}: every generation is empty; nothing to train on")
        jsonl = write_texts(f"{prefix}.jsonl", kept, args.with_prompt)
        stats = to_indexed(jsonl, prefix, args.tokenizer)
    except (*ERRORS, DataError) as e:
        return fail(PROG, e)
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    print(f"kept {len(kept)} of {len(records)} samples (mean toxicity {mean([r['score'] for r in kept]):.4f}, "
          f"all {mean([s for s in scores if s >= 0] or [0.0]):.4f}); {stats.tokens} tokens in "
          f"{prefix}.bin/.idx")
    return 0
