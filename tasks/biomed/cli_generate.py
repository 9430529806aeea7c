"""`megazoo task biomed generate OUT_DIR [--seed N] [--ner N] [--re N] [--qa N]`.

Writes OUT_DIR/ner (BioBERT NER TSV), OUT_DIR/re (BLUE ChemProt TSV), OUT_DIR/qa (BioASQ factoid
SQuAD-v1.1 JSON) and OUT_DIR/text (bio.txt and general.txt for vocabulary training,
heldout_terms.txt for the vocabulary report); test entity names never occur in training.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out", help="the folder to write ner/, re/, qa/ and text/ into")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ner", type=int, default=1200, help="training sentences (dev 1/8, test 1/4 of it)")
    parser.add_argument("--re", type=int, default=1500, help="training relation rows (dev 2/15, test 4/15)")
    parser.add_argument("--qa", type=int, default=600, help="training questions (dev 1/6, test 1/3)")
    parser.add_argument("--qa-sentences", type=int, default=6, help="corpus sentences in a QA paragraph "
                                                                     "(besides its facts)")
    parser.add_argument("--dictionary", default=None, help="the hunspell .dic word list (default: Debian's "
                                                            "hunspell-en-med)")


def run(args) -> int:
    from megazoo.tasks.biomed.generate import DICTIONARY, generate_biomed

    out = Path(args.out)
    if out.exists() and any(out.iterdir()):
        print(f"megazoo task biomed generate: error: {out} exists and is not empty; choose a new folder",
              file=sys.stderr)
        return 2
    if min(args.ner, args.re, args.qa) < 8:
        print("megazoo task biomed generate: error: --ner, --re and --qa must be at least 8", file=sys.stderr)
        return 2
    sizes = {"ner": {"train": args.ner, "dev": max(1, args.ner // 8), "test": max(1, args.ner // 4)},
             "re": {"train": args.re, "dev": max(1, args.re * 2 // 15), "test": max(1, args.re * 4 // 15)},
             "qa": {"train": args.qa, "dev": max(1, args.qa // 6), "test": max(1, args.qa // 3)}}
    try:
        counts = generate_biomed(out, args.seed, sizes, args.qa_sentences, dictionary=args.dictionary or DICTIONARY)
    except FileNotFoundError as e:
        print(f"megazoo task biomed generate: error: {e}", file=sys.stderr)
        return 2
    for kind in ("ner", "re", "qa"):
        print(f"{kind}: " + ", ".join(f"{split} {n}" for split, n in counts[kind].items()))
    print(f"text: {counts['text']['bio_lines']} bio lines, {counts['text']['heldout_terms']} held-out terms")
    return 0
