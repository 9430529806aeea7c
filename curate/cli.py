"""`megazoo curate`: clean a raw text corpus.

    megazoo curate RECIPE [--set KEY=VALUE ...] [--scheduler ADDRESS | --dask-workers N]
    megazoo curate STAGE --input DIR --output DIR [stage options] [--set KEY=VALUE ...]
    megazoo curate generate OUT          a planted test corpus (generated data, known answers)

Stages: filter, quality, exact-dedup, fuzzy-dedup, decontaminate, blend (docs/curate.md). A recipe
runs them in order into OUTPUT/NN-STAGE/ and writes OUTPUT/report.md, report.json, report.png and
removed.jsonl. Every stage resumes: rerun the same command after a kill and finished shards are kept.
"""

from __future__ import annotations

import argparse
import json
import sys

from megazoo.curate.errors import CurateError
from megazoo.curate.recipe import STAGES

USAGE = __doc__.split("\n\n")[1]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", nargs="?", help=f"a recipe YAML, a stage ({', '.join(STAGES)}) or `generate`")
    parser.add_argument("rest", nargs=argparse.REMAINDER, help="the recipe's or stage's options (see --help)")


def _run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--set", nargs="+", default=[], metavar="KEY=VALUE", dest="overrides",
                   help="change settings (values read as YAML)")
    p.add_argument("--scheduler", metavar="ADDRESS", help="run on this Dask scheduler (tcp://host:8786)")
    p.add_argument("--dask-workers", type=int, metavar="N", help="run on a local Dask cluster of N workers")
    p.add_argument("--timeout", type=float, default=10.0, metavar="S",
                   help="seconds to wait for --scheduler to answer (default 10)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")


def _stage_parser(stage: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"megazoo curate {stage}")
    p.add_argument("--input", required=True, metavar="DIR", help="folder of .jsonl/.txt/.parquet shards")
    p.add_argument("--output", required=True, metavar="DIR", help="folder for the output shards")
    p.add_argument("--text-key", default="text", help="the JSON key / parquet column of the text")
    if stage == "fuzzy-dedup":
        for name, kind in (("threshold", float), ("shingle-size", int), ("permutations", int), ("bands", int),
                           ("rows", int)):
            p.add_argument(f"--{name}", type=kind, help="see docs/curate.md (default: the recipe default)")
    if stage == "decontaminate":
        p.add_argument("--tasks", nargs="+", required=True, metavar="FILE",
                       help="evaluation files, RACE folders, suite YAMLs, NAME=PATH or `generated`")
    if stage == "quality":
        p.add_argument("--reference", required=True, metavar="PATH", help="high-quality reference documents")
        p.add_argument("--mode", choices=("threshold", "pareto"))
        p.add_argument("--threshold", type=float)
    if stage == "blend":
        p.add_argument("--tokenizer", help="as for megazoo preprocess (default gpt2)")
        p.add_argument("--weight", nargs="+", default=[], metavar="SOURCE=W", help="blend weight of a source")
        p.add_argument("--epochs", nargs="+", default=[], metavar="SOURCE=E", help="epochs of a source")
    _run_options(p)
    return p


def _pairs(words: list[str], flag: str) -> dict[str, float]:
    out = {}
    for word in words:
        name, sep, value = word.partition("=")
        try:
            out[name] = float(value)
        except ValueError:
            sep = ""
        if not sep or not name:
            raise CurateError(f"--{flag} {word}: expected SOURCE=NUMBER (e.g. web=2)")
    return out


def _stage_config(stage: str, args) -> dict:
    import yaml

    cfg: dict = {}
    for name in ("threshold", "shingle_size", "permutations", "bands", "rows", "mode", "reference", "tokenizer"):
        value = getattr(args, name, None)
        if value is not None:
            cfg[name] = value
    if stage == "decontaminate":
        cfg["tasks"] = args.tasks
    if stage == "blend":
        sources = {n: {"weight": w} for n, w in _pairs(args.weight, "weight").items()}
        sources.update({n: {"epochs": e} for n, e in _pairs(args.epochs, "epochs").items()})
        if sources:
            cfg["sources"] = sources
    for item in args.overrides:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise CurateError(f"--set {item}: expected KEY=VALUE (a setting of the {stage} stage)")
        cfg[key] = yaml.safe_load(value) if value else None
    return cfg


