"""`megazoo task dialogue evaluate --data FILE --generations FILE --out FILE.json`

--data: the flattened TSV (or any file `flatten` reads); --generations: one response per line, in data
order. Writes {"task", "n", "metrics": {"f1", "kf1", "bleu", "rouge_l", "meteor"}, "counts"} to --out
and each response's F1 and KF1 beside it (FILE.predictions.jsonl).
"""

from __future__ import annotations

import argparse

PROG = "megazoo task dialogue evaluate"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from megazoo.core.fs import input_arg, output_arg
    from megazoo.tasks.dialogue.evaluate import predictions_path

    input_arg(parser, "--data", kind="file", required=True,
              help="the flattened TSV (topic, turns, knowledge, response), or a WoW .json / WoI or conversation .jsonl")
    input_arg(parser, "--generations", kind="file", required=True,
              help="one generated response per line, in data order")
    output_arg(parser, "--out", kind="file", also=lambda out: [predictions_path(out)], required=True,
               help="FILE.json for the metrics (and FILE.predictions.jsonl beside it)")


def run(args) -> int:
    from megazoo.tasks.dialogue.data import read_any
    from megazoo.tasks.dialogue.evaluate import dialogue_metrics, per_example, read_generations, write_evaluation
    from megazoo.tasks.dialogue.stage import ERRORS, fail

    try:
        samples = read_any(args.data)
        responses = read_generations(args.generations, len(samples), args.data)
        scored = dialogue_metrics(responses, samples)
    except ERRORS as e:
        return fail(PROG, e)
    record = {"task": "dialogue", "n": len(samples), **scored, "data": str(args.data),
              "generations": str(args.generations)}
    out, pred = write_evaluation(args.out, record, per_example(responses, samples))
    m = scored["metrics"]
    kf1 = "-" if m["kf1"] is None else f"{m['kf1']:.4f}"
    print(f"n={len(samples)} f1={m['f1']:.4f} kf1={kf1} bleu={m['bleu']:.2f} rouge_l={m['rouge_l']:.4f} "
          f"meteor={m['meteor']:.4f}")
    print(f"metrics written to {out}, per-response scores to {pred}")
    return 0
