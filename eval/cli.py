"""`megazoo eval ...`:

  megazoo eval task NAME --data FILE (--checkpoint CKPT | --hf DIR) [--num-fewshot K --fewshot-data FILE]
                    [--stride N (wikitext)] [--lambada-mode strict|nonstrict (lambada)] [--seed S]
  megazoo eval leaderboard SUITE.yaml
  megazoo eval lm-eval [lm-eval's own arguments, e.g. --model megazoo --model_args checkpoint=CKPT --tasks ...]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from megazoo.core.argtypes import positive_int


# subcommands whose arguments go unparsed to another program (megazoo/cli.py reads this)
PASSTHROUGH = ("lm-eval",)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True)
    task = sub.add_parser("task", help="one zero/few-shot task on one model")
    task.add_argument("name", help="lambada, wikitext, boolq, race, piqa, hellaswag, winogrande, anli, hans, wic")
    task.add_argument("--data", required=True, help="the task's file in its official format")
    src = task.add_mutually_exclusive_group(required=True)
    src.add_argument("--checkpoint", help="a megazoo checkpoint")
    src.add_argument("--hf", help="a Hugging Face folder (scored through transformers)")
    task.add_argument("--num-fewshot", type=int, default=0)
    task.add_argument("--fewshot-data", help="file to draw few-shot examples from (the train split; lambada: "
                      "by default the evaluated file, minus the question)")
    task.add_argument("--seed", type=int, default=1234, help="few-shot sampling seed (shots drawn per question)")
    task.add_argument("--stride", type=int, help="wikitext: window stride in tokens, as Megatron's --overlapping-eval "
                      "(default 32, capped at the model's length)")
    task.add_argument("--lambada-mode", choices=["strict", "nonstrict"],
                      help="lambada: strict scores the whole last word (default), nonstrict only its final token")
    task.add_argument("--limit", type=positive_int, help="score only the first N examples")
    task.add_argument("--batch-size", type=positive_int, default=8)
    task.add_argument("--out", help="write metrics (and predictions) as JSON here")
    board = sub.add_parser("leaderboard", help="run a suite of (model, task) pairs")
    board.add_argument("suite", help="suite YAML (see megazoo.eval.leaderboard)")
    lmeval = sub.add_parser("lm-eval", help="lm-eval's command line with the megazoo backend registered",
                            add_help=False)
    lmeval.add_argument("rest", nargs=argparse.REMAINDER)


def run(args) -> int:
    if args.action == "lm-eval":
        import megazoo.eval.lm_eval_adapter  # noqa: F401  (registers --model megazoo)
        from lm_eval.__main__ import cli_evaluate

        sys.argv = ["lm_eval", *args.rest]
        cli_evaluate()
        return 0
    if args.action == "leaderboard":
        from megazoo.eval.leaderboard import run_leaderboard

        report = run_leaderboard(args.suite)
        print(json.dumps(report["results"], indent=2, sort_keys=True))
        if report["regressions"]:
            print(f"{len(report['regressions'])} regression(s): see results.md", file=sys.stderr)
            return 1
        return 0
    from megazoo.eval.leaderboard import _load_model
    from megazoo.eval.suites import run_task
    from megazoo.eval.suites.runner import check_task_options

    try:  # a wrong option combination is one line, before the model is loaded
        check_task_options(args.name, args.num_fewshot, args.stride, args.lambada_mode)
    except ValueError as err:
        print(f"megazoo eval task: {err}", file=sys.stderr)
        return 2
    for flag, path in (("--data", args.data), ("--fewshot-data", args.fewshot_data), ("--checkpoint", args.checkpoint)):
        if path is not None and not Path(path).exists():  # before the model is loaded
            print(f"megazoo eval task: error: {flag} {path}: no such file or folder", file=sys.stderr)
            return 2
    entry = {"hf": args.hf} if args.hf else {"checkpoint": args.checkpoint}
    lm = _load_model(entry)
    metrics = run_task(lm, args.name, args.data, args.num_fewshot, args.fewshot_data, args.limit,
                       batch_size=args.batch_size, seed=args.seed, progress=True, stride=args.stride,
                       lambada_mode=args.lambada_mode)
    predictions = metrics.pop("predictions", None)
    print(json.dumps(metrics, indent=2, sort_keys=True))
    if args.out:
        with open(args.out, "w") as f:
            json.dump({**metrics, "predictions": predictions}, f, indent=2)
    return 0
