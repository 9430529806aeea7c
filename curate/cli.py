"""`megazoo curate`: clean a raw text corpus.

    megazoo curate RECIPE [--set KEY=VALUE ...] [--scheduler ADDRESS | --dask-workers N] [--overwrite]
    megazoo curate STAGE --input DIR --output DIR [stage options] [--set KEY=VALUE ...] [--overwrite]
    megazoo curate generate OUT [--overwrite]          a planted test corpus (generated data, known answers)

Stages: filter, quality, exact-dedup, fuzzy-dedup, decontaminate, blend (docs/curate.md). A recipe
runs them in order into OUTPUT/NN-STAGE/ and writes OUTPUT/report.md, report.json, report.png and
removed.jsonl. Every stage resumes: rerun the same command after a kill and finished shards are kept.
A rerun with other settings is refused (naming the setting) unless --overwrite, which redoes it and
replaces the old output only once the new one is complete. Paths follow the output policy of
core/fs: an output equal to, inside or containing an input is refused before anything runs.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

from megazoo.core.argtypes import float_in, int_in
from megazoo.core.fs import Declared, PathRole, atomic_folder, check_paths, enforce, input_arg, output_arg
from megazoo.curate.errors import CurateError
from megazoo.curate.fuzzy_dedup import MAX_PERMUTATIONS
from megazoo.curate.recipe import MAX_TIMEOUT, MAX_WORKERS, STAGES

USAGE = __doc__.split("\n\n")[1]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", nargs="?", help=f"a recipe YAML, a stage ({', '.join(STAGES)}) or `generate`")
    parser.add_argument("rest", nargs=argparse.REMAINDER, help="the recipe's or stage's options (see --help)")


def _run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--set", nargs="+", action="extend", default=[], metavar="KEY=VALUE", dest="overrides",
                   help="change settings (values read as YAML; may be repeated)")
    p.add_argument("--scheduler", metavar="ADDRESS", help="run on this Dask scheduler (tcp://host:8786)")
    p.add_argument("--dask-workers", type=int_in(1, MAX_WORKERS), metavar="N",
                   help="run on a local Dask cluster of N workers")
    p.add_argument("--timeout", type=float_in(0.1, MAX_TIMEOUT), metavar="S",
                   help="seconds to wait for --scheduler to answer (default 10)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")


def _stage_parser(stage: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"megazoo curate {stage}")
    input_arg(p, "--input", kind="folder", required=True, metavar="DIR", help="folder of .jsonl/.txt/.parquet shards")
    # resumable: a rerun with the same settings continues the stage's own folder; pipeline.output_state
    # refuses any other non-empty folder (and changed settings) without --overwrite
    output_arg(p, "--output", kind="folder", resumable=True, required=True, metavar="DIR",
               help="folder for the output shards")
    p.add_argument("--text-key", default="text", help="the JSON key / parquet column of the text")
    if stage == "fuzzy-dedup":
        p.add_argument("--preset", choices=("nvidia",), help="NVIDIA's settings: --shingle char:5 --num-perm 100 "
                       "--bands 10 --candidate-threshold 0.5 --group-threshold 0.9 (options given override it)")
        for flag in ("--threshold", "--group-threshold"):  # two flags, one setting (argparse names the one used)
            p.add_argument(flag, dest="threshold", type=float_in(0, 1),
                           help="Jaccard similarity in (0, 1] that joins two documents in a group (default 0.8)")
        p.add_argument("--candidate-threshold", type=float_in(0, 1),
                       help="Jaccard similarity of the verified candidate pairs (default: the group threshold)")
        p.add_argument("--shingle", type=_shingle, metavar="char:N|word:N", help="shingles (default word:5)")
        p.add_argument("--shingle-size", type=int_in(1, 1000), help="1 to 1000 (default 5)")
        for flag in ("--permutations", "--num-perm"):
            p.add_argument(flag, dest="permutations", type=int_in(1, MAX_PERMUTATIONS),
                           help=f"MinHash permutations, 1 to {MAX_PERMUTATIONS} (default 120)")
        for name in ("bands", "rows"):
            p.add_argument(f"--{name}", type=int_in(1, MAX_PERMUTATIONS), help=f"1 to {MAX_PERMUTATIONS} "
                           "(default 20 bands; rows = permutations / bands when not given)")
        p.add_argument("--keep", choices=("first", "longest", "priority"),
                       help="which copy of a group survives (default first)")
        p.add_argument("--priority", metavar="DATASET,...", help="datasets in order of priority (with --keep priority)")
    if stage == "decontaminate":
        input_arg(p, "--tasks", nargs="+", required=True, metavar="FILE",
                  help="evaluation files, RACE folders, suite YAMLs, NAME=PATH or `generated`")
        p.add_argument("--preset", choices=("nvidia", "gpt3"),
                       help="nvidia: NVIDIA's filter_ngrams.py (the default values); gpt3: plain 13-grams")
        p.add_argument("--ngram", type=int_in(1, 1000), help="n-gram size (default 13)")
        p.add_argument("--ngram-per-task", metavar="NAME:N,...",
                       help="a benchmark's own n-gram size (GPT-3 chose N per benchmark), e.g. lambada:8,race:13; "
                            "NAME as --tasks names it")
        p.add_argument("--min-ngram", type=int_in(1, 1000),
                       help="task texts of this many words up to ngram - 1 are indexed whole (default 8)")
        p.add_argument("--max-doc-frequency", type=int_in(0, 10**12),
                       help="an n-gram in this many training documents is left alone (default 10; 0: off)")
        p.add_argument("--margin", type=int_in(0, 10**7), help="characters removed each side (default 200)")
        p.add_argument("--snap", choices=("punctuation", "none"), help="move cuts to sentence ends (default)")
    if stage == "quality":
        input_arg(p, "--reference", required=True, metavar="PATH", help="high-quality reference documents")
        p.add_argument("--mode", choices=("threshold", "pareto"))
        p.add_argument("--threshold", type=float_in(0, 1), help="keep scores at or above this (0 to 1)")
    if stage == "blend":
        input_arg(p, "--tokenizer", help="as for megazoo preprocess: a name or a tokenizer folder (default gpt2)")
        p.add_argument("--preset", choices=("mt-nlg",), help="the MT-NLG paper's datasets and epochs (table 2); "
                       "map each name to a source with --map")
        p.add_argument("--map", nargs="+", default=[], metavar="NAME=SOURCE",
                       help="the source of the input (its first-level name) that holds a preset dataset (e.g. Books3=books)")
        p.add_argument("--weight", nargs="+", default=[], metavar="SOURCE=W", help="blend weight of a source")
        p.add_argument("--epochs", nargs="+", default=[], metavar="SOURCE=E", help="epochs of a source")
    _run_options(p)
    return p


def _generate_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="megazoo curate generate")
    output_arg(p, "out", kind="folder", help="folder to write the planted corpus into")
    p.add_argument("--clean", type=int_in(40, 100000), default=200, help="clean passages in the crawl (40 to 100000)")
    p.add_argument("--shards", type=int_in(1, 1000), default=4, help="shards of the crawl (1 to 1000)")
    p.add_argument("--seed", type=int_in(0, 2**32 - 1), default=0)
    return p


def recipe_parser() -> argparse.ArgumentParser:
    """The options of `megazoo curate RECIPE` (its paths are the recipe's keys, checked by recipe.load)."""
    p = argparse.ArgumentParser(prog="megazoo curate RECIPE")
    _run_options(p)
    p.add_argument("--overwrite", action="store_true",
                   help="redo the whole recipe; the old output is replaced only once the new one is complete")
    return p


def stage_parsers() -> dict[str, argparse.ArgumentParser]:
    """The parser of every `megazoo curate WORD` that takes path arguments ({word: parser}): the six
    stages and `generate`. The contract test (tests/cli_contract.py) enumerates curate's commands from
    here, since the top-level parser sees only `target` and `rest`. The recipe form has no path flags
    (its paths are recipe keys, checked when the recipe is loaded): recipe_parser()."""
    parsers = {stage: _stage_parser(stage) for stage in STAGES}
    parsers["generate"] = _generate_parser()
    return parsers


def _parse(p: argparse.ArgumentParser, words: list[str]):
    """(parsed arguments, None) or (None, argparse's exit code): a usage error returns 2 to the caller
    like every other user error, instead of raising SystemExit through megazoo's main."""
    try:
        return p.parse_args(words), None
    except SystemExit as exit_:
        return None, exit_.code if isinstance(exit_.code, int) else 2


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
        if not math.isfinite(out[name]) or not 0 <= out[name] <= 1e6:
            raise CurateError(f"--{flag} {word}: needs a number in [0, 1e6]")
    return out


def _shingle(word: str) -> tuple[str, int]:
    """`char:5` or `word:5` -> (kind, size); argparse turns a ValueError into a usage error."""
    kind, _, size = word.partition(":")
    if kind not in ("char", "word") or not size.isdigit() or not 1 <= int(size) <= 1000:
        raise argparse.ArgumentTypeError(f"{word!r}: expected char:N or word:N with N in 1 to 1000 (e.g. char:5)")
    return kind, int(size)


_STAGE_OPTIONS = ("threshold", "candidate_threshold", "shingle_size", "permutations", "bands", "rows", "keep",
                  "priority", "preset", "mode", "reference", "tokenizer", "ngram", "ngram_per_task", "min_ngram",
                  "max_doc_frequency", "margin", "snap")


def _stage_config(stage: str, args) -> dict:
    import yaml

    cfg: dict = {}
    for name in _STAGE_OPTIONS:
        value = getattr(args, name, None)
        if value is not None:
            cfg[name] = value
    if getattr(args, "shingle", None) is not None:
        cfg["shingle"], cfg["shingle_size"] = args.shingle
    if stage == "blend" and getattr(args, "map", None):
        cfg["map"] = _names(args.map)
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


def _names(words: list[str]) -> dict[str, str]:
    """`NAME=SOURCE` words -> {NAME: SOURCE}."""
    out = {}
    for word in words:
        name, sep, source = word.partition("=")
        if not sep or not name or not source:
            raise CurateError(f"--map {word}: expected NAME=SOURCE (e.g. Books3=books: the preset's dataset "
                              "and the source folder that holds it)")
        out[name] = source
    return out


def _check_task_paths(a) -> None:
    """`--tasks NAME=PATH`: the policy saw `NAME=PATH` as one path; check PATH itself as an input."""
    named = [Declared("--tasks", t.partition("=")[2], PathRole("input")) for t in a.tasks
             if "=" in t and not os.path.exists(t) and t.partition("=")[2]]
    if named:
        check_paths(named, [Declared("--output", a.output, PathRole("output", "folder", resumable=True))],
                    a.overwrite)


def _executor(args, dask: dict | None = None):
    from megazoo.curate.executor import check_local_workers, make_executor

    dask = dask or {}
    scheduler = args.scheduler or dask.get("scheduler")
    workers = args.dask_workers or dask.get("workers") or None
    if workers and not scheduler:
        check_local_workers(workers, "--dask-workers" if args.dask_workers else "dask.workers")
    timeout = args.timeout if args.timeout is not None else float(dask.get("timeout", 10.0))
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

        p = _generate_parser()
        a, code = _parse(p, args.rest)
        if a is None:
            return code
        enforce(p, a)  # the output policy: refuses an existing non-empty folder without --overwrite
        with atomic_folder(a.out, overwrite=a.overwrite) as tmp:
            truth = generate(tmp, n_clean=a.clean, n_shards=a.shards, seed=a.seed)
        print(f"wrote a planted corpus (generated data) to {a.out}: {len(truth['clean'])} clean, "
              f"{len(truth['near_pairs'])} near-duplicates, {len(truth['exact_pairs'])} exact copies, "
              f"{len(truth['low_quality'])} low-quality, {len(truth['contaminated'])} contaminated")
        return 0
    if args.target in STAGES:
        from megazoo.curate.pipeline import run_stage
        from megazoo.curate.report import write_report
        from megazoo.curate.shards import list_shards

        p = _stage_parser(args.target)
        a, code = _parse(p, args.rest)
        if a is None:
            return code
        enforce(p, a)  # output = input, inside it, containing it: refused before anything is read
        if args.target == "decontaminate":
            _check_task_paths(a)
        cfg = _stage_config(args.target, a)
        list_shards(a.input)  # a missing or empty input is refused before any Dask worker starts
        executor = _executor(a)
        try:
            stats = run_stage(args.target, cfg, a.input, a.output, a.text_key, executor, not a.no_progress,
                              overwrite=a.overwrite)
        finally:
            executor.close()
        stats["folder"] = a.output
        write_report(os.path.join(a.output, "_report"), [stats], final=a.output, executor=executor.kind,
                     workers=executor.workers)
        _print_stats(stats)
        return 0
    from megazoo.curate.pipeline import run_recipe
    from megazoo.curate.recipe import load

    a, code = _parse(recipe_parser(), args.rest)
    if a is None:
        return code
    recipe = load(args.target, a.overrides, a.overwrite)  # every key and path checked before any stage runs
    executor = _executor(a, recipe["dask"])
    try:
        report = run_recipe(recipe, executor, progress=not a.no_progress, overwrite=a.overwrite)
    finally:
        executor.close()
    for stats in report["stages"]:
        _print_stats(stats)
    print(f"curated corpus: {report['final']}; report: {recipe['output']}/report.md")
    blend = [s for s in report["stages"] if s["stage"] == "blend"]
    if blend:
        print(f"data.path: {json.dumps(blend[0]['extra']['data_path'])}")
    return 0
