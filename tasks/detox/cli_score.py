"""`megazoo task detox score --generations FILE.jsonl --prompts FILE.jsonl --out FILE.json [--scorer ...]
[--samples 25] [--non-strict]`

The evaluate stage's metrics from existing generations: lines in prompt order, --samples per prompt
(Megatron's layout: prompt i owns lines samples*i ..); generations that do not belong to the prompts
file (another count, an `id` out of row order, another prompt's text) are refused naming both files.
Lines with a `score` keep it (a number, or {"toxicity": x}); the others are scored (-1 when empty)
and cached by text hash. Writes the evaluate stage's record to FILE.json (scoring_stage.py: {"task",
"n", "metrics": {"emt", "emt_std", "tp", "emt_toxic", ...}, "counts", "predictions", "samples", ...})
and the scored generations beside it, FILE.predictions.jsonl.

With --scorer perspective, --qps (the project's quota), --concurrency and --retries set the client
(perspective.py); each score goes into the cache as it arrives, so a stopped run, rerun with the
same command, asks only for the texts not yet scored.
"""

from __future__ import annotations

import argparse

from megazoo.core.fs import input_arg, output_arg


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from megazoo.eval.taskkit import evaluation_outputs
    from megazoo.tasks.detox.cli_evaluate import SAMPLES
    from megazoo.tasks.detox.stage import add_scorer

    input_arg(parser, "--generations", kind="file", required=True,
              help="JSON lines with `text` (and `score` when known)")
    input_arg(parser, "--prompts", kind="file", required=True, hf=True,
              help="the RealToxicityPrompts-format prompts.jsonl")
    output_arg(parser, "--out", kind="file", also=evaluation_outputs(), required=True,
               help="FILE.json for the metrics (the scored generations FILE.predictions.jsonl and the default "
                    "score cache FILE.cache.jsonl beside it)")
    parser.add_argument("--samples", type=SAMPLES, default=25, help="generations per prompt (default 25)")
    parser.add_argument("--non-strict", action="store_true", help="TP counts toxicity >= 0.5 (Gehman et al.) "
                                                                  "instead of the code's > 0.5")
    add_scorer(parser)  # with --qps, --concurrency, --retries


def run(args) -> int:
    from megazoo.tasks.detox.cache import ScoreCache
    from megazoo.tasks.detox.data import load_prompts
    from megazoo.tasks.detox.evaluate import toxicity_metrics
    from megazoo.tasks.detox.scoring_stage import check_generations, fill_scores, given_score, report, write_toxicity
    from megazoo.tasks.detox.stage import check_derived, check_scorer_name, make_scorer, scorer_input, stem
    from megazoo.tasks.detox.stream import read_numbered_records

    cache = args.cache or f"{stem(args.out)}.cache.jsonl"
    check_derived([("--generations", args.generations), ("--prompts", args.prompts), *scorer_input(args)],
                  [] if args.cache else [("the score cache", cache)],
                  [("--out", args.out), ("--cache", args.cache)])
    check_scorer_name(args.scorer)
    prompts = load_prompts(args.prompts)
    numbered = read_numbered_records(args.generations)
    check_generations(numbered, prompts, args.samples, args.generations, args.prompts)
    records = [rec for _, rec in numbered]
    need = any(given_score(r) is None for r in records)
    scorer = None
    if need:  # perspective with all its client options (stage.make_scorer)
        scorer = make_scorer(args)
    scores = fill_scores(records, scorer, ScoreCache(cache))
    metrics = toxicity_metrics(scores, args.samples, [p.toxicity for p in prompts], strict=not args.non_strict)
    out, pred = write_toxicity(args.out, len(prompts), metrics, records, samples=args.samples, scorer=args.scorer,
                               strict=not args.non_strict, generations=str(args.generations),
                               prompts=str(args.prompts))
    print(report(metrics))
    print(f"metrics written to {out}, scored generations to {pred}")
    return 0
