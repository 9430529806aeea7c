"""`megazoo task story label --data DIR --knowledge FILE --embedder DIR --out DIR [--candidates 4]`.

Writes ranker-train.jsonl and ranker-valid.jsonl (weak_labels.py) from DIR/train.csv and
DIR/valid.csv: each step's knowledge candidates with the weak label, the candidate closest to the
gold next sentence under the embedder (all-MiniLM-L6-v2: its HF folder or `megazoo import-hf`).
"""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from megazoo.core.argtypes import int_in
    from megazoo.core.fs import input_arg, output_arg
    from megazoo.tasks.story.cli_common import MAX_CANDIDATES, MAX_SEED, MAX_STORIES

    input_arg(parser, "--data", kind="folder", required=True, help="a folder with train.csv and valid.csv")
    input_arg(parser, "--knowledge", kind="file", required=True, hf=True,
              help="the knowledge base (ConceptNet CSV or TSV)")
    input_arg(parser, "--embedder", kind="folder", required=True,
              help="a sentence encoder folder (MiniLM or import-hf)")
    output_arg(parser, "--out", kind="folder", required=True,
               help="the folder for ranker-train.jsonl and ranker-valid.jsonl")
    parser.add_argument("--candidates", type=int_in(2, MAX_CANDIDATES), default=4,
                        help="knowledge sentences per step (4; the ranker needs two or more)")
    parser.add_argument("--stories", type=int_in(0, MAX_STORIES), default=0,
                        help="use at most this many training stories (0: all)")
    parser.add_argument("--seed", type=int_in(0, MAX_SEED), default=0)
    parser.add_argument("--keyword-extractor", choices=("rake", "yake"), default="rake",
                        help="the gold sentences' keywords, whose knowledge the candidates are: rake (the paper's, "
                             "default) or yake")


def run(args) -> int:
    from megazoo.core.fs import atomic_folder
    from megazoo.tasks.story.cli_common import need
    from megazoo.tasks.story.knowledge import KnowledgeBase
    from megazoo.tasks.story.stories import load_split
    from megazoo.tasks.story.weak_labels import label_steps, minilm_embed, ranker_steps, write_jsonl

    need(args.data, "--data", folder=True)
    kb = KnowledgeBase.load(need(args.knowledge, "--knowledge"))
    need(args.embedder, "--embedder", folder=True)
    train, valid = load_split(args.data, args.seed)
    if args.stories:
        train = train[: args.stories]
    embed = minilm_embed(args.embedder)
    counts = {}
    # written into a scratch folder that replaces --out only once both files are complete
    with atomic_folder(args.out, overwrite=args.overwrite) as out:
        for name, stories in (("train", train), ("valid", valid)):
            steps = ranker_steps(stories, kb, args.candidates, seed=args.seed, extractor=args.keyword_extractor)
            rows = label_steps(steps, embed)
            write_jsonl(out / f"ranker-{name}.jsonl", rows)
            counts[name] = len(rows)
    print(f"{counts['train']} training and {counts['valid']} validation ranker steps ({args.keyword_extractor} "
          f"keywords) written to {args.out}")
    return 0
