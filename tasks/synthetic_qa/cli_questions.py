"""`megazoo task synthetic_qa questions --data ANSWERS.json --checkpoint QG --out FILE.json
[--samples N] [--top-k K] [--top-p P] [--dtype fp32|bf16]`: N sampled questions per answer
(questions.py). Every question of the data with an answer is a candidate (its question text is
ignored), so the answers stage's file or any SQuAD file can be used. The counts go to
FILE.counts.json.
"""

from __future__ import annotations

import argparse

from megazoo.core.argtypes import nonnegative_int, positive_float, positive_int, probability

PROG = "megazoo task synthetic_qa questions"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", required=True, help="a SQuAD-format file of candidate answers")
    parser.add_argument("--checkpoint", required=True, help="the question generator: a decoder checkpoint "
                                                            "(sft training checkpoint or import-hf folder)")
    parser.add_argument("--out", required=True, help="the generated questions, SQuAD-format JSON")
    parser.add_argument("--samples", type=positive_int, default=2, help="questions sampled per answer (default 2)")
    parser.add_argument("--top-k", type=nonnegative_int, default=0, help="0: off")
    parser.add_argument("--top-p", type=probability, default=0.9, help="nucleus sampling (default 0.9)")
    parser.add_argument("--temperature", type=positive_float, default=1.0)
    parser.add_argument("--max-new-tokens", type=positive_int, default=32)
    parser.add_argument("--batch", type=positive_int, default=32, help="sequences per generate call")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dtype", choices=("fp32", "bf16"), default="fp32",
                        help="bf16 halves the sampling time on CPUs with native bf16 (avx512_bf16/amx) and GPUs")


def run(args) -> int:
    from megazoo.core.fs import write_json_atomic
    from megazoo.tasks.synthetic_qa.cli_common import errors, fail, need_file
    from megazoo.tasks.synthetic_qa.questions import load_decoder, prompts_of, sample_questions, write_questions
    from megazoo.tasks.synthetic_qa.squad import read_squad, write_squad

    try:
        f = read_squad(need_file(args.data, "--data"))
        answers = [q for q in f.questions if q.answers]
        if not answers:
            raise ValueError(f"{args.data}: holds no answers to ask about")
        import torch

        model, tokenizer = load_decoder(args.checkpoint, torch.bfloat16 if args.dtype == "bf16" else None)
        sampled = sample_questions(model, tokenizer, prompts_of(answers), args.samples, args.top_k, args.top_p,
                                   args.temperature, args.max_new_tokens, args.batch, args.seed, progress=True)
        questions, counts = write_questions(answers, sampled)
        out = write_squad(args.out, f.paragraphs, questions)
        write_json_atomic(out.with_name(out.stem + ".counts.json"), counts)
    except errors() as e:
        return fail(PROG, e)
    print(f"{counts['questions']} questions ({counts['sampled']} sampled, {counts['empty']} empty, "
          f"{counts['not_question']} not questions, {counts['repeated']} repeated) for {counts['answers']} answers "
          f"written to {args.out}")
    return 0
