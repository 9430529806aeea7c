"""`megazoo task biomed vocab-report --vocab [NAME=]SPEC --vocab [NAME=]SPEC ... --terms FILE --out DIR`.

SPEC is any megazoo tokenizer: a `megazoo tokenizer train` folder, bert-wordpiece, ... The first
vocabulary is the reference ("fewer subwords than" it). Writes DIR/table.md, DIR/report.json and
DIR/subwords.png, and prints the table.
"""

from __future__ import annotations

import argparse
import sys

PROG = "megazoo task biomed vocab-report"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--vocab", action="append", required=True, metavar="[NAME=]SPEC",
                        help="a vocabulary (give two or more; the first is the reference)")
    parser.add_argument("--terms", required=True, help="a text file, one term per line")
    parser.add_argument("--out", required=True, help="the folder for table.md, report.json and subwords.png")


def run(args) -> int:
    from megazoo.core.data.errors import DataError
    from megazoo.core.data.tokenizers import build_tokenizer
    from megazoo.tasks.biomed.vocab_report import compare, read_terms, table, write_report

    try:
        if len(args.vocab) < 2:
            raise ValueError("give at least two --vocab to compare")
        vocabs = {}
        for spec in args.vocab:
            name, _, path = spec.rpartition("=")
            vocabs[name or path] = build_tokenizer(path)
        terms = read_terms(args.terms)
        rows = compare(vocabs, terms)
        files = write_report(rows, args.out, terms)
    except (ValueError, DataError, OSError) as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    print(table(rows), end="")
    print(f"written: {files['table']}, {files['json']}, {files['png']}")
    return 0
