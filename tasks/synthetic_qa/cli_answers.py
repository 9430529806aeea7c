"""`megazoo task synthetic_qa answers --data PARAGRAPHS.json --checkpoint CKPT --out FILE.json
[--top K]`: the answer extractor's top K spans per paragraph (answers.py), as SQuAD questions with
the question left empty. The data's questions, if any, are ignored: only its paragraphs are read.
"""

from __future__ import annotations

import argparse

from megazoo.core.argtypes import positive_int

PROG = "megazoo task synthetic_qa answers"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", required=True, help="a SQuAD-format file: its paragraphs")
    parser.add_argument("--checkpoint", required=True, help="an answer extractor (task.kind answers) checkpoint")
    parser.add_argument("--out", required=True, help="the candidates, SQuAD-format JSON")
    parser.add_argument("--top", type=positive_int, default=3, help="candidate spans per paragraph (default 3)")
    parser.add_argument("--batch", type=positive_int, default=32, help="rows per forward pass")


def run(args) -> int:
    from megazoo.tasks.synthetic_qa.answers import propose
    from megazoo.tasks.synthetic_qa.cli_common import errors, fail, need_file
    from megazoo.tasks.synthetic_qa.predict import Model
    from megazoo.tasks.synthetic_qa.squad import read_squad, write_squad

    try:
        paragraphs = read_squad(need_file(args.data, "--data")).paragraphs
        if not paragraphs:
            raise ValueError(f"{args.data}: holds no paragraphs")
        candidates = propose(Model(args.checkpoint, "answers"), paragraphs, args.top, args.batch)
        write_squad(args.out, paragraphs, candidates)
    except errors() as e:
        return fail(PROG, e)
    print(f"{len(candidates)} candidate answers in {len(paragraphs)} paragraphs written to {args.out}")
    return 0
