"""`megazoo task biomed vocab-report --vocab [NAME=]SPEC --vocab [NAME=]SPEC ... --terms FILE --out DIR`.

SPEC is any megazoo tokenizer: a `megazoo tokenizer train` folder, bert-wordpiece, ... The first
vocabulary is the reference ("fewer subwords than" it). Writes DIR/table.md, DIR/report.json and
DIR/subwords.png (all at once: core.fs.atomic_folder), and prints the table. A SPEC that is a
folder or file is an input too: an --out that is, holds or lies inside it is refused.
"""

from __future__ import annotations

import argparse

from megazoo.core.fs import input_arg, output_arg

PROG = "megazoo task biomed vocab-report"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--vocab", action="append", required=True, metavar="[NAME=]SPEC",
                        help="a vocabulary (give two or more; the first is the reference)")
    input_arg(parser, "--terms", kind="file", required=True, help="a text file, one term per line")
    output_arg(parser, "--out", kind="folder", required=True,
               help="the folder for table.md, report.json and subwords.png")


def vocab_paths(specs: list[str]) -> list[tuple[str, str]]:
    """(name, spec) of each --vocab; the name defaults to the spec."""
    out = []
    for spec in specs:
        name, _, path = spec.rpartition("=")
        if not path:
            raise ValueError(f"--vocab {spec!r}: no tokenizer after '='; give [NAME=]SPEC, e.g. bio=runs/bio-vocab")
        if (name or path) in {n for n, _ in out}:  # a dict of vocabularies would keep only the last
            raise ValueError(f"--vocab {spec!r}: the name {name or path!r} is given twice; name each NAME=SPEC apart")
        out.append((name or path, path))
    return out


def check_vocab_inputs(vocabs: list[tuple[str, str]], out: str) -> None:
    """A vocabulary given as a path is read: the output folder must not be, hold or lie in it
    (the parser cannot declare NAME=PATH values, so they are checked here, before anything runs)."""
    import os

    from megazoo.core.fs import Declared, PathRole, check_paths

    read = [Declared("--vocab", path, PathRole("input", "any")) for _, path in vocabs if os.path.lexists(path)]
    check_paths(read, [Declared("--out", out, PathRole("output", "folder"))], overwrite=True)


def run(args) -> int:
    from megazoo.core.data.tokenizers import build_tokenizer
    from megazoo.tasks.biomed.vocab_report import compare, read_terms, table, write_report

    if len(args.vocab) < 2:
        raise ValueError("give at least two --vocab to compare")
    named = vocab_paths(args.vocab)
    check_vocab_inputs(named, args.out)
    vocabs = {name: build_tokenizer(path) for name, path in named}
    terms = read_terms(args.terms)
    rows = compare(vocabs, terms)
    files = write_report(rows, args.out, terms, getattr(args, "overwrite", False))
    print(table(rows), end="")
    print(f"written: {files['table']}, {files['json']}, {files['png']}")
    return 0