def _executor(args, dask: dict | None = None):
    from megazoo.curate.executor import make_executor

    dask = dask or {}
    scheduler = args.scheduler or dask.get("scheduler")
    if args.dask_workers is not None and args.dask_workers < 1:
        raise CurateError(f"--dask-workers {args.dask_workers}: needs at least 1")
    workers = args.dask_workers or dask.get("workers") or None
    if workers is not None and (not isinstance(workers, int) or isinstance(workers, bool) or workers < 0):
        raise CurateError(f"dask.workers: {workers!r}; needs a whole number (0: run in this process)")
    if args.timeout <= 0 or args.timeout != args.timeout:
        raise CurateError(f"--timeout {args.timeout}: needs a number of seconds > 0")
    timeout = args.timeout if args.timeout != 10.0 else float(dask.get("timeout", 10.0))
    return make_executor(scheduler, workers, timeout, progress=not args.no_progress)


def _print_stats(stats: dict) -> None:
    print(f"{stats['stage']}: {stats['docs_in']:,} -> {stats['docs_out']:,} documents, "
          f"{stats['words_in']:,} -> {stats['words_out']:,} words"
          + (f" ({stats['resumed_shards']} shards already done)" if stats.get("resumed_shards") else ""))
    if stats.get("reasons"):
        print("  removed: " + ", ".join(f"{k} {v}" for k, v in sorted(stats["reasons"].items())))


def run(args) -> int:
    if args.target in (None, "-h", "--help"):
        print(f"usage:\n{USAGE}\n\nstages: {', '.join(STAGES)}")
        if args.target is None:
            print("megazoo curate: error: give a recipe, a stage or `generate`", file=sys.stderr)
            return 2
        return 0
    if args.target == "generate":
        from megazoo.curate.planted import generate

        p = argparse.ArgumentParser(prog="megazoo curate generate")
        p.add_argument("out", help="folder to write the planted corpus into")
        p.add_argument("--clean", type=int, default=200, help="clean passages in the crawl")
        p.add_argument("--shards", type=int, default=4)
        p.add_argument("--seed", type=int, default=0)
        a = p.parse_args(args.rest)
        import os

        if a.clean < 40 or a.shards < 1:
            raise CurateError(f"--clean {a.clean} --shards {a.shards}: needs at least 40 clean passages and 1 shard")
        if os.path.exists(a.out) and (not os.path.isdir(a.out) or os.listdir(a.out)):
            raise CurateError(f"{a.out}: exists and is not empty; give a new folder (nothing is overwritten)")
        truth = generate(a.out, n_clean=a.clean, n_shards=a.shards, seed=a.seed)
        print(f"wrote a planted corpus (generated data) to {a.out}: {len(truth['clean'])} clean, "
              f"{len(truth['near_pairs'])} near-duplicates, {len(truth['exact_pairs'])} exact copies, "
              f"{len(truth['low_quality'])} low-quality, {len(truth['contaminated'])} contaminated")
        return 0
    if args.target in STAGES:
        from megazoo.curate.pipeline import run_stage
        from megazoo.curate.report import write_report

        a = _stage_parser(args.target).parse_args(args.rest)
        cfg = _stage_config(args.target, a)
        executor = _executor(a)
        try:
            stats = run_stage(args.target, cfg, a.input, a.output, a.text_key, executor, not a.no_progress)
        finally:
            executor.close()
        stats["folder"] = a.output
        import os

        write_report(os.path.join(a.output, "_report"), [stats], final=a.output, executor=executor.kind,
                     workers=executor.workers)
        _print_stats(stats)
        return 0
    from megazoo.curate.pipeline import run_recipe
    from megazoo.curate.recipe import load

    p = argparse.ArgumentParser(prog="megazoo curate RECIPE")
    _run_options(p)
    a = p.parse_args(args.rest)
    recipe = load(args.target, a.overrides)
    executor = _executor(a, recipe["dask"])
    try:
        report = run_recipe(recipe, executor, progress=not a.no_progress)
    finally:
        executor.close()
    for stats in report["stages"]:
        _print_stats(stats)
    print(f"curated corpus: {report['final']}; report: {recipe['output']}/report.md")
    blend = [s for s in report["stages"] if s["stage"] == "blend"]
    if blend:
        print(f"data.path: {json.dumps(blend[0]['extra']['data_path'])}")
    return 0
