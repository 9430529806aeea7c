"""What the evaluate and study stages share: their common options, reading and checking the inputs
(before the model loads, so a bad file costs no model load), and writing the outputs."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from megazoo.tasks.bias.data import category_names, check_category, load_posts
from megazoo.tasks.bias.selection import METHODS, check_support

# the user's mistakes (SbicFormatError and SelectionError are ValueErrors): one line, exit 2; other OSErrors
# (a full disk) go to megazoo.cli's error boundary (exit 1)
ERRORS = (ValueError, FileNotFoundError)


def add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", required=True, help="the test posts: SBIC.v2.tst.csv (per annotation) or an "
                                                      "SBIC.v2.agg.*.csv")
    parser.add_argument("--support", required=True, help="the labelled support repository (an SBIC CSV)")
    parser.add_argument("--checkpoint", required=True, help="a Hugging Face folder (config.json or one .gguf) or a "
                                                            "megazoo checkpoint of a GPT/Llama decoder")
    parser.add_argument("--out", required=True, help="FILE.json for the results")
    parser.add_argument("--category", default="offensive", help=f"one of {', '.join(category_names())}")
    parser.add_argument("--selection", default="knn", choices=METHODS,
                        help="knn: class-balanced nearest neighbours (the paper's); random, fixed: ablations")
    parser.add_argument("--dev", help="dev posts (an SBIC CSV) to tune the decision threshold on (max F1)")
    parser.add_argument("--embedder", help="the encoder for knn (default: the offline all-MiniLM-L6-v2)")
    parser.add_argument("--prompts", help="a prompts YAML (default: the package's prompts.yaml)")
    parser.add_argument("--cache", help="score cache (JSON lines; default FILE.cache.jsonl beside --out)")
    parser.add_argument("--seed", type=int, default=0, help="random/fixed draws and the bootstrap")
    parser.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples for the AUC interval")
    parser.add_argument("--batch", type=int, default=8, help="prompts per forward pass")
    parser.add_argument("--max-length", type=int, help="the model's context in tokens (prompts keep their end)")
    parser.add_argument("--tp", type=int, default=1, help="tensor-parallel ranks (megazoo's model; local ranks)")
    parser.add_argument("--pp", type=int, default=1, help="pipeline stages (megazoo's model; local ranks)")


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
    test = load_posts(args.data, category)
    support = load_posts(args.support, category)
    dev = load_posts(args.dev, category) if args.dev else None
    for k in shots:
        check_support([p.label for p in support], k, args.selection)
    for name, posts in (("--data", test), ("--dev", dev)):
        if posts is not None and len({p.label for p in posts}) < 2:
            raise ValueError(f"{name} {getattr(args, name[2:])}: all {len(posts)} posts have label "
                             f"{posts[0].label} for {category}; ROC-AUC needs both classes")
    if not Path(args.checkpoint).is_dir():
        raise FileNotFoundError(f"--checkpoint {args.checkpoint}: no such folder (give a Hugging Face folder or a "
                                f"megazoo checkpoint of a GPT/Llama decoder)")
    from megazoo.tasks.bias.prompts import load_template

    return {"category": category, "test": test, "support": support, "dev": dev,
            "template": load_template(category, args.prompts)}


def load_runtime(args, inputs: dict, need_embedder: bool, ctx=None) -> dict:
    """The language model (this rank's share of it when `ctx` is a multi-rank layout), the support
    repository (embedded when knn needs it) and the cache."""
    from megazoo.tasks.bias.model import load_layout_lm, load_lm, model_key
    from megazoo.tasks.bias.pipeline import Repository
    from megazoo.tasks.bias.scoring import ScoreCache

    embedder = None
    if need_embedder:
        from megazoo.tasks.bias.selection import default_embedder_dir
        from megazoo.zoo.embed import Embedder

        embedder = Embedder(args.embedder or default_embedder_dir())
    if ctx is None:
        lm = load_lm(args.checkpoint, args.max_length)
    else:
        lm = load_layout_lm(args.checkpoint, ctx, args.max_length)
    cache = ScoreCache(args.cache or f"{stem(args.out)}.cache.jsonl", model_key(args.checkpoint),
                       write=ctx is None or ctx.rank == 0)
    return {"lm": lm, "support": Repository(inputs["support"], embedder), "cache": cache}


def write_json(path, record: dict) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(record, indent=2) + "\n")
    os.replace(tmp, path)
    return path


def write_predictions(path, predictions: list[dict]) -> Path:
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        for p in predictions:
            f.write(json.dumps({"post": p["post"], "label": p["label"], "score": p["score"]}) + "\n")
    os.replace(tmp, path)
    return path
