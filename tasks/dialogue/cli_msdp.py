"""`megazoo task dialogue msdp --stage knowledge|response --data FILE --checkpoint CKPT --out FILE.jsonl`

Multi-stage prompting of a frozen decoder (msdp.py). --data: the samples to answer (flattened TSV, WoW
.json, ...); --examples: the training samples the prompts' examples come from (default train.tsv or
train.json beside --data). Stage response reads --knowledge: the knowledge stage's FILE.jsonl,
`gold` (the data's own knowledge, an upper bound) or `none` (the baseline prompted without knowledge).
Writes one {"line", "text"} per sample, in data order (`evaluate --generations` reads it).
"""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from megazoo.core.argtypes import int_in
    from megazoo.core.fs import input_arg, output_arg
    from megazoo.tasks.dialogue.stage import MAX_BATCH, MAX_ITEMS, MAX_NEW_TOKENS, MAX_SEED, MAX_SHOTS

    parser.add_argument("--stage", required=True, choices=("knowledge", "response"))
    input_arg(parser, "--data", kind="file", required=True, help="the samples: flattened TSV, WoW .json or .jsonl")
    input_arg(parser, "--checkpoint", required=True, help="the frozen decoder (import-hf folder, HF folder, "
                                                          "training checkpoint)")
    output_arg(parser, "--out", kind="file", also=lambda out: [prompt_path(out)], required=True,
               help="FILE.jsonl: one {line, text} per sample, in data order (and the first prompt in FILE.prompt.txt)")
    input_arg(parser, "--examples", kind="file", help="training samples for the prompts' examples (default "
                                                      "train.tsv or train.json beside --data)")
    # a path, or the words gold / none (a missing path is not checked by the policy: nothing to protect)
    input_arg(parser, "--knowledge", kind="file",
              help="stage response: the knowledge stage's FILE.jsonl, gold or none")
    input_arg(parser, "--embedder", kind="folder", help="sentence encoder folder for example selection (default the "
                                                        "offline all-MiniLM-L6-v2)")
    parser.add_argument("--shots", type=int_in(1, MAX_SHOTS),
                        help="examples per prompt (default 10 knowledge, 20 response)")
    parser.add_argument("--max-new-tokens", type=int_in(1, MAX_NEW_TOKENS), default=64)
    parser.add_argument("--batch", type=int_in(1, MAX_BATCH), default=4)
    parser.add_argument("--limit", type=int_in(1, MAX_ITEMS), help="only the first N samples")
    parser.add_argument("--seed", type=int_in(0, MAX_SEED), default=0,
                        help="the order the fixed response examples are drawn in")


def prompt_path(out):
    """FILE.prompt.txt beside FILE.jsonl: the first prompt as the model saw it."""
    from pathlib import Path

    return Path(out).with_suffix(".prompt.txt")


def _examples_path(args):
    from pathlib import Path

    from megazoo.eval.readers.common import MissingFile

    if args.examples:
        return Path(args.examples)
    folder = Path(args.data).parent
    for name in ("train.tsv", "train.json", "train.jsonl"):
        if (folder / name).is_file():
            return folder / name
    raise MissingFile(f"no --examples given and no train.tsv / train.json beside {args.data}; give --examples FILE")


def _embedder(folder):
    from megazoo.zoo.assets import default_embedder_dir
    from megazoo.zoo.embed import Embedder

    emb = Embedder(folder or default_embedder_dir())
    return lambda texts: emb.encode(list(texts), pooling="mean", normalize=True)


def _knowledge(args, samples) -> list[str] | None:
    from megazoo.tasks.dialogue.evaluate import read_generations

    if args.knowledge is None:
        raise ValueError("--stage response needs --knowledge FILE.jsonl (the knowledge stage's output), gold or none")
    if args.knowledge == "none":
        return None
    if args.knowledge == "gold":
        return [s.knowledge for s in samples]
    return read_generations(args.knowledge, len(samples), args.data)


def run(args) -> int:
    import json
    from pathlib import Path

    from megazoo.core.fs import write_text_atomic
    from megazoo.eval.taskkit import load_decoder
    from megazoo.tasks.dialogue import msdp
    from megazoo.tasks.dialogue.data import read_any
    from megazoo.tasks.dialogue.decode import greedy_lines

    samples = read_any(args.data)[: args.limit]
    pool = read_any(_examples_path(args))
    if args.stage == "knowledge":
        prompts = msdp.knowledge_prompts(samples, pool, _embedder(args.embedder), args.shots or msdp.KNOWLEDGE_SHOTS)
    else:
        examples = msdp.response_examples(pool, args.shots or msdp.RESPONSE_SHOTS, args.seed)
        prompts = msdp.response_prompts(samples, _knowledge(args, samples), examples)
    model, tok = load_decoder(args.checkpoint, use="dialogue generation")

    def progress(done, total):
        print(f"\r{args.stage}: {done}/{total}", end="", file=sys.stderr, flush=True)

    texts = greedy_lines(model, tok, prompts, args.max_new_tokens, args.batch, progress)
    print(file=sys.stderr)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out, "".join(json.dumps({**s.where, "text": t}) + "\n" for s, t in zip(samples, texts)))
    if prompts:  # the first prompt as the model saw it, to read
        write_text_atomic(prompt_path(out), prompts[0] + "\n")
    print(f"{len(texts)} {args.stage} generations written to {out}")
    return 0
