"""`megazoo task bias study --data TEST.csv --support TRAIN.csv --checkpoint CKPT --out FILE.json
[--sizes 16,32,64,100,all] [--shots 2,4,8] [--selection knn] ...`

Writes FILE.json ({"task": "bias", "category", "n", "zero_shot": {"auc", "ci"}, "points": [{"size",
"shots", "auc", "ci"}], "skipped"}) and the plot FILE.png beside it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

PROG = "megazoo task bias study"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from megazoo.tasks.bias.stage import add_common, stem

    add_common(parser, also=lambda out: [Path(f"{stem(out)}.png")])
    parser.add_argument("--sizes", default="16,32,64,100,all", help="support sizes (posts, or all)")
    parser.add_argument("--shots", default="2,4,8", help="values of k")


def run(args) -> int:
    from megazoo.core.parallel.launch import run_layout
    from megazoo.tasks.bias.stage import ERRORS, read_inputs
    from megazoo.tasks.bias.study import parse_shots, parse_sizes

    try:  # every input checked once, before any model loads or any rank starts
        parse_sizes(args.sizes)
        read_inputs(args, [min(parse_shots(args.shots))])  # larger k are skipped at sizes that cannot give them
    except ERRORS as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    return run_layout({k: v for k, v in vars(args).items() if k != "func"}, study_here, PROG)


def study_here(payload: dict, ctx) -> int:
    """The study in this process (ctx None) or on one rank of a tp x pp layout; rank 0 writes."""
    from megazoo.tasks.bias.stage import ERRORS, load_runtime, read_inputs, stem, write_json
    from megazoo.tasks.bias.study import parse_shots, parse_sizes, plot_study, run_study

    args = argparse.Namespace(**payload)
    main = ctx is None or ctx.rank == 0
    sizes, shots = parse_sizes(args.sizes), parse_shots(args.shots)
    try:
        inputs = read_inputs(args, [min(shots)])
        rt = load_runtime(args, inputs, args.selection == "knn", ctx)
        study = run_study(rt["lm"], inputs["test"], rt["support"], inputs["template"], sizes, shots, args.selection,
                          args.seed, rt["cache"], args.batch, main, args.bootstrap)
    except ERRORS as e:
        if main:
            print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    if not main:
        return 0
    record = {"task": "bias", "category": inputs["category"], "n": len(inputs["test"]), "selection": args.selection,
              **study, "checkpoint": str(args.checkpoint), "data": str(args.data),
              "layout": {"tp": args.tp, "pp": args.pp}}
    out = write_json(args.out, record)
    png = plot_study(study, f"{stem(args.out)}.png", f"{inputs['category']}: AUC against support size "
                                                    f"({args.selection})")
    print(f"zero-shot AUC {study['zero_shot']['auc']:.4f}")
    for p in study["points"]:
        print(f"size {p['size']:>4}  k {p['shots']:>2}  AUC {p['auc']:.4f} [{p['ci'][0]:.4f}, {p['ci'][1]:.4f}]")
    print(f"study written to {out}, plot to {png}")
    return 0
