"""`megazoo task synthetic_qa answers --data PARAGRAPHS.json --checkpoint CKPT --out FILE.json
[--top K]`: the answer extractor's top K spans per paragraph (answers.py), as SQuAD questions with
the question left empty. The data's questions, if any, are ignored: only its paragraphs are read.
"""

from __future__ import annotations

import argparse

from megazoo.core.argtypes import int_in
from megazoo.core.fs import input_arg, output_arg
from megazoo.tasks.synthetic_qa.cli_common import BATCH, MAX_BATCH

PROG = "megazoo task synthetic_qa answers"
MAX_TOP = 100  # spans per paragraph


def add_arguments(parser: argparse.ArgumentParser) -> None:
    input_arg(parser, "--data", kind="file", required=True, hf=True, help="a SQuAD-format file: its paragraphs")
    input_arg(parser, "--checkpoint", required=True, help="an answer extractor (task.kind answers) checkpoint")
    output_arg(parser, "--out", required=True, help="the candidates, SQuAD-format JSON file")
    parser.add_argument("--top", type=int_in(1, MAX_TOP), default=3,
                        help=f"candidate spans per paragraph (default 3; 1-{MAX_TOP})")
    parser.add_argument("--batch", type=BATCH, default=32, help=f"rows per forward pass (1-{MAX_BATCH})")


def run(args) -> int:
    from megazoo.tasks.synthetic_qa.answers import propose
    from megazoo.tasks.synthetic_qa.cli_common import need_file
    from megazoo.tasks.synthetic_qa.predict import Model
    from megazoo.tasks.synthetic_qa.squad import read_squad, write_squad

    paragraphs = read_squad(need_file(args.data, "--data")).paragraphs
    if not paragraphs:
        raise ValueError(f"{args.data}: holds no paragraphs")
    candidates = propose(Model(args.checkpoint, "answers"), paragraphs, args.top, args.batch)
    write_squad(args.out, paragraphs, candidates)
    print(f"{len(candidates)} candidate answers in {len(paragraphs)} paragraphs written to {args.out}")
    return 0
