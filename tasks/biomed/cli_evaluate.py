"""`megazoo task biomed evaluate --kind ner|re|qa --data FILE --checkpoint CKPT --out FILE.json
[--golden GOLDEN.json]`.

Writes FILE.json ({"task": "biomed", "kind", "n", "metrics"}: precision/recall/f1 for ner and re,
strict_accuracy/lenient_accuracy/mrr for qa) and the predictions beside it (evaluate.py).
With --golden (kind qa), a BioASQ test batch is scored per question against its golden file, as
BioMegatron reports it (bioasq.py); without it, each SQuAD question (snippet) is scored on its own.
The predictions file is a declared output too (of every kind, as the parser runs before --kind is
read), so an --out whose predictions file is an input, or exists, is refused before anything runs.
Errors propagate to the one boundary (megazoo/cli.py): a user's mistake is one line, exit 2.
"""

from __future__ import annotations

import argparse

from megazoo.core.argtypes import int_in
from megazoo.core.fs import input_arg, output_arg

PROG = "megazoo task biomed evaluate"
MAX_BATCH = 4096  # rows (windows of up to 512 tokens) per forward pass


def _predictions_files(out):
    from megazoo.tasks.biomed.evaluate import every_predictions_path

    return every_predictions_path(out)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kind", required=True, choices=("ner", "re", "qa"), help="the task of the checkpoint")
    input_arg(parser, "--data", required=True, hf=True, help="a data file (test.tsv, test.json) or a release folder "
                                                             "(with --split); qa also a Hugging Face dataset")
    # a run folder may hold its own evaluations (runs/ner/eval.json)
    input_arg(parser, "--checkpoint", inside_ok=True, required=True,
              help="a biomed training checkpoint: a run's checkpoints/, one iter_*, or checkpoints/best")
    output_arg(parser, "--out", required=True, also=_predictions_files,
               help="FILE.json: the metrics; the predictions go beside it")
    input_arg(parser, "--golden", help="qa: the BioASQ golden file of the test batch (GOLDEN.json); scores "
                                       "per question, each question's top 5 over its snippets")
    parser.add_argument("--split", default="test", help="the split when --data is a folder (default test)")
    parser.add_argument("--batch", type=int_in(1, MAX_BATCH), default=32, help=f"rows per forward pass (1-{MAX_BATCH})")


def run(args) -> int:
    from megazoo.tasks.biomed.evaluate import write_evaluation, write_question_evaluation
    from megazoo.tasks.biomed.evaluate_stage import evaluate_checkpoint

    golden = args.golden
    r = evaluate_checkpoint(args.data, args.checkpoint, args.kind, args.split, args.batch,
                            golden=None if golden is None else str(golden))
    meta = {"data": str(args.data), "checkpoint": r["checkpoint"], "step": r["step"]}
    shown = ", ".join(f"{k} {v:.4f}" for k, v in r["metrics"].items())
    if golden is None:
        out, pred = write_evaluation(args.out, r["kind"], r["examples"], r["predictions"], r["metrics"], **meta)
        print(f"{r['checkpoint']} on {args.data} ({r['kind']}, n={len(r['examples'])}): {shown}")
    else:
        q = r["questions"]
        out, pred = write_question_evaluation(args.out, q, golden=str(golden), **meta)
        print(f"{r['checkpoint']} on {args.data} per question of {golden} (n={q.n_questions} factoid, "
              f"{q.n_without_prediction} without a snippet, {q.n_skipped} non-factoid skipped): {shown}")
    print(f"metrics written to {out}, predictions to {pred}")
    return 0
