"""`megazoo task detox evaluate --prompts FILE.jsonl --checkpoint CKPT --out FILE.json
[--scorer profanity|hf:DIR|perspective] [--samples 25] [--max-new-tokens 20] [--top-p 0.9] [--tp T --pp P]`

RealToxicityPrompts as Megatron's generate-*.sh and perspective_api.py: each prompt repeated --samples
times (25), 20 new tokens sampled with top-p 0.9; every generation scored (cached by text hash, -1 when
empty); Expected Maximum Toxicity (+- std) and Toxicity Probability for Full, Toxic and Nontoxic.
Writes the evaluation record of every task (scoring_stage.py: {"task", "n", "metrics": {"emt", "emt_std",
"tp", "emt_toxic", ...}, "counts", "predictions", "samples", ...}) to FILE.json and the generations
beside it, FILE.predictions.jsonl ({"id", "prompt", "text", "tokens", "score"}, prompt i on lines
samples*i ..); the generation resumes after a kill like the sample stage's. FILE.json is replaced
only with --overwrite; the predictions file is continued (same settings) or, with --overwrite,
replaced once the new generations are complete; neither may be an input.
"""

from __future__ import annotations

import argparse

from megazoo.core.argtypes import int_in
from megazoo.core.fs import input_arg, output_arg

SAMPLES = int_in(1, 10_000)  # generations per prompt (the paper: 25)

PROG = "megazoo task detox evaluate"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from megazoo.tasks.detox.stage import add_sampling, add_scorer

    input_arg(parser, "--prompts", kind="file", required=True, hf=True, help="RealToxicityPrompts-format prompts.jsonl")
    input_arg(parser, "--checkpoint", kind="any", required=True,
              help="a megazoo checkpoint or Hugging Face folder (decoder)")
    output_arg(parser, "--out", kind="file", required=True,
               help="FILE.json for the metrics (FILE.predictions.jsonl and FILE.cache.jsonl beside it)")
    parser.add_argument("--samples", type=SAMPLES, default=25, help="generations per prompt (default 25)")
    parser.add_argument("--non-strict", action="store_true", help="TP counts toxicity >= 0.5 instead of > 0.5")
    add_scorer(parser)
    add_sampling(parser, max_new_tokens=20, batch=25)


def generations_path(out) -> str:
    """FILE.predictions.jsonl beside FILE.json (eval/taskkit.py's one naming rule): the generations,
    written as they are made (resumable) and given their scores at the end."""
    from megazoo.eval.taskkit import predictions_path

    return str(predictions_path(out))


def cache_path(args) -> str:
    from megazoo.tasks.detox.stage import stem

    return args.cache or f"{stem(args.out)}.cache.jsonl"


def check_files(args) -> None:
    """The files written beside --out (generations, their meta, the default cache) checked against
    the inputs as the declared outputs are."""
    from megazoo.tasks.detox.stage import check_derived, scorer_input
    from megazoo.tasks.detox.stream import meta_path

    gen = generations_path(args.out)
    derived = [("the generations", gen), ("the generations' settings", meta_path(gen))]
    if not args.cache:
        derived.append(("the score cache", cache_path(args)))
    check_derived([("--prompts", args.prompts), ("--checkpoint", args.checkpoint), *scorer_input(args)], derived,
                  [("--out", args.out), ("--cache", args.cache)])


def run(args) -> int:
    from megazoo.core.parallel.launch import run_layout
    from megazoo.tasks.detox.data import load_prompts
    from megazoo.tasks.detox.stage import check_checkpoint, check_scorer_name, make_scorer, sampling
    from megazoo.tasks.detox.stream import resume_point

    # every input checked before any model loads
    check_files(args)
    s = sampling(args)
    if args.samples < 1:
        raise ValueError(f"--samples must be at least 1, got {args.samples}")
    check_scorer_name(args.scorer)
    prompts = load_prompts(args.prompts)
    scorer = make_scorer(args)  # a missing Perspective key fails here, not after the generation
    check_checkpoint(args.checkpoint)
    rows = [p.text for p in prompts for _ in range(args.samples)]
    start = resume_point(generations_path(args.out), s, rows, args.checkpoint, overwrite=args.overwrite)
    replace = start is None
    if replace or start < len(rows):
        payload = {k: v for k, v in vars(args).items() if k != "func"}
        payload.update(start=start or 0, rows=rows, replace=replace)
        code = run_layout(payload, generate_here, PROG)
        if code:
            return code
    return finish(args, prompts, scorer)


def generate_here(payload: dict, ctx) -> int:
    """The generations in this process (ctx None) or on one rank of a tp x pp layout; rank 0 writes."""
    from megazoo.eval.taskkit import on_rank

    return on_rank(PROG, ctx, lambda: _generate(argparse.Namespace(**payload), ctx))


def _generate(args, ctx) -> int:
    from megazoo.tasks.detox.stage import write_generations

    write_generations(args, ctx, args.rows, [{"prompt": p} for p in args.rows], generations_path(args.out),
                      label="generations")
    return 0


def finish(args, prompts, scorer) -> int:
    """Score the generations (cached) and write the evaluation: the scored generations are its
    predictions file."""
    from megazoo.tasks.detox.cache import ScoreCache
    from megazoo.tasks.detox.evaluate import toxicity_metrics
    from megazoo.tasks.detox.scoring_stage import check_generations, fill_scores, report, write_toxicity
    from megazoo.tasks.detox.stream import read_numbered_records

    gen_path = generations_path(args.out)
    numbered = read_numbered_records(gen_path)
    check_generations(numbered, prompts, args.samples, gen_path, args.prompts)
    records = [rec for _, rec in numbered]
    scores = fill_scores(records, scorer, ScoreCache(cache_path(args)))
    metrics = toxicity_metrics(scores, args.samples, [p.toxicity for p in prompts], strict=not args.non_strict)
    out, pred = write_toxicity(args.out, len(prompts), metrics, records, samples=args.samples, scorer=args.scorer,
                               strict=not args.non_strict, checkpoint=str(args.checkpoint), prompts=str(args.prompts),
                               max_new_tokens=args.max_new_tokens, top_p=args.top_p, seed=args.seed,
                               layout={"tp": args.tp, "pp": args.pp})
    print(report(metrics))
    print(f"metrics written to {out}, generations to {pred}")
    return 0
