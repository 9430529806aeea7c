"""`megazoo eval ...`:

  megazoo eval task NAME --data FILE (--checkpoint CKPT | --hf DIR) [--num-fewshot K --fewshot-data FILE]
                    [--stride N (wikitext103_megatron)] [--lambada-mode strict|nonstrict (lambada)] [--seed S]
                    [--out FILE.json]
  megazoo eval leaderboard SUITE.yaml [--overwrite]
  megazoo eval mt-nlg SUITE.yaml [--columns zero one few] [--limit N] [--out FILE.json]
  megazoo eval lm-eval [lm-eval's own arguments, e.g. --model megazoo --model_args pretrained=DIR --tasks ...]

User errors (a missing file, an option the task lacks, a tokenizer that is not the checkpoint's, a
bad suite) are ValueErrors: one line and exit 2 at the boundary (megazoo/cli.py).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from megazoo.core.argtypes import int_in
from megazoo.core.fs import input_arg, output_arg

# bounds of the numeric options (also a suite's task entries, eval/leaderboard.py): generous for real
# use (a billion examples, 1024 shots), far below what would reach the allocator
NUM_FEWSHOT = (0, 1024)
LIMIT = (1, 10**9)
BATCH_SIZE = (1, 65536)
STRIDE = (1, 1 << 20)
SEED = (0, 2**32 - 1)


# subcommands whose arguments go unparsed to another program (megazoo/cli.py reads this)
PASSTHROUGH = ("lm-eval",)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True)
    task = sub.add_parser("task", help="one zero/few-shot task on one model")
    task.add_argument("name", help="lambada, wikitext103_megatron, boolq, race_gpt3, piqa, hellaswag, winogrande, "
                      "anli, hans, wic (race_gpt3 and wikitext103_megatron are GPT-3's and Megatron's protocols, "
                      "not lm-eval's race and wikitext: docs/eval.md)")
    input_arg(task, "--data", required=True, help="the task's file (or RACE folder) in its official format")
    src = task.add_mutually_exclusive_group(required=True)
    input_arg(src, "--checkpoint", kind="folder", help="a megazoo checkpoint")
    input_arg(src, "--hf", kind="folder", help="a Hugging Face folder (scored through transformers)")
    task.add_argument("--num-fewshot", type=int_in(*NUM_FEWSHOT), default=0, help="examples before each question")
    input_arg(task, "--fewshot-data", help="file to draw few-shot examples from (the train split; lambada: "
              "by default the evaluated file, minus the question)")
    task.add_argument("--seed", type=int_in(*SEED), default=1234, help="few-shot sampling seed (shots drawn per question)")
    task.add_argument("--stride", type=int_in(*STRIDE), help="wikitext103_megatron: window stride in tokens, as "
                      "Megatron's --overlapping-eval (default 32, capped at the model's length)")
    task.add_argument("--lambada-mode", choices=["strict", "nonstrict"],
                      help="lambada: strict scores the whole last word (default), nonstrict only its final token")
    task.add_argument("--limit", type=int_in(*LIMIT), help="score only the first N examples")
    task.add_argument("--batch-size", type=int_in(*BATCH_SIZE), default=8)
    output_arg(task, "--out", kind="file", help="write metrics (and predictions) as JSON to this file")
    board = sub.add_parser("leaderboard", help="run a suite of (model, task) pairs")
    input_arg(board, "suite", kind="file", help="suite YAML (see megazoo.eval.leaderboard); its `out` folder gets "
              "results.json, results.md, results.csv, results.png and lm_eval/MODEL/results_SUITE.json "
              "(lm-eval's results layout)")
    board.add_argument("--overwrite", action="store_true",
                       help="replace the results files of an earlier run in the suite's `out` folder")
    mtnlg = sub.add_parser("mt-nlg", help="the MT-NLG paper's zero/one/few-shot table for the models of a suite, "
                           "beside the paper's 530B figures")
    input_arg(mtnlg, "suite", kind="file", help="suite YAML shaped as eval/suites/presets/mt-nlg.yaml (copy it, "
              "fill in models and data paths); each task's num_fewshot is its few-shot k")
    mtnlg.add_argument("--columns", nargs="+", choices=["zero", "one", "few"], default=["zero", "one", "few"],
                       help="which shot settings to run (default all three)")
    mtnlg.add_argument("--limit", type=int_in(*LIMIT), help="score only the first N examples of each task")
    mtnlg.add_argument("--batch-size", type=int_in(*BATCH_SIZE), help="default: each task's batch_size, or 8")
    output_arg(mtnlg, "--out", kind="file", help="write every metric of every cell as JSON to this file")
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

        report = run_leaderboard(args.suite, overwrite=args.overwrite)
        print(report["table"], end="")  # the files (results.json/.csv/.md/.png, lm_eval/) hold the rest
        for warning in report["warnings"]:
            print(f"megazoo eval leaderboard: warning: {warning}", file=sys.stderr)
        print(f"results: {report['out']}", file=sys.stderr)
        if report["regressions"]:
            print(f"{len(report['regressions'])} regression(s): see results.md", file=sys.stderr)
            return 1
        return 0
    if args.action == "mt-nlg":
        return run_mtnlg_command(args)
    from megazoo.eval.leaderboard import _load_model
    from megazoo.eval.suites import run_task
    from megazoo.eval.suites.runner import check_task_options

    # a wrong option combination is one line, before the model is loaded
    check_task_options(args.name, args.num_fewshot, args.stride, args.lambada_mode)
    for flag, path in (("--data", args.data), ("--fewshot-data", args.fewshot_data), ("--checkpoint", args.checkpoint),
                       ("--hf", args.hf)):
        if path is not None and not Path(path).exists():  # before the model is loaded
            raise ValueError(f"{flag} {path}: no such file or folder")
    if args.out and not Path(args.out).parent.is_dir():
        raise ValueError(f"--out {args.out}: the folder {Path(args.out).parent} does not exist; create it first")
    entry = {"hf": args.hf} if args.hf else {"checkpoint": args.checkpoint}
    lm = _load_model(entry)
    metrics = run_task(lm, args.name, args.data, args.num_fewshot, args.fewshot_data, args.limit,
                       batch_size=args.batch_size, seed=args.seed, progress=True, stride=args.stride,
                       lambada_mode=args.lambada_mode)
    predictions = metrics.pop("predictions", None)
    print(json.dumps(metrics, indent=2, sort_keys=True))
    if args.out:
        from megazoo.core.fs import write_json_atomic

        write_json_atomic(args.out, {**metrics, "predictions": predictions}, indent=2)  # all or nothing
    return 0


def run_mtnlg_command(args) -> int:
    """`megazoo eval mt-nlg`: print the table (eval/suites/mt_nlg.py); with --out, every metric as JSON."""
    from megazoo.eval.suites.mt_nlg import run_mtnlg, table

    if args.out and not Path(args.out).parent.is_dir():
        raise ValueError(f"--out {args.out}: the folder {Path(args.out).parent} does not exist; create it first")
    results = run_mtnlg(args.suite, args.columns, args.limit, args.batch_size)
    print(table(results, args.columns), end="")
    if args.out:
        from megazoo.core.fs import write_json_atomic

        write_json_atomic(args.out, {"columns": list(args.columns), "results": results}, indent=2)
    return 0
