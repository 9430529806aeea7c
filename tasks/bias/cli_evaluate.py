"""`megazoo task bias evaluate --data TEST.csv --support TRAIN.csv --checkpoint CKPT --out FILE.json
[--category offensive] [--shots 8] [--selection knn|random|fixed] [--dev DEV.csv] ...`

Writes, through the task-evaluation kit (eval/taskkit.write_evaluation), FILE.json: {"task": "bias",
"n", "metrics": {"auc", "accuracy", "precision", "recall", "f1" (at 0.5) [, "*_tuned" at the dev
threshold]}, "predictions", "category", "ci": {"auc": [lo, hi]}, "threshold", ...} and the per-post
scores beside it, FILE.predictions.jsonl ({"post", "label", "score"} per line).
With --tp/--pp above 1 megazoo's model is split over tp x pp local ranks (an HF folder is converted
to it); every rank scores, rank 0 writes.

The paper's fine-tuned baseline: with --checkpoint a `megazoo task bias train` run (its
checkpoints/, one iter_*), the classifier's p(positive) replaces the prompts' p(Yes) and the same
record is written (the same metrics, bootstrap, dev threshold and post ids, "method":
"fine-tuned"), to sit beside the prompt evaluations; --support is left out (the classifier was
trained on its recipe's support set) and the prompt options do not apply.
"""

from __future__ import annotations

import argparse
from pathlib import Path

PROG = "megazoo task bias evaluate"
TASK = "bias"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from megazoo.core.argtypes import int_in
    from megazoo.eval.taskkit import evaluation_outputs
    from megazoo.tasks.bias.selection import MAX_SHOTS
    from megazoo.tasks.bias.stage import add_common

    add_common(parser, also=evaluation_outputs(), classifier=True)
    parser.add_argument("--shots", type=int_in(0, MAX_SHOTS), default=8, help="exemplars per prompt (0: zero-shot)")


def run(args) -> int:
    from megazoo.core.parallel.launch import run_layout
    from megazoo.tasks.bias.classifier import classifier_settings
    from megazoo.tasks.bias.stage import read_inputs

    trained = classifier_settings(args.checkpoint)
    if trained is not None:
        return _evaluate_classifier(args, trained)
    read_inputs(args, [args.shots])  # every input checked once, before any model loads or any rank starts
    return run_layout({k: v for k, v in vars(args).items() if k != "func"}, evaluate_here, PROG)


def evaluate_here(payload: dict, ctx) -> int:
    """The evaluation in this process (ctx None) or on one rank of a tp x pp layout; rank 0 writes."""
    from megazoo.eval.taskkit import on_rank

    return on_rank(PROG, ctx, lambda: _evaluate(argparse.Namespace(**payload), ctx))


def _evaluate(args, ctx) -> int:
    from megazoo.eval.taskkit import write_evaluation
    from megazoo.tasks.bias.pipeline import evaluate_posts
    from megazoo.tasks.bias.stage import load_runtime, read_inputs

    main = ctx is None or ctx.rank == 0
    inputs = read_inputs(args, [args.shots])
    rt = load_runtime(args, inputs, args.selection == "knn" and args.shots > 0, ctx)
    result = evaluate_posts(rt["lm"], inputs["test"], rt["support"], inputs["template"], args.shots, args.selection,
                            args.seed, inputs["dev"], rt["cache"], args.batch, main, args.bootstrap)
    if not main:
        return 0
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    out, pred = write_evaluation(args.out, TASK, result["n"], result["metrics"], result["predictions"],
                                 category=inputs["category"], ci=result["ci"], threshold=result["threshold"],
                                 method="prompts", shots=args.shots, selection=args.selection,
                                 support=len(inputs["support"]),
                                 checkpoint=str(args.checkpoint), data=str(args.data),
                                 layout={"tp": args.tp, "pp": args.pp})
    m, ci = result["metrics"], result["ci"]["auc"]
    print(f"{inputs['category']}: AUC {m['auc']:.4f} [{ci[0]:.4f}, {ci[1]:.4f}]  accuracy {m['accuracy']:.4f}  "
          f"F1 {m['f1']:.4f}  ({result['n']} posts, {args.shots}-shot {args.selection})")
    print(f"metrics written to {out}, per-post scores to {pred}")
    return 0


def _evaluate_classifier(args, trained: dict) -> int:
    """The fine-tuned classifier's evaluation in this process (classifier.py), written as the prompts';
    `trained`: the task settings it was trained with."""
    from megazoo.eval.taskkit import write_evaluation
    from megazoo.tasks.bias.classifier import evaluate_classifier, open_classifier
    from megazoo.tasks.bias.stage import read_classifier_inputs

    inputs = read_classifier_inputs(args, trained)  # every input checked before the model loads
    model = open_classifier(args.checkpoint)
    result = evaluate_classifier(model, inputs["test"], inputs["dev"], args.batch, args.bootstrap, args.seed)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    out, pred = write_evaluation(args.out, TASK, result["n"], result["metrics"], result["predictions"],
                                 category=inputs["category"], ci=result["ci"], threshold=result["threshold"],
                                 method="fine-tuned", checkpoint=str(model.path), step=model.meta.get("step"),
                                 trained_on={"support": trained.get("support"), "dev": trained.get("dev")},
                                 data=str(args.data))
    m, ci = result["metrics"], result["ci"]["auc"]
    print(f"{inputs['category']}: AUC {m['auc']:.4f} [{ci[0]:.4f}, {ci[1]:.4f}]  accuracy {m['accuracy']:.4f}  "
          f"F1 {m['f1']:.4f}  ({result['n']} posts, fine-tuned classifier)")
    print(f"metrics written to {out}, per-post scores to {pred}")
    return 0
