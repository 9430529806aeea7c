"""`megazoo task dialogue evaluate --data FILE --generations FILE --out FILE.json`

--data: the flattened TSV (or any file `flatten` reads); --generations: one response per line, in data
order. Writes the evaluation record of every task (eval/taskkit.py): {"task", "n", "metrics": {"f1",
"kf1", "bleu", "rouge_l", "meteor"} (fractions in [0, 1]; kf1 left out when no sample has gold
knowledge), "counts", "predictions", "data", "generations"} to --out and each response's F1 and KF1
beside it (FILE.predictions.jsonl).
"""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from megazoo.core.fs import input_arg, output_arg
    from megazoo.eval.taskkit import evaluation_outputs

    input_arg(parser, "--data", kind="file", hf=True, required=True,
              help="the flattened TSV (topic, turns, knowledge, response), or a WoW .json / WoI or conversation .jsonl")
    input_arg(parser, "--generations", kind="file", required=True,
              help="one generated response per line, in data order")
    output_arg(parser, "--out", kind="file", also=evaluation_outputs(), required=True,
               help="FILE.json for the metrics (and FILE.predictions.jsonl beside it)")


def run(args) -> int:
    from pathlib import Path

    from megazoo.eval.taskkit import write_evaluation
    from megazoo.tasks.dialogue.data import read_any
    from megazoo.tasks.dialogue.evaluate import dialogue_metrics, per_example, read_generations

    samples = read_any(args.data)
    responses = read_generations(args.generations, len(samples), args.data)
    scored = dialogue_metrics(responses, samples)
    m = scored["metrics"]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    out, pred = write_evaluation(args.out, "dialogue", len(samples), {k: v for k, v in m.items() if v is not None},
                                 per_example(responses, samples), counts=scored["counts"], data=str(args.data),
                                 generations=str(args.generations))
    kf1 = "-" if m["kf1"] is None else f"{m['kf1']:.4f}"
    print(f"n={len(samples)} f1={m['f1']:.4f} kf1={kf1} bleu={100 * m['bleu']:.2f} rouge_l={m['rouge_l']:.4f} "
          f"meteor={m['meteor']:.4f}")
    print(f"metrics written to {out}, per-response scores to {pred}")
    return 0
