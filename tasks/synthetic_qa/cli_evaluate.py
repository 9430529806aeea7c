"""`megazoo task synthetic_qa evaluate --data DEV.json --checkpoint CKPT --out FILE.json
[--predictions PRED.json]`: EM and F1 of a QA checkpoint on a SQuAD v1.1/v2.0 file, as the official
script scores them ({"n", "metrics": {"exact_match", "f1"}}; v2.0 adds HasAns_* and NoAns_*);
--predictions writes {id: answer}, the file the official script (and the score stage) reads.
"""

from __future__ import annotations

import argparse

from megazoo.core.argtypes import positive_int

PROG = "megazoo task synthetic_qa evaluate"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", required=True, help="a SQuAD v1.1/v2.0 JSON file (the package's dev set: "
                                                      "`generate` copies it to OUT/dev.json)")
    parser.add_argument("--checkpoint", required=True, help="a QA checkpoint (task synthetic_qa, kind qa)")
    parser.add_argument("--out", required=True, help="FILE.json: the metrics")
    parser.add_argument("--predictions", default=None, help="also write {id: answer} here")
    parser.add_argument("--null-threshold", type=float, default=None, help="v2.0: predict no answer when the null "
                                                                            "score beats the best span by more "
                                                                            "(default: the checkpoint's task setting)")
    parser.add_argument("--batch", type=positive_int, default=32, help="rows per forward pass")


def run(args) -> int:
    from megazoo.core.fs import write_json_atomic
    from megazoo.tasks.synthetic_qa.cli_common import errors, fail
    from megazoo.tasks.synthetic_qa.evaluate_stage import evaluate_checkpoint, write_result

    try:
        r = evaluate_checkpoint(args.data, args.checkpoint, args.batch, args.null_threshold)
        if args.predictions:
            write_json_atomic(args.predictions, r["predictions"], ensure_ascii=False)
        write_result(args.out, r["result"], version=r["version"], data=str(args.data), checkpoint=r["checkpoint"])
    except errors() as e:
        return fail(PROG, e)
    shown = ", ".join(f"{k} {v:.2f}" for k, v in r["result"]["metrics"].items())
    print(f"{r['checkpoint']} on {args.data} (n={r['result']['n']}): {shown}; written to {args.out}")
    return 0
