"""`megazoo task dialogue perplexity --data FILE.jsonl --checkpoint CKPT --kind actor|knowledge --out FILE.json
[--references FILE.jsonl] [--reference-unit conversation|turn] [--documents DIR] [--links PATH]
[--user-history N] [--without]`

The perplexity of held-out responses (respond.py): with the speaker's persona reference (whole previous
conversations or single turns) or the local knowledge (document set, linked documents, user history)
in the prompt, or --without it. Writes the evaluation record of every task (eval/taskkit.py):
{"task", "n" (responses), "metrics": {"perplexity", "nll"}, "tokens", "kind", "without", "conditioning"
(what the prompts held, respond.conditioning), "checkpoint", "data"}.
"""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from megazoo.core.fs import output_arg
    from megazoo.tasks.dialogue.respond import add_pair_arguments

    add_pair_arguments(parser)
    output_arg(parser, "--out", kind="file", required=True, help="FILE.json for the figures")


def run(args) -> int:
    from pathlib import Path

    import torch

    from megazoo.core.fs import write_json_atomic
    from megazoo.eval.taskkit import evaluation_record, load_decoder
    from megazoo.tasks.dialogue.respond import conditioning, pairs_of, response_perplexity, settings_of

    settings = settings_of(args)
    pairs = pairs_of(args, settings)
    model, tok = load_decoder(args.checkpoint, use="dialogue perplexity")
    with torch.inference_mode():
        figures = response_perplexity(model, tok, pairs)
    record = evaluation_record("dialogue", figures["n"], {"perplexity": figures["perplexity"], "nll": figures["nll"]},
                               tokens=figures["tokens"], kind=args.kind, without=args.without,
                               conditioning=conditioning(settings), checkpoint=str(args.checkpoint), data=str(args.data))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out, record, indent=2)
    print(f"perplexity {figures['perplexity']:.3f} over {figures['tokens']} response tokens ({figures['n']} responses)"
          f"{' without' if args.without else ' with'} {'the reference' if args.kind == 'actor' else 'knowledge'}")
    return 0
