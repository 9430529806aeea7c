"""`megazoo task bias evaluate --data TEST.csv --support TRAIN.csv --checkpoint CKPT --out FILE.json
[--category offensive] [--shots 8] [--selection knn|random|fixed] [--dev DEV.csv] ...`

Writes FILE.json: {"task": "bias", "n", "category", "metrics": {"auc", "accuracy", "precision", "recall",
"f1" (at 0.5) [, "*_tuned" at the dev threshold]}, "ci": {"auc": [lo, hi]}, "threshold", ...} and the
per-post scores beside it, FILE.predictions.jsonl ({"post", "label", "score"} per line).
With --tp/--pp above 1 megazoo's model is split over tp x pp local ranks (an HF folder is converted
to it); every rank scores, rank 0 writes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

PROG = "megazoo task bias evaluate"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from megazoo.core.argtypes import int_in
    from megazoo.tasks.bias.selection import MAX_SHOTS
    from megazoo.tasks.bias.stage import add_common, stem

    add_common(parser, also=lambda out: [Path(f"{stem(out)}.predictions.jsonl")])
    parser.add_argument("--shots", type=int_in(0, MAX_SHOTS), default=8, help="exemplars per prompt (0: zero-shot)")


def run(args) -> int:
    from megazoo.core.parallel.launch import run_layout
    from megazoo.tasks.bias.stage import ERRORS, read_inputs

    try:  # every input checked once, before any model loads or any rank starts
        read_inputs(args, [args.shots])
    except ERRORS as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    return run_layout({k: v for k, v in vars(args).items() if k != "func"}, evaluate_here, PROG)


def evaluate_here(payload: dict, ctx) -> int:
    """The evaluation in this process (ctx None) or on one rank of a tp x pp layout; rank 0 writes."""
    from megazoo.tasks.bias.pipeline import evaluate_posts
    from megazoo.tasks.bias.stage import ERRORS, load_runtime, read_inputs, stem, write_json, write_predictions

    args = argparse.Namespace(**payload)
    main = ctx is None or ctx.rank == 0
    try:
        inputs = read_inputs(args, [args.shots])
        rt = load_runtime(args, inputs, args.selection == "knn" and args.shots > 0, ctx)
        result = evaluate_posts(rt["lm"], inputs["test"], rt["support"], inputs["template"], args.shots,
                                args.selection, args.seed, inputs["dev"], rt["cache"], args.batch, main,
                                args.bootstrap)
    except ERRORS as e:  # a checkpoint that is not a decoder, an embedder folder that does not load
        if main:
            print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    if not main:
        return 0
    predictions = result.pop("predictions")
    record = {"task": "bias", "n": result["n"], "category": inputs["category"], "metrics": result["metrics"],
              "ci": result["ci"], "threshold": result["threshold"], "shots": args.shots, "selection": args.selection,
              "support": len(inputs["support"]), "checkpoint": str(args.checkpoint), "data": str(args.data),
              "layout": {"tp": args.tp, "pp": args.pp}}
    out = write_json(args.out, record)
    pred = write_predictions(f"{stem(args.out)}.predictions.jsonl", predictions)
    m, ci = record["metrics"], record["ci"]["auc"]
    print(f"{inputs['category']}: AUC {m['auc']:.4f} [{ci[0]:.4f}, {ci[1]:.4f}]  accuracy {m['accuracy']:.4f}  "
          f"F1 {m['f1']:.4f}  ({record['n']} posts, {args.shots}-shot {args.selection})")
    print(f"metrics written to {out}, per-post scores to {pred}")
    return 0
