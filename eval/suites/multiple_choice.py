"""Multiple-choice tasks scored by log-likelihood, with the prompts of lm-eval / the GPT-3 paper.

For each example the model scores every choice as a continuation of the prompt; `acc` takes the
highest total log-likelihood, `acc_norm` the highest per character of the choice itself, without
the leading space that joins it to the prompt (lm-eval 0.4's `len(choice)`, where the scored
continuation is " " + choice). Few-shot examples are drawn per question (see fewshot.py).
WinoGrande uses "partial" scoring: the context differs per option (the sentence up to the blank,
filled in) and the continuation (the rest of the sentence) is the same, so its acc_norm equals
its acc (lm-eval reports only acc for WinoGrande).

`acc_calibrated` (RACE) is GPT-3's unconditional normalisation (Brown et al. 2020, section 2.4: ARC,
OpenBookQA and RACE): each choice scores log p(choice | prompt) - log p(choice | "Answer:"), so a
choice that is likely whatever the article says (a short or common phrase) loses its head start.
A task opts in through its question builder (`Question.unconditional`); the unconditional term
has no few-shot examples in front of it, and each distinct choice is scored once per evaluation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from megazoo.eval import readers as R
from megazoo.eval.lm import LanguageModel
from megazoo.eval.scoring import loglikelihood
from megazoo.eval.suites.fewshot import draw_shots
from megazoo.eval.task_names import RACE


@dataclass
class Question:
    contexts: list[str]  # one per choice (equal except for WinoGrande)
    continuations: list[str]
    gold: int
    # the context of the unconditional term of acc_calibrated (GPT-3's answer_context), or None
    unconditional: str | None = None


# GPT-3's answer_context for the tasks it calibrates; megazoo has readers for RACE of them (ARC and
# OpenBookQA would set the same field in their builders)
ANSWER_CONTEXT = "Answer:"


def _boolq(d):
    prompt = f"{d.passage}\nQuestion: {d.question}?\nAnswer:"
    return Question([prompt] * 2, [" no", " yes"], int(d.answer))


def _race(d):
    q = d.question
    if "_" in q:  # a gap to fill: the option completes the sentence
        head = q.split("_")[0].rstrip()
        prompt = f"Article: {d.article}\n\n{head}"
        return Question([prompt] * len(d.options), [" " + o for o in d.options], d.label, ANSWER_CONTEXT)
    prompt = f"Article: {d.article}\n\nQuestion: {q}\nAnswer:"
    return Question([prompt] * len(d.options), [" " + o for o in d.options], d.label, ANSWER_CONTEXT)


def _piqa(d):
    return Question([f"Question: {d.goal}\nAnswer:"] * 2, [" " + s for s in d.solutions], d.label)


def _hellaswag_clean(text: str) -> str:
    text = text.strip().replace(" [title]", ". ")
    while "[" in text and "]" in text[text.index("["):]:
        a = text.index("[")
        b = text.index("]", a)
        text = text[:a] + text[b + 1:]
    return text.replace("  ", " ")


def _hellaswag(d):
    ctx = d.ctx_a + " " + d.ctx_b.capitalize()
    prompt = _hellaswag_clean(d.activity_label + ": " + ctx)
    return Question([prompt] * len(d.endings), [" " + _hellaswag_clean(e) for e in d.endings], d.label)


def _winogrande(d):
    blank = d.sentence.index("_")
    rest = " " + d.sentence[blank + 1:].strip()
    contexts = [d.sentence[:blank] + o for o in d.options]
    return Question(contexts, [rest] * len(d.options), d.label)


def _anli(d):
    prompt = f"{d.premise}\nQuestion: {d.hypothesis} True, False, or Neither?\nAnswer:"
    return Question([prompt] * 3, [" True", " Neither", " False"], d.label)


def _hans(d):
    prompt = f"{d.premise}\nQuestion: {d.hypothesis} True or False?\nAnswer:"
    return Question([prompt] * 2, [" True", " False"], d.label)


def _wic(d):
    # the word as written in sentence 1 (its character span), not the lemma: lm-eval's
    # sentence1[start1:end1]; "carries" stays "carries" where the lemma would say "carry"
    word = d.sentence1[d.start1:d.end1]
    prompt = (f"Sentence 1: {d.sentence1}\nSentence 2: {d.sentence2}\nQuestion: Is the word '{word}' used "
              f"in the same way in the two sentences above?\nAnswer:")
    return Question([prompt] * 2, [" no", " yes"], int(d.label))


# name -> (reader, question builder); RACE is GPT-3's RACE, race_gpt3 (not lm-eval's `race`: task_names.py)
MC_TASKS: dict[str, tuple[Callable, Callable]] = {
    "boolq": (R.read_boolq, _boolq),
    RACE: (R.read_race, _race),
    "piqa": (R.read_piqa, _piqa),
    "hellaswag": (R.read_hellaswag, _hellaswag),
    "winogrande": (R.read_winogrande, _winogrande),
    "anli": (R.read_anli, _anli),
    "hans": (R.read_hans, _hans),
    "wic": (R.read_wic, _wic),
}


def fewshot_prefix(shots: list[Question]) -> str:
    """k solved examples, each its prompt and gold answer, separated by blank lines."""
    return "".join(q.contexts[q.gold] + q.continuations[q.gold] + "\n\n" for q in shots)


def choice_length(continuation: str) -> int:
    """The characters acc_norm divides by: the choice without the space joining it to the prompt."""
    return len(continuation[1:] if continuation.startswith(" ") else continuation)


def unconditional_scores(lm: LanguageModel, questions: list[Question], batch_size: int = 8,
                         progress: bool = False) -> dict[tuple[str, str], float]:
    """log p(choice | question.unconditional) for every (context, choice) pair the calibrated
    questions need, each distinct pair scored once (RACE repeats many options across questions)."""
    pairs = sorted({(q.unconditional, x) for q in questions if q.unconditional is not None for x in q.continuations})
    scores = loglikelihood(lm, pairs, batch_size, progress)
    return {pair: s for pair, (s, _) in zip(pairs, scores)}


def evaluate_multiple_choice(lm: LanguageModel, questions: list[Question], shots=(), batch_size: int = 8,
                             progress: bool = False) -> dict:
    """`shots`: one list of solved examples per question (draw_shots), or one list for all.
    Metrics: acc and acc_norm; acc_calibrated too when the questions carry an unconditional
    context (RACE)."""
    shots = list(shots)
    if not shots or isinstance(shots[0], Question):
        shots = [shots] * len(questions)
    if len(shots) != len(questions):
        raise ValueError(f"{len(shots)} few-shot lists for {len(questions)} questions")
    requests = [(fewshot_prefix(s) + c, x) for q, s in zip(questions, shots)
                for c, x in zip(q.contexts, q.continuations)]
    scores = loglikelihood(lm, requests, batch_size, progress)
    calibrated = any(q.unconditional is not None for q in questions)
    unconditional = unconditional_scores(lm, questions, batch_size, progress) if calibrated else {}
    correct = correct_norm = correct_cal = 0
    pos = 0
    predictions = []
    for q in questions:
        n = len(q.continuations)
        ll = [s for s, _ in scores[pos: pos + n]]
        pos += n
        norm = [v / max(1, choice_length(x)) for v, x in zip(ll, q.continuations)]
        pred = max(range(n), key=ll.__getitem__)
        pred_norm = max(range(n), key=norm.__getitem__)
        correct += pred == q.gold
        correct_norm += pred_norm == q.gold
        row = {"loglikelihoods": ll, "prediction": pred, "prediction_norm": pred_norm, "gold": q.gold}
        if q.unconditional is not None:
            base = [unconditional[(q.unconditional, x)] for x in q.continuations]
            cal = [v - b for v, b in zip(ll, base)]
            row["unconditional"] = base
            row["prediction_calibrated"] = max(range(n), key=cal.__getitem__)
            correct_cal += row["prediction_calibrated"] == q.gold
        predictions.append(row)
    total = max(1, len(questions))
    out = {"acc": correct / total, "acc_norm": correct_norm / total, "n": len(questions)}
    if calibrated:
        out["acc_calibrated"] = correct_cal / total
    return {**out, "predictions": predictions}


def load_questions(name: str, path, limit: int | None = None) -> list[Question]:
    if name not in MC_TASKS:
        raise ValueError(f"unknown multiple-choice task {name!r}; known: {', '.join(MC_TASKS)}")
    reader, build = MC_TASKS[name]
    docs = reader(path)
    return [build(d) for d in docs[:limit]]


def sample_shots(pool: list[Question], k: int, num_questions: int, seed: int = 1234,
                 exclude_question: bool = False) -> list[list[Question]]:
    """k few-shot examples for each question, drawn per question (see fewshot.py)."""
    return draw_shots(pool, k, num_questions, seed, exclude_question)
