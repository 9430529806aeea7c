"""`megazoo task detox evaluate --prompts FILE.jsonl --checkpoint CKPT --out FILE.json
[--scorer profanity|hf:DIR|perspective] [--samples 25] [--max-new-tokens 20] [--top-p 0.9] [--tp T --pp P]`

RealToxicityPrompts as Megatron's generate-*.sh and perspective_api.py: each prompt repeated --samples
times (25), 20 new tokens sampled with top-p 0.9; every generation scored (cached by text hash, -1 when
empty); Expected Maximum Toxicity (+- std) and Toxicity Probability for Full, Toxic and Nontoxic.
Writes FILE.json {"task", "n", "samples", "metrics": {"full"|"toxic"|"nontoxic": {"emt", "emt_std", "tp",
"n"}}, ...} and the generations beside it, FILE.generations.jsonl ({"id", "prompt", "text", "tokens",
"score"}, prompt i on lines samples*i ..); the generation resumes after a kill like selfgen's.
"""

from __future__ import annotations

import argparse

PROG = "megazoo task detox evaluate"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from megazoo.tasks.detox.stage import add_sampling, add_scorer

    parser.add_argument("--prompts", required=True, help="RealToxicityPrompts-format prompts.jsonl")
    parser.add_argument("--checkpoint", required=True, help="a megazoo checkpoint or Hugging Face folder (decoder)")
    parser.add_argument("--out", required=True, help="FILE.json for the metrics")
    parser.add_argument("--samples", type=int, default=25, help="generations per prompt (default 25)")
    parser.add_argument("--non-strict", action="store_true", help="TP counts toxicity >= 0.5 instead of > 0.5")
    add_scorer(parser)
    add_sampling(parser, max_new_tokens=20, batch=25)


def generations_path(out) -> str:
    from megazoo.tasks.detox.stage import stem

    return f"{stem(out)}.generations.jsonl"


def run(args) -> int:
    from megazoo.tasks.detox.data import load_prompts
    from megazoo.tasks.detox.model import check_checkpoint
    from megazoo.core.parallel.launch import run_layout
    from megazoo.tasks.detox.stage import ERRORS, check_scorer_name, fail, make_scorer, sampling
    from megazoo.tasks.detox.stream import resume_point

    try:  # every input checked before any model loads
        s = sampling(args)
        if args.samples < 1:
            raise ValueError(f"--samples must be at least 1, got {args.samples}")
        check_scorer_name(args.scorer)
        prompts = load_prompts(args.prompts)
        scorer = make_scorer(args)  # a missing Perspective key fails here, not after the generation
        check_checkpoint(args.checkpoint)
        rows = [p.text for p in prompts for _ in range(args.samples)]
        start = resume_point(generations_path(args.out), s, rows, args.checkpoint)
    except ERRORS as e:
        return fail(PROG, e)
    if start < len(rows):
        payload = {k: v for k, v in vars(args).items() if k != "func"}
        payload.update(start=start, rows=rows)
        code = run_layout(payload, generate_here, PROG)
        if code:
            return code
    return finish(args, prompts, scorer)


def generate_here(payload: dict, ctx) -> int:
    from megazoo.tasks.detox.model import load_decoder
    from megazoo.tasks.detox.stage import ERRORS, fail, sampling
    from megazoo.tasks.detox.stream import generate_rows

    args = argparse.Namespace(**payload)
    main = ctx is None or ctx.rank == 0
    try:
        model, tok = load_decoder(args.checkpoint, ctx)
    except ERRORS as e:
        return fail(PROG, e) if main else 2
    records = [{"prompt": p} for p in args.rows]
    generate_rows(model, tok, args.rows, records, sampling(args), generations_path(args.out) if main else None,
                  args.start, progress=main and not args.no_progress, label="generations")
    return 0


def finish(args, prompts, scorer) -> int:
    from megazoo.tasks.detox.cache import ScoreCache
    from megazoo.tasks.detox.evaluate import toxicity_metrics
    from megazoo.tasks.detox.scoring_stage import fill_scores, report, write_records
    from megazoo.tasks.detox.stage import ERRORS, fail, stem, write_json
    from megazoo.tasks.detox.stream import read_records

    gen_path = generations_path(args.out)
    try:
        records = read_records(gen_path)
        scores = fill_scores(records, scorer, ScoreCache(args.cache or f"{stem(args.out)}.cache.jsonl"))
    except ERRORS as e:
        return fail(PROG, e)
    write_records(gen_path, records)
    metrics = toxicity_metrics(scores, args.samples, [p.toxicity for p in prompts], strict=not args.non_strict)
    out = write_json(args.out, {"task": "detox", "n": len(prompts), "samples": args.samples, "scorer": args.scorer,
                                "strict": not args.non_strict, "metrics": metrics, "checkpoint": str(args.checkpoint),
                                "prompts": str(args.prompts), "max_new_tokens": args.max_new_tokens,
                                "top_p": args.top_p, "seed": args.seed, "layout": {"tp": args.tp, "pp": args.pp}})
    print(report(metrics))
    print(f"metrics written to {out}, generations to {gen_path}")
    return 0
