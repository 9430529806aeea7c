"""`megazoo task biomed data OUT_DIR [--seed N] [--ner N] [--re N] [--qa N]` (`generate` is its older name).

Writes OUT_DIR/ner (BioBERT NER TSV), OUT_DIR/re (BLUE ChemProt TSV), OUT_DIR/qa (BioASQ factoid
SQuAD-v1.1 JSON) and OUT_DIR/text (bio.txt and general.txt for vocabulary training,
heldout_terms.txt for the vocabulary report); test entity names never occur in training. The sets
are written into a scratch folder and moved into place only when complete (core.fs.atomic_folder):
an existing non-empty OUT_DIR is refused unless --overwrite, and then replaced only on success.
"""

from __future__ import annotations

import argparse

from megazoo.core.argtypes import int_in
from megazoo.core.fs import input_arg, output_arg

# the word list gives a few thousand names per kind; sizes far beyond these only repeat them
MAX_ROWS = 200_000
MAX_QA_SENTENCES = 200


def add_arguments(parser: argparse.ArgumentParser) -> None:
    output_arg(parser, "out", kind="folder", help="the folder to write ner/, re/, qa/ and text/ into")
    parser.add_argument("--seed", type=int_in(0, 2**31 - 1), default=0)
    parser.add_argument("--ner", type=int_in(8, MAX_ROWS), default=1200,
                        help=f"training sentences (dev 1/8, test 1/4 of it; 8-{MAX_ROWS})")
    parser.add_argument("--re", type=int_in(8, MAX_ROWS), default=1500,
                        help=f"training relation rows (dev 2/15, test 4/15; 8-{MAX_ROWS})")
    parser.add_argument("--qa", type=int_in(8, MAX_ROWS), default=600,
                        help=f"training questions (dev 1/6, test 1/3; 8-{MAX_ROWS})")
    parser.add_argument("--qa-sentences", type=int_in(0, MAX_QA_SENTENCES), default=6,
                        help=f"corpus sentences in a QA paragraph besides its facts (0-{MAX_QA_SENTENCES})")
    input_arg(parser, "--dictionary", kind="file", default=None,
              help="the hunspell .dic word list file (default: Debian's hunspell-en-med)")


def run(args) -> int:
    from megazoo.core.fs import atomic_folder
    from megazoo.tasks.biomed.generate import DICTIONARY, generate_biomed

    sizes = {"ner": {"train": args.ner, "dev": max(1, args.ner // 8), "test": max(1, args.ner // 4)},
             "re": {"train": args.re, "dev": max(1, args.re * 2 // 15), "test": max(1, args.re * 4 // 15)},
             "qa": {"train": args.qa, "dev": max(1, args.qa // 6), "test": max(1, args.qa // 3)}}
    with atomic_folder(args.out, getattr(args, "overwrite", False)) as tmp:
        counts = generate_biomed(tmp, args.seed, sizes, args.qa_sentences, dictionary=args.dictionary or DICTIONARY)
    for kind in ("ner", "re", "qa"):
        print(f"{kind}: " + ", ".join(f"{split} {n}" for split, n in counts[kind].items()))
    print(f"text: {counts['text']['bio_lines']} bio lines, {counts['text']['heldout_terms']} held-out terms")
    return 0
