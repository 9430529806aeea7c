"""Question generation (Puri et al. stage 2): a decoder fine-tuned on (context, answer) ->
question writes `samples` questions per answer by sampling (top-k / top-p), the overgeneration
the roundtrip filter then prunes.

The decoder is any GPT/Llama checkpoint megazoo loads (the sft training checkpoint of recipe
synthetic_qa-qg, an import-hf folder) with its tokenizer; prompts are prompts.qg_input_prompt in
the layout the generator was trained on (`--qg-input paragraph|sentence`: the data stage records it
in every qg.jsonl row, and recorded_qg_input finds it again from the generator's run), the
continuation is cut at the first line end or question mark (prompts.clean_question).
"""

from __future__ import annotations

import json
from pathlib import Path

from megazoo.core.verbosity import shows_progress
from megazoo.tasks.synthetic_qa.prompts import ANSWER_OPEN, QG_INPUTS, clean_question, qg_input_prompt
from megazoo.tasks.synthetic_qa.squad import Question


def load_decoder(checkpoint, dtype=None):
    """(model, Hugging Face tokenizer) of a decoder checkpoint in one process, through the
    task-evaluation kit (a training run or its checkpoints/, an import-hf or a Hugging Face folder);
    dtype None: the checkpoint's (fp32), else the weights cast to it (bf16 sampling)."""
    from megazoo.eval.taskkit import load_decoder as load

    model, tokenizer = load(checkpoint, use="question generation")
    return (model if dtype is None else model.to(dtype)), tokenizer


def prompt_room(model, max_new_tokens: int) -> int | None:
    """The most prompt tokens that leave `max_new_tokens` positions in the model (its cfg.seq_length);
    None when the model has no such config."""
    chunk = model[0] if isinstance(model, (list, tuple)) else model
    seq = getattr(getattr(chunk, "cfg", None), "seq_length", None)
    return max(1, seq - max_new_tokens) if isinstance(seq, int) and seq > 0 else None


def prompts_cut(tokenizer, model, prompts: list[str], max_new_tokens: int) -> int:
    """How many of `prompts` are longer than prompt_room (sample_questions keeps their end)."""
    room = prompt_room(model, max_new_tokens)
    return 0 if room is None else sum(len(tokenizer(p)["input_ids"]) > room for p in prompts)


def sample_questions(model, tokenizer, prompts: list[str], samples: int, top_k: int = 0, top_p: float = 0.9,
                     temperature: float = 1.0, max_new_tokens: int = 32, batch: int = 32,
                     seed: int = 0, progress: bool = False) -> list[list[str]]:
    """`samples` cleaned questions per prompt (sampled; the same seed gives the same questions).
    Prompts are batched by token length, so a batch pads little (the prefill is most of the cost). A
    prompt longer than the model's positions leave room for (prompt_room) keeps its end, as the sft
    training's `truncate: left` does: the "Answer:" line and "Question:" stay."""
    from tqdm import tqdm

    from megazoo.zoo.generate import generate

    flat = [p for p in prompts for _ in range(samples)]
    room = prompt_room(model, max_new_tokens)
    ids = [tokenizer(p)["input_ids"][-room:] if room else tokenizer(p)["input_ids"] for p in flat]
    order = sorted(range(len(ids)), key=lambda k: len(ids[k]))  # batches of like lengths: little left padding
    eos = tokenizer.eos_token_id
    texts = [""] * len(ids)
    bar = tqdm(total=len(ids), desc="questions", unit="q", disable=not shows_progress(progress))
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


def prompts_of(answers: list, qg_input: str = QG_INPUTS[0]) -> list[str]:
    return [qg_input_prompt(qg_input, a.context, a.answers[0][1], a.answers[0][0]) for a in answers]


def recorded_qg_input(checkpoint) -> tuple[str | None, str]:
    """(the prompt layout a question generator was trained on, where that was read) or (None, why not
    known). Read from the training run of `checkpoint` (the run folder, its checkpoints/ or one
    iter_*): its config.yaml's data.path, a qg.jsonl whose first pair says "qg_input" (the data stage
    writes it) or holds the answer marker (paragraph). An import-hf folder or a file without either
    gives None: nothing to check against."""
    import yaml

    path = Path(checkpoint).resolve()
    config = next((d / "config.yaml" for d in (path, path.parent, path.parent.parent) if (d / "config.yaml").is_file()),
                  None)
    if config is None:
        return None, "no training run config.yaml"
    try:
        data = (yaml.safe_load(config.read_text(encoding="utf-8")) or {}).get("data") or {}
    except (yaml.YAMLError, UnicodeDecodeError, AttributeError):
        return None, f"{config} is not readable"
    pairs = Path(str(data.get("path") or ""))
    pairs = pairs / "train.jsonl" if pairs.is_dir() else pairs
    if not str(data.get("path") or "") or not pairs.is_file():
        return None, "its training pairs are not there"
    with open(pairs, encoding="utf-8", errors="replace") as f:
        first = next((line for line in f if line.strip()), "")
    try:
        row = json.loads(first)
    except json.JSONDecodeError:
        return None, f"{pairs} is not JSON lines"
    if not isinstance(row, dict):
        return None, f"{pairs} holds no pairs"
    if row.get("qg_input") in QG_INPUTS:
        return row["qg_input"], f"{pairs}: \"qg_input\": \"{row['qg_input']}\""
    if ANSWER_OPEN in str(row.get("prompt", "")):
        return "paragraph", f"{pairs}: its prompts mark the answer with {ANSWER_OPEN}"
    return None, f"{pairs} does not say"


def check_qg_input(checkpoint, qg_input: str) -> str:
    """Refuse (ValueError, one line) sampling with prompts of another layout than the generator's
    training pairs; returns what was found, for the record."""
    trained, where = recorded_qg_input(checkpoint)
    if trained is not None and trained != qg_input:
        raise ValueError(f"--qg-input {qg_input}: the question generator {checkpoint} was trained on {trained} "
                         f"prompts ({where}); sample with --qg-input {trained}, or train the generator on the pairs "
                         f"of `megazoo task synthetic_qa data OUT --qg-input {qg_input}`")
    return trained or "unknown"
