"""`megazoo task bias study --data TEST.csv --support TRAIN.csv --checkpoint CKPT --out FILE.json
[--sizes 16,32,64,100,all] [--shots 2,4,8] [--selection knn] ...`: an extra stage (cli.EXTRAS), the
repository-size ablation.

Writes FILE.json ({"task": "bias", "category", "n", "zero_shot": {"auc", "ci"}, "points": [{"size",
"shots", "auc", "ci"}], "skipped"}) and the plot FILE.png beside it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

PROG = "megazoo task bias study"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from megazoo.tasks.bias.stage import add_common, stem

    add_common(parser, also=lambda out: [Path(f"{stem(out)}.png")])
    parser.add_argument("--sizes", default="16,32,64,100,all", help="support sizes (posts, or all)")
    parser.add_argument("--shots", default="2,4,8", help="values of k")


def run(args) -> int:
    from megazoo.core.parallel.launch import run_layout
    from megazoo.tasks.bias.stage import read_inputs
    from megazoo.tasks.bias.study import parse_shots, parse_sizes

    # every input checked once, before any model loads or any rank starts
    parse_sizes(args.sizes)
    read_inputs(args, [min(parse_shots(args.shots))])  # larger k are skipped at sizes that cannot give them
    return run_layout({k: v for k, v in vars(args).items() if k != "func"}, study_here, PROG)


def study_here(payload: dict, ctx) -> int:
    """The study in this process (ctx None) or on one rank of a tp x pp layout; rank 0 writes."""
    from megazoo.eval.taskkit import on_rank

    return on_rank(PROG, ctx, lambda: _study(argparse.Namespace(**payload), ctx))


def _study(args, ctx) -> int:
    from megazoo.core.fs import write_json_atomic
    from megazoo.tasks.bias.stage import load_runtime, read_inputs, stem
    from megazoo.tasks.bias.study import parse_shots, parse_sizes, plot_study, run_study

    main = ctx is None or ctx.rank == 0
    sizes, shots = parse_sizes(args.sizes), parse_shots(args.shots)
    inputs = read_inputs(args, [min(shots)])
    rt = load_runtime(args, inputs, args.selection == "knn", ctx)
    study = run_study(rt["lm"], inputs["test"], rt["support"], inputs["template"], sizes, shots, args.selection,
                      args.seed, rt["cache"], args.batch, main, args.bootstrap)
    if not main:
        return 0
    record = {"task": "bias", "category": inputs["category"], "n": len(inputs["test"]), "selection": args.selection,
              **study, "checkpoint": str(args.checkpoint), "data": str(args.data),
              "layout": {"tp": args.tp, "pp": args.pp}}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out, record, indent=2)
    png = plot_study(study, f"{stem(args.out)}.png", f"{inputs['category']}: AUC against support size "
                                                    f"({args.selection})")
    print(f"zero-shot AUC {study['zero_shot']['auc']:.4f}")
    for p in study["points"]:
        print(f"size {p['size']:>4}  k {p['shots']:>2}  AUC {p['auc']:.4f} [{p['ci'][0]:.4f}, {p['ci'][1]:.4f}]")
    print(f"study written to {out}, plot to {png}")
    return 0
