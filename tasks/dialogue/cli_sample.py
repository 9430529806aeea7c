"""`megazoo task dialogue sample --data FILE.jsonl --checkpoint CKPT --kind actor|knowledge --out FILE.jsonl
[--references FILE.jsonl] [--documents DIR] [--without]`

Greedy responses (up to the first newline or end of document) of a fine-tuned model to every turn after the
first of held-out conversations, in the order `evaluate --data FILE.jsonl` reads them: one {"line", "text"}
per response; FILE.conditioning.json beside it records what the prompts held (respond.conditioning).
"""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from megazoo.core.argtypes import int_in
    from megazoo.core.fs import output_arg
    from megazoo.tasks.dialogue.respond import add_pair_arguments
    from megazoo.tasks.dialogue.stage import MAX_BATCH, MAX_NEW_TOKENS

    add_pair_arguments(parser)
    output_arg(parser, "--out", kind="file", required=True, help="FILE.jsonl of responses")
    parser.add_argument("--max-new-tokens", type=int_in(1, MAX_NEW_TOKENS), default=48)
    parser.add_argument("--batch", type=int_in(1, MAX_BATCH), default=8)


def run(args) -> int:
    import json
    from pathlib import Path

    from megazoo.core.fs import write_text_atomic
    from megazoo.eval.taskkit import load_decoder
    from megazoo.tasks.dialogue.decode import greedy_lines
    from megazoo.tasks.dialogue.respond import conditioning, pairs_of, settings_of

    settings = settings_of(args)
    pairs = pairs_of(args, settings)
    model, tok = load_decoder(args.checkpoint, use="dialogue generation")
    texts = greedy_lines(model, tok, [p.prompt for p in pairs], args.max_new_tokens, args.batch)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out, "".join(json.dumps({"line": p.line, "text": t}) + "\n" for p, t in zip(pairs, texts)))
    record = {"kind": args.kind, "without": args.without, "conditioning": conditioning(settings)}
    write_text_atomic(out.with_suffix(".conditioning.json"), json.dumps(record, indent=1) + "\n")
    print(f"{len(texts)} responses written to {out}")
    return 0
