"""What the evaluate and study stages share: their common options, reading and checking the inputs
(before the model loads, so a bad file costs no model load), and running on a layout's ranks.

Errors are not caught in this process: they reach the one boundary (megazoo/cli.py), which turns a
user's mistake (SbicFormatError, SelectionError: ValueErrors; MissingFile) into one line with exit
code 2 and a failure of the machine (a full disk) into exit 1. Ranks of a tp x pp layout are past
that boundary, so eval/taskkit.on_rank reports their errors the same way."""

from __future__ import annotations

import argparse
from pathlib import Path

from megazoo.eval.readers.common import MissingFile
from megazoo.tasks.bias.data import category_names, check_category, load_posts
from megazoo.tasks.bias.selection import METHODS, check_support


# bounds of the numeric flags: generous for real use, far below what would reach the allocator
MAX_SEED = 2**32 - 1
MAX_BOOTSTRAP = 100_000  # resamples, each an AUC over the test posts
MAX_BATCH = 4096
MAX_LENGTH = 1 << 20  # tokens; the model's own context is checked once it is loaded (model.py)
MAX_RANKS = 64


class OutAction(argparse.Action):
    """--out, which also names the default score cache FILE.cache.jsonl beside it: set on `cache`
    here (unless --cache came first; a later --cache replaces it), so the output policy checks the
    cache that will really be written like any declared output."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        if getattr(namespace, "cache", None) is None:
            namespace.cache = str(default_cache(values))


def add_common(parser: argparse.ArgumentParser, also, classifier: bool = False) -> None:
    """The options evaluate and study share; `also`: the outputs written beside --out. With
    `classifier` (evaluate), --checkpoint may also be a fine-tuned classifier, which needs no --support."""
    from megazoo.core.argtypes import int_in
    from megazoo.core.fs import input_arg, output_arg

    input_arg(parser, "--data", kind="file", required=True, hf=True,
              help="the test posts: SBIC.v2.tst.csv (per annotation) or an SBIC.v2.agg.*.csv")
    input_arg(parser, "--support", kind="file", required=not classifier, hf=True,
              help="the labelled support repository (an SBIC CSV)" + (
                  "; required with a decoder, left out with a fine-tuned classifier (it was trained on its "
                  "recipe's support set)" if classifier else ""))
    input_arg(parser, "--checkpoint", kind="folder", required=True,
              help="a Hugging Face folder (config.json or one .gguf) or a megazoo checkpoint of a GPT/Llama decoder"
                   + ("; or a fine-tuned classifier: a `megazoo task bias train` run, its checkpoints/ or one "
                      "iter_*" if classifier else ""))
    output_arg(parser, "--out", kind="file", also=also, action=OutAction, required=True,
               help="FILE.json for the results")
    parser.add_argument("--category", default="offensive", help=f"one of {', '.join(category_names())}")
    parser.add_argument("--selection", default="knn", choices=METHODS,
                        help="knn: class-balanced nearest neighbours (the paper's); random, fixed: ablations")
    input_arg(parser, "--dev", kind="file", hf=True,
              help="dev posts (an SBIC CSV) to tune the decision threshold on (max F1)")
    input_arg(parser, "--embedder", kind="folder", help="the encoder folder for knn (default: the offline "
                                                        "all-MiniLM-L6-v2)")
    input_arg(parser, "--prompts", kind="file", help="a prompts YAML file (default: the package's prompts.yaml)")
    # the cache is continued, not replaced (a rerun scores only new prompts): a resumable output
    output_arg(parser, "--cache", kind="file", resumable=True,
               help="score cache (JSON lines; default FILE.cache.jsonl beside --out), continued by later runs")
    parser.add_argument("--seed", type=int_in(0, MAX_SEED), default=0, help="random/fixed draws and the bootstrap")
    parser.add_argument("--bootstrap", type=int_in(1, MAX_BOOTSTRAP), default=1000,
                        help=f"bootstrap resamples for the AUC interval (1 to {MAX_BOOTSTRAP})")
    parser.add_argument("--batch", type=int_in(1, MAX_BATCH), default=8, help="prompts per forward pass")
    parser.add_argument("--max-length", type=int_in(8, MAX_LENGTH),
                        help="the model's context in tokens (prompts keep their end; at most the model's own)")
    parser.add_argument("--tp", type=int_in(1, MAX_RANKS), default=1,
                        help="tensor-parallel ranks (megazoo's model; local ranks)")
    parser.add_argument("--pp", type=int_in(1, MAX_RANKS), default=1,
                        help="pipeline stages (megazoo's model; local ranks)")


def default_cache(out) -> Path:
    return Path(f"{stem(out)}.cache.jsonl")


def stem(out) -> Path:
    out = Path(out)
    return out.with_suffix("") if out.suffix == ".json" else out


def read_inputs(args, shots: list[int]) -> dict:
    """Posts and settings checked before any model is loaded."""
    category = check_category(args.category)
    if args.batch < 1:
        raise ValueError(f"--batch must be >= 1, got {args.batch}")
    if args.bootstrap < 1:
        raise ValueError(f"--bootstrap must be >= 1, got {args.bootstrap}")
    for name in ("tp", "pp"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name} must be at least 1, got {getattr(args, name)}")
    if args.support is None:
        raise ValueError(f"--support is required with a decoder checkpoint ({args.checkpoint}): the labelled "
                         f"support repository (an SBIC CSV) the prompts draw their exemplars from")
    test, dev = read_test_dev(args, category)
    support = load_posts(args.support, category)
    for k in shots:
        check_support([p.label for p in support], k, args.selection)
    if not Path(args.checkpoint).is_dir():
        raise MissingFile(f"--checkpoint {args.checkpoint}: no such folder (give a Hugging Face folder or a "
                                f"megazoo checkpoint of a GPT/Llama decoder)")
    from megazoo.tasks.bias.classifier import classifier_settings

    if classifier_settings(args.checkpoint) is not None:  # evaluate took it already: this is the study
        raise ValueError(f"--checkpoint {args.checkpoint}: a fine-tuned bias classifier; the study varies the "
                         f"prompts' support set and needs a decoder (score the classifier with `megazoo task bias "
                         f"evaluate --checkpoint {args.checkpoint}`)")
    from megazoo.tasks.bias.prompts import load_template

    return {"category": category, "test": test, "support": support, "dev": dev,
            "template": load_template(category, args.prompts)}


def read_test_dev(args, category: str) -> tuple[list, list | None]:
    """The test posts and the dev posts (None without --dev), each with both classes (ROC-AUC)."""
    test = load_posts(args.data, category)
    dev = load_posts(args.dev, category) if args.dev else None
    for name, posts in (("--data", test), ("--dev", dev)):
        if posts is not None and len({p.label for p in posts}) < 2:
            raise ValueError(f"{name} {getattr(args, name[2:])}: all {len(posts)} posts have label "
                             f"{posts[0].label} for {category}; ROC-AUC needs both classes")
    return test, dev


def read_classifier_inputs(args, trained: dict) -> dict:
    """The checks of an evaluation by a fine-tuned classifier (one process, no prompts), before it
    loads; `trained`: the task settings in its checkpoint (classifier.classifier_settings)."""
    from megazoo.tasks.bias import classifier

    category = check_category(args.category)
    classifier.check_category(args.checkpoint, trained, category)
    if args.support is not None:
        raise ValueError(f"--support {args.support}: --checkpoint {args.checkpoint} is a fine-tuned classifier, "
                         f"trained on its recipe's support set; leave --support out")
    if args.tp != 1 or args.pp != 1:
        raise ValueError(f"--tp/--pp split a decoder; the fine-tuned classifier {args.checkpoint} is evaluated in "
                         f"one process: leave them out")
    test, dev = read_test_dev(args, category)
    return {"category": category, "test": test, "dev": dev}


def load_runtime(args, inputs: dict, need_embedder: bool, ctx=None) -> dict:
    """The language model (this rank's share of it when `ctx` is a multi-rank layout), the support
    repository (embedded when knn needs it) and the cache."""
    from megazoo.tasks.bias.model import load_layout_lm, load_lm, model_key
    from megazoo.tasks.bias.pipeline import Repository
    from megazoo.tasks.bias.scoring import ScoreCache

    embedder = None
    if need_embedder:
        from megazoo.zoo.assets import default_embedder_dir
        from megazoo.zoo.embed import Embedder

        embedder = Embedder(args.embedder or default_embedder_dir())
    if ctx is None:
        lm = load_lm(args.checkpoint, args.max_length)
    else:
        lm = load_layout_lm(args.checkpoint, ctx, args.max_length)
    cache = ScoreCache(args.cache or default_cache(args.out), model_key(args.checkpoint),
                       write=ctx is None or ctx.rank == 0)
    return {"lm": lm, "support": Repository(inputs["support"], embedder), "cache": cache}
