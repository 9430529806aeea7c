"""`megazoo task dialogue perplexity --data FILE.jsonl --checkpoint CKPT --kind actor|knowledge --out FILE.json
[--references FILE.jsonl] [--documents DIR] [--without]`

The perplexity of held-out responses (respond.py): with the speaker's persona reference or the retrieved
knowledge in the prompt, or --without it. Writes {"task", "kind", "without", "perplexity", "nll", "tokens", "n"}.
"""

from __future__ import annotations

import argparse

PROG = "megazoo task dialogue perplexity"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from megazoo.core.fs import output_arg
    from megazoo.tasks.dialogue.respond import add_pair_arguments

    add_pair_arguments(parser)
    output_arg(parser, "--out", kind="file", required=True, help="FILE.json for the figures")


def run(args) -> int:
    from pathlib import Path

    import torch

    from megazoo.core.fs import write_json_atomic
    from megazoo.tasks.dialogue.decode import load_decoder
    from megazoo.tasks.dialogue.respond import pairs_of, response_perplexity
    from megazoo.tasks.dialogue.stage import ERRORS, fail

    try:
        pairs = pairs_of(args)
        model, tok = load_decoder(args.checkpoint)
    except ERRORS as e:
        return fail(PROG, e)
    with torch.inference_mode():
        figures = response_perplexity(model, tok, pairs)
    record = {"task": "dialogue", "kind": args.kind, "without": args.without, **figures,
              "checkpoint": str(args.checkpoint), "data": str(args.data)}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out, record, indent=2)
    print(f"perplexity {figures['perplexity']:.3f} over {figures['tokens']} response tokens ({figures['n']} responses)"
          f"{' without' if args.without else ' with'} {'the reference' if args.kind == 'actor' else 'knowledge'}")
    return 0
