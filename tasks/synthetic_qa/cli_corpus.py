"""`megazoo task synthetic_qa corpus --model DECODER --prompts FILE --out FILE.json [--source FILE ...]
[--per-prompt N] [--top-p P] [--min-words N] [--max-words N] [--max-new-tokens N] [--seed N]
[--dtype fp32|bf16]`: the synthetic corpus (Puri et al.: the paragraphs are sampled from a GPT, not
supplied). The decoder (any checkpoint eval/taskkit.load_decoder opens: a training run, an
import-hf folder, a Hugging Face folder or one .gguf such as SmolLM2's) continues each title or
opening of the prompt file (corpus.py says the two accepted layouts) N times with nucleus sampling;
each sample is cut and filtered (corpus_filter.py: the word limits, dedup against every --source
and among the samples) and the kept ones are written in SQuAD layout with no questions,
`{"version": "1.1", "data": [{"title", "paragraphs": [{"context", "qas": []}]}]}`, one article per
prompt (its title, or `prompt-LINE` for an untitled opening), which the answers stage reads as it
is. The counts (every drop by its reason) and the settings go to FILE.counts.json.
"""

from __future__ import annotations

import argparse

from megazoo.core.argtypes import float_in, int_in, probability
from megazoo.core.fs import input_arg, output_arg
from megazoo.tasks.synthetic_qa.cli_common import BATCH, MAX_BATCH, SEED, counts_path

PROG = "megazoo task synthetic_qa corpus"
MAX_PER_PROMPT = 1000
MAX_WORDS = 10_000
MAX_NEW_TOKENS = 8192


def add_arguments(parser: argparse.ArgumentParser) -> None:
    input_arg(parser, "--model", required=True, help="the decoder: a training run or checkpoint, an import-hf folder "
                                                     "or a Hugging Face folder (config.json and weights, or a .gguf)")
    input_arg(parser, "--prompts", kind="file", required=True,
              help="titles or openings: a text file, one per line, or JSON lines {title, opening|text}")
    output_arg(parser, "--out", required=True, also=lambda p: [counts_path(p)],
               help="the corpus, SQuAD-format JSON file without questions (counts go to FILE.counts.json)")
    input_arg(parser, "--source", action="append", default=[], hf=True,
              help="text to dedup against (repeatable): a SQuAD .json file (its contexts) or a plain text file; "
                   "a paragraph sharing an --ngram-word n-gram with it is dropped")
    parser.add_argument("--per-prompt", type=int_in(1, MAX_PER_PROMPT), default=1,
                        help=f"paragraphs sampled per prompt (default 1; 1-{MAX_PER_PROMPT})")
    parser.add_argument("--top-p", type=probability, default=0.9, help="nucleus sampling (default 0.9)")
    parser.add_argument("--temperature", type=float_in(1e-3, 100.0), default=1.0, help="0.001-100 (default 1)")
    parser.add_argument("--min-words", type=int_in(1, MAX_WORDS), default=30,
                        help="drop a paragraph shorter than this after the cut (default 30 words)")
    parser.add_argument("--max-words", type=int_in(1, MAX_WORDS), default=150,
                        help="cut a longer paragraph to this many words, then at its last full sentence (default 150)")
    parser.add_argument("--max-new-tokens", type=int_in(1, MAX_NEW_TOKENS), default=256,
                        help=f"tokens sampled at most per paragraph (default 256; 1-{MAX_NEW_TOKENS})")
    parser.add_argument("--ngram", type=int_in(1, 1000), default=13,
                        help="the n-gram length of the source check (default 13, GPT-3/MT-NLG decontamination)")
    parser.add_argument("--near-duplicate", type=probability, default=0.8,
                        help="drop a paragraph whose word 5-gram Jaccard similarity with a kept one is at least "
                             "this (default 0.8; 1: identical 5-gram sets only)")
    parser.add_argument("--batch", type=BATCH, default=16, help=f"sequences per generate call (1-{MAX_BATCH})")
    parser.add_argument("--seed", type=SEED, default=0)
    parser.add_argument("--dtype", choices=("fp32", "bf16"), default="fp32",
                        help="bf16 halves the sampling time on CPUs with native bf16 (avx512_bf16/amx) and GPUs")


def run(args) -> int:
    from megazoo.core.fs import write_json_atomic
    from megazoo.tasks.synthetic_qa.cli_common import need_file
    from megazoo.tasks.synthetic_qa.corpus import read_prompts, sample_paragraphs
    from megazoo.tasks.synthetic_qa.corpus_filter import REASONS, SourceIndex, select
    from megazoo.tasks.synthetic_qa.squad import write_squad

    if args.min_words > args.max_words:
        raise ValueError(f"--min-words {args.min_words} is above --max-words {args.max_words}: every paragraph would "
                         f"be dropped; give a --min-words of at most --max-words")
    prompts = read_prompts(need_file(args.prompts, "--prompts"))
    source = None
    if args.source:
        source = SourceIndex(args.ngram)
        for path in args.source:
            source.add_file(need_file(path, "--source"))
    import torch

    from megazoo.tasks.synthetic_qa.questions import load_decoder

    model, tokenizer = load_decoder(args.model, torch.bfloat16 if args.dtype == "bf16" else None)
    sampled = sample_paragraphs(model, tokenizer, [p.text() for p in prompts], args.per_prompt, args.top_p,
                                args.temperature, args.max_new_tokens, args.batch, args.seed, progress=True)
    flat = [(p, text) for p, texts in zip(prompts, sampled) for text in texts]
    kept, counts = select([text for _, text in flat], args.min_words, args.max_words, source, args.near_duplicate)
    paragraphs = [(flat[i][0].title or f"prompt-{flat[i][0].line}", text) for i, text in kept]
    out = write_squad(args.out, paragraphs, [])
    settings = {"model": str(args.model), "prompts": str(args.prompts), "prompt_count": len(prompts),
                "per_prompt": args.per_prompt, "top_p": args.top_p, "temperature": args.temperature,
                "min_words": args.min_words, "max_words": args.max_words, "max_new_tokens": args.max_new_tokens,
                "ngram": args.ngram, "near_duplicate": args.near_duplicate, "seed": args.seed, "dtype": args.dtype,
                "source": [str(s) for s in args.source], "source_texts": source.texts if source else 0,
                "source_ngrams": len(source.grams) if source else 0}
    write_json_atomic(counts_path(out), {**counts, "settings": settings})
    drops = ", ".join(f"{counts[r]} {r.replace('_', ' ')}" for r in REASONS)
    print(f"kept {counts['kept']} of {counts['sampled']} sampled paragraphs ({drops}; {counts['cut_at_max_words']} "
          f"cut at {args.max_words} words) from {len(prompts)} prompts, written to {args.out} (generated text)")
    return 0
