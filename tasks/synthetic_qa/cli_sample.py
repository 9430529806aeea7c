"""`megazoo task synthetic_qa sample --data ANSWERS.json --checkpoint QG --out FILE.json
[--samples N] [--top-k K] [--top-p P] [--dtype fp32|bf16] [--qg-input paragraph|sentence]`: N
sampled questions per answer (questions.py). Every question of the data with an answer is a
candidate (its question text is ignored), so the answers stage's file or any SQuAD file can be used.
The prompts are in the --qg-input layout (prompts.py; the paragraph with the answer marked by
default); a generator whose training pairs say another layout is refused before it is loaded
(questions.check_qg_input). The counts, with the layout, go to FILE.counts.json (a declared output too).
"""

from __future__ import annotations

import argparse

from megazoo.core.argtypes import float_in, int_in, probability
from megazoo.core.fs import input_arg, output_arg
from megazoo.tasks.synthetic_qa.cli_common import BATCH, MAX_BATCH, SEED, counts_path
from megazoo.tasks.synthetic_qa.prompts import QG_INPUTS

PROG = "megazoo task synthetic_qa sample"
MAX_SAMPLES = 100  # questions per answer
MAX_TOP_K = 1_000_000  # above any vocabulary: the same as off
MAX_NEW_TOKENS = 2048


def add_arguments(parser: argparse.ArgumentParser) -> None:
    input_arg(parser, "--data", kind="file", required=True, help="a SQuAD-format file of candidate answers")
    input_arg(parser, "--checkpoint", required=True, help="the question generator: a decoder checkpoint "
                                                          "(sft training checkpoint or import-hf folder)")
    output_arg(parser, "--out", required=True, also=lambda p: [counts_path(p)],
               help="the generated questions, SQuAD-format JSON file (counts go to FILE.counts.json)")
    parser.add_argument("--samples", type=int_in(1, MAX_SAMPLES), default=2,
                        help=f"questions sampled per answer (default 2; 1-{MAX_SAMPLES})")
    parser.add_argument("--top-k", type=int_in(0, MAX_TOP_K), default=0, help="0: off")
    parser.add_argument("--top-p", type=probability, default=0.9, help="nucleus sampling (default 0.9)")
    parser.add_argument("--temperature", type=float_in(1e-3, 100.0), default=1.0, help="0.001-100 (default 1)")
    parser.add_argument("--max-new-tokens", type=int_in(1, MAX_NEW_TOKENS), default=32,
                        help=f"1-{MAX_NEW_TOKENS} (default 32)")
    parser.add_argument("--batch", type=BATCH, default=32, help=f"sequences per generate call (1-{MAX_BATCH})")
    parser.add_argument("--seed", type=SEED, default=0)
    parser.add_argument("--dtype", choices=("fp32", "bf16"), default="fp32",
                        help="bf16 halves the sampling time on CPUs with native bf16 (avx512_bf16/amx) and GPUs")
    parser.add_argument("--qg-input", choices=QG_INPUTS, default=QG_INPUTS[0],
                        help="the prompt layout the generator was trained on (the data stage's --qg-input): "
                             "paragraph, the paragraph with the answer marked (default), or sentence")


def run(args) -> int:
    from megazoo.core.fs import write_json_atomic
    from megazoo.tasks.synthetic_qa.cli_common import need_file
    from megazoo.tasks.synthetic_qa.questions import (check_qg_input, load_decoder, prompts_cut, prompts_of,
                                                      sample_questions, write_questions)
    from megazoo.tasks.synthetic_qa.squad import read_squad, write_squad

    f = read_squad(need_file(args.data, "--data"))
    answers = [q for q in f.questions if q.answers]
    if not answers:
        raise ValueError(f"{args.data}: holds no answers to ask about")
    qg_input = getattr(args, "qg_input", QG_INPUTS[0])
    trained = check_qg_input(args.checkpoint, qg_input)
    import torch

    model, tokenizer = load_decoder(args.checkpoint, torch.bfloat16 if args.dtype == "bf16" else None)
    prompts = prompts_of(answers, qg_input)
    cut = prompts_cut(tokenizer, model, prompts, args.max_new_tokens)
    sampled = sample_questions(model, tokenizer, prompts, args.samples, args.top_k, args.top_p,
                               args.temperature, args.max_new_tokens, args.batch, args.seed, progress=True)
    questions, counts = write_questions(answers, sampled)
    out = write_squad(args.out, f.paragraphs, questions)
    write_json_atomic(counts_path(out), {**counts, "qg_input": qg_input, "qg_input_trained": trained,
                                         "prompts_cut": cut})
    if cut:
        print(f"note: {cut} of {len(prompts)} prompts were longer than the generator's positions leave room for; "
              f"their start was cut (the answer line kept)")
    print(f"{counts['questions']} questions ({counts['sampled']} sampled, {counts['empty']} empty, "
          f"{counts['not_question']} not questions, {counts['repeated']} repeated) for {counts['answers']} answers "
          f"written to {args.out}")
    return 0
