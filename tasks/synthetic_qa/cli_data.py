"""`megazoo task synthetic_qa data OUT_DIR [--seed N] [--bootstrap handwritten|templates|both]
[--qg-input paragraph|sentence]`: the pipeline's offline data (generate.py); the question
generator's pairs in qg.jsonl are written in the --qg-input layout (prompts.py), recorded in each
pair, and `sample` must be given the same. The files are written into a scratch folder beside OUT_DIR
and moved into place only when complete (core.fs.atomic_folder): an existing non-empty OUT_DIR is
refused unless --overwrite, and then replaced only once the new files are complete."""

from __future__ import annotations

import argparse

from megazoo.core.argtypes import int_in
from megazoo.core.fs import output_arg
from megazoo.tasks.synthetic_qa.cli_common import SEED
from megazoo.tasks.synthetic_qa.prompts import QG_INPUTS

PROG = "megazoo task synthetic_qa data"
MAX_PARAGRAPHS = 100_000  # the embedded corpus has a few thousand paragraphs: more is "all of them"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    output_arg(parser, "out", kind="folder",
               help="the folder to write train.json, qg.jsonl, paragraphs.json, dev.json into")
    parser.add_argument("--seed", type=SEED, default=0, help="the paragraph shuffle")
    parser.add_argument("--bootstrap", choices=("handwritten", "templates", "both"), default="handwritten",
                        help="what the answer extractor, question generator and filter train on: the package's "
                             "hand-written questions (default), template questions, or both")
    parser.add_argument("--qg-input", choices=QG_INPUTS, default=QG_INPUTS[0],
                        help="the layout of the question generator's training prompts: paragraph, the whole "
                             "paragraph with the answer marked <answer>...</answer> (default, Puri et al.), or "
                             "sentence, the answer's sentence; give `sample` the same")
    parser.add_argument("--train-paragraphs", type=int_in(1, MAX_PARAGRAPHS), default=400,
                        help=f"paragraphs with template questions (at most; 1-{MAX_PARAGRAPHS})")
    parser.add_argument("--text-paragraphs", type=int_in(1, MAX_PARAGRAPHS), default=600,
                        help=f"paragraphs for synthetic data (1-{MAX_PARAGRAPHS})")


def run(args) -> int:
    from megazoo.core.fs import atomic_folder
    from megazoo.tasks.synthetic_qa.generate import generate

    with atomic_folder(args.out, getattr(args, "overwrite", False)) as tmp:
        counts = generate(tmp, args.seed, args.train_paragraphs, args.text_paragraphs, args.bootstrap,
                          getattr(args, "qg_input", QG_INPUTS[0]))
    print(f"wrote {args.out}: " + ", ".join(f"{k} {v}" for k, v in counts.items()) + " (generated data)")
    return 0
