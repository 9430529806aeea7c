"""`megazoo task detox sample --checkpoint CKPT --out FILE.jsonl [--samples N] [--max-new-tokens 1000]
[--top-p 0.9] [--temperature 1.0] [--prompts FILE] [--batch 8] [--seed 0] [--tp T --pp P]`

SGEAT's self-generation: N samples of the model itself, unconditional (from the end-of-document token,
as Megatron's selfgenerate-*-unconditional.sh) or, with --prompts (a RealToxicityPrompts-format file or
JSON lines with "text"), sample i continues prompt i mod P. One record a line,
{"id", "text", "tokens"[, "prompt"]}, appended batch by batch with a progress bar; run the same command
again after a kill and it continues where the last complete batch ended (stream.py). The output is
resumable (an existing one written by this stage with the same settings is continued); one written
with other settings, or not by this stage, is refused, and with --overwrite replaced once the new
samples are complete. It may never be an input (core/fs/policy.py).
"""

from __future__ import annotations

import argparse

from megazoo.core.argtypes import int_in
from megazoo.core.fs import input_arg, output_arg

PROG = "megazoo task detox sample"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from megazoo.tasks.detox.stage import add_sampling

    from megazoo.tasks.detox.stream import meta_path

    input_arg(parser, "--checkpoint", kind="any", required=True,
              help="a megazoo checkpoint or Hugging Face folder (decoder)")
    output_arg(parser, "--out", kind="file", required=True, resumable=True, also=lambda p: [meta_path(p)],
               help="FILE.jsonl of samples (resumed when it exists; its settings in FILE.jsonl.meta.json)")
    # SGEAT self-generates 100k samples; the row list is held in memory (a pointer a row)
    parser.add_argument("--samples", type=int_in(1, 10_000_000), default=100, help="how many samples in all "
                                                                                    "(default 100)")
    input_arg(parser, "--prompts", kind="file", hf=True,
              help="prompted self-generation: prompts.jsonl (prompt.text) or {\"text\"} lines")
    add_sampling(parser, max_new_tokens=1000, batch=8)


def read_prompt_texts(path) -> list[str]:
    from megazoo.eval.readers.common import LineError, read_jsonl
    from megazoo.tasks.detox import data_hf

    if data_hf.is_hf_source(path):  # allenai/real-toxicity-prompts as a Hugging Face dataset
        return [p.text for p in data_hf.iter_prompts_hf(path)]
    out = []
    for n, rec in read_jsonl(path, "prompts, one {\"prompt\": {\"text\"}} or {\"text\"} object a line", LineError):
        text = rec.get("prompt", {}).get("text") if isinstance(rec.get("prompt"), dict) else rec.get("text")
        if not isinstance(text, str):
            raise LineError(path, n, "no `prompt.text` (or `text`) in the line")
        out.append(text)
    return out


def plan(args) -> dict:
    """Checked settings and the rows, and where a resumed file continues (before any model loads)."""
    from megazoo.tasks.detox.stage import check_checkpoint, sampling
    from megazoo.tasks.detox.stream import resume_point

    s = sampling(args)
    if args.samples < 1:
        raise ValueError(f"--samples must be at least 1, got {args.samples}")
    check_checkpoint(args.checkpoint)
    texts = read_prompt_texts(args.prompts) if args.prompts else None
    prompts = [texts[i % len(texts)] for i in range(args.samples)] if texts else [None] * args.samples
    start = resume_point(args.out, s, prompts, args.checkpoint, overwrite=args.overwrite)
    return {"sampling": s, "prompts": prompts, "start": start or 0, "replace": start is None}


def run(args) -> int:
    from megazoo.core.parallel.launch import run_layout

    p = plan(args)
    if p["start"] >= args.samples:
        print(f"{args.out}: all {args.samples} samples are there")
        return 0
    if p["start"]:
        print(f"{args.out}: resuming after {p['start']} samples")
    if p["replace"]:
        print(f"{args.out}: written with other settings or not by this stage; replaced once the new samples are "
              f"complete (--overwrite)")
    payload = {k: v for k, v in vars(args).items() if k != "func"}
    payload.update(start=p["start"], prompts=p["prompts"], replace=p["replace"])
    return run_layout(payload, sample_here, PROG)


def sample_here(payload: dict, ctx) -> int:
    """The samples in this process (ctx None) or on one rank of a tp x pp layout; rank 0 writes."""
    from megazoo.eval.taskkit import on_rank

    return on_rank(PROG, ctx, lambda: _sample(argparse.Namespace(**payload), ctx))


def _sample(args, ctx) -> int:
    from megazoo.tasks.detox.stage import write_generations

    records = [{"prompt": p} if p is not None else {} for p in args.prompts]
    if write_generations(args, ctx, args.prompts, records, args.out):
        print(f"{args.samples} samples in {args.out}")
    return 0
