"""`megazoo task story label --data DIR --knowledge FILE --embedder DIR --out DIR [--candidates 4]`.

Writes ranker-train.jsonl and ranker-valid.jsonl (weak_labels.py) from DIR/train.csv and
DIR/valid.csv: each step's knowledge candidates with the weak label, the candidate closest to the
gold next sentence under the embedder (all-MiniLM-L6-v2: its HF folder or `megazoo import-hf`).
"""

from __future__ import annotations

import argparse

from megazoo.core.argtypes import positive_int

PROG = "megazoo task story label"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", required=True, help="a folder with train.csv and valid.csv")
    parser.add_argument("--knowledge", required=True, help="the knowledge base (ConceptNet CSV or TSV)")
    parser.add_argument("--embedder", required=True, help="a sentence encoder (MiniLM folder or import-hf)")
    parser.add_argument("--out", required=True, help="the folder for ranker-train.jsonl and ranker-valid.jsonl")
    parser.add_argument("--candidates", type=positive_int, default=4, help="knowledge sentences per step (4)")
    parser.add_argument("--stories", type=int, default=0, help="use at most this many training stories (0: all)")
    parser.add_argument("--seed", type=int, default=0)


def run(args) -> int:
    from pathlib import Path

    from megazoo.tasks.story.cli_common import errors, fail, need
    from megazoo.tasks.story.knowledge import KnowledgeBase
    from megazoo.tasks.story.stories import load_split
    from megazoo.tasks.story.weak_labels import label_steps, minilm_embed, ranker_steps, write_jsonl

    try:
        need(args.data, "--data", folder=True)
        kb = KnowledgeBase.load(need(args.knowledge, "--knowledge"))
        need(args.embedder, "--embedder", folder=True)
        train, valid = load_split(args.data, args.seed)
        if args.stories:
            train = train[: args.stories]
        embed = minilm_embed(args.embedder)
        counts = {}
        for name, stories in (("train", train), ("valid", valid)):
            rows = label_steps(ranker_steps(stories, kb, args.candidates, seed=args.seed), embed)
            write_jsonl(Path(args.out) / f"ranker-{name}.jsonl", rows)
            counts[name] = len(rows)
    except errors() as e:
        return fail(PROG, e)
    print(f"{counts['train']} training and {counts['valid']} validation ranker steps written to {args.out}")
    return 0
