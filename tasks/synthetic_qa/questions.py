"""Question generation (Puri et al. stage 2): a decoder fine-tuned on (context, answer) ->
question writes `samples` questions per answer by sampling (top-k / top-p), the overgeneration
the roundtrip filter then prunes.

The decoder is any GPT/Llama checkpoint megazoo loads (the sft training checkpoint of recipe
synthetic_qa-qg, an import-hf folder) with its tokenizer; prompts are prompts.qg_prompt, the
continuation is cut at the first line end or question mark (prompts.clean_question).
"""

from __future__ import annotations

from megazoo.tasks.synthetic_qa.prompts import clean_question, qg_prompt
from megazoo.tasks.synthetic_qa.squad import Question


def load_decoder(checkpoint, dtype=None):
    """(model, Hugging Face tokenizer) of a decoder checkpoint in one process, through the
    task-evaluation kit (a training run or its checkpoints/, an import-hf or a Hugging Face folder);
    dtype None: the checkpoint's (fp32), else the weights cast to it (bf16 sampling)."""
    from megazoo.eval.taskkit import load_decoder as load

    model, tokenizer = load(checkpoint, use="question generation")
    return (model if dtype is None else model.to(dtype)), tokenizer


def sample_questions(model, tokenizer, prompts: list[str], samples: int, top_k: int = 0, top_p: float = 0.9,
                     temperature: float = 1.0, max_new_tokens: int = 32, batch: int = 32,
                     seed: int = 0, progress: bool = False) -> list[list[str]]:
    """`samples` cleaned questions per prompt (sampled; the same seed gives the same questions).
    Prompts are batched by token length, so a batch pads little (the prefill is most of the cost)."""
    from tqdm import tqdm

    from megazoo.zoo.generate import generate

    flat = [p for p in prompts for _ in range(samples)]
    ids = [tokenizer(p)["input_ids"] for p in flat]
    order = sorted(range(len(ids)), key=lambda k: len(ids[k]))  # batches of like lengths: little left padding
    eos = tokenizer.eos_token_id
    texts = [""] * len(ids)
    bar = tqdm(total=len(ids), desc="questions", unit="q", disable=not progress)
    for i in range(0, len(ids), batch):
        rows = order[i:i + batch]
        out = generate(model, [ids[k] for k in rows], max_new_tokens, do_sample=True, top_k=top_k, top_p=top_p,
                       temperature=temperature, eos_token_id=eos, pad_token_id=tokenizer.pad_token_id or eos,
                       stop_strings=["?", "\n"], tokenizer=tokenizer, seed=seed + i)
        for k, o in zip(rows, out):
            texts[k] = clean_question(tokenizer.decode(o, skip_special_tokens=True))
        bar.update(len(rows))
    bar.close()
    return [texts[k * samples:(k + 1) * samples] for k in range(len(prompts))]


def write_questions(answers: list, sampled: list[list[str]]) -> tuple[list, dict]:
    """SQuAD questions (id ANSWER_ID-qJ, the answer kept) of the samples; empty ones, statements
    (no question mark: the decoder copied the context) and repeats of one answer's question are
    dropped. Returns (questions, counts)."""
    out, counts = [], {"answers": len(answers), "sampled": 0, "empty": 0, "not_question": 0, "repeated": 0}
    for ans, qs in zip(answers, sampled):
        seen = set()
        for j, q in enumerate(qs):
            counts["sampled"] += 1
            if not q.rstrip("?").strip():
                counts["empty"] += 1
                continue
            if not q.endswith("?"):
                counts["not_question"] += 1
                continue
            if q.lower() in seen:
                counts["repeated"] += 1
                continue
            seen.add(q.lower())
            out.append(Question(f"{ans.id}-q{j}", q, ans.context, list(ans.answers), paragraph=ans.paragraph,
                                extra={"answer_id": ans.id}))
    counts["questions"] = len(out)
    return out, counts


def prompts_of(answers: list) -> list[str]:
    return [qg_prompt(a.context, a.answers[0][1], a.answers[0][0]) for a in answers]
