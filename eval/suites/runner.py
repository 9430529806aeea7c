"""Run one named task of the suites."""

from __future__ import annotations

from megazoo.eval.lm import LanguageModel
from megazoo.eval.suites.lm_tasks import evaluate_lambada, evaluate_wikitext
from megazoo.eval.suites.multiple_choice import MC_TASKS, evaluate_multiple_choice, load_questions, sample_shots

TASKS = ["lambada", "wikitext", *MC_TASKS]


def run_task(lm: LanguageModel, name: str, path, num_fewshot: int = 0, fewshot_path=None, limit: int | None = None,
             batch_size: int = 8, seed: int = 1234, progress: bool = False) -> dict:
    if name == "lambada":
        return evaluate_lambada(lm, path, batch_size, limit, progress)
    if name == "wikitext":
        return evaluate_wikitext(lm, path, batch_size=batch_size, progress=progress)
    if name not in MC_TASKS:
        raise ValueError(f"unknown task {name!r}; known tasks: {', '.join(TASKS)}")
    questions = load_questions(name, path, limit)
    shots = []
    if num_fewshot:
        if fewshot_path is None:
            raise ValueError(f"{name}: {num_fewshot}-shot evaluation needs a few-shot file (the task's train split)")
        shots = sample_shots(load_questions(name, fewshot_path), num_fewshot, seed)
    return evaluate_multiple_choice(lm, questions, shots, batch_size, progress)
